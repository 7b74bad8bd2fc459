"""Early stopping on a monitored metric, with state that survives a resume."""

from __future__ import annotations

import math

from tfpilot.config.schema import EarlyStoppingConfig

__all__ = ["EarlyStopping"]


class EarlyStopping:
    def __init__(self, config: EarlyStoppingConfig | None) -> None:
        self.config = config
        self.best = math.nan
        self.best_epoch = -1
        self.wait = 0

    @property
    def mode(self) -> str:
        if self.config is None:
            return "max"
        if self.config.mode != "auto":
            return self.config.mode
        from tfpilot.config.objectives import LOWER_IS_BETTER

        # Losses and errors (mae, rmse ...) improve downwards; accuracy, auc, r2 ... upwards.
        name = self.config.monitor.removeprefix("val_")
        return "min" if name.endswith("loss") or name in LOWER_IS_BETTER else "max"

    def improved(self, value: float) -> bool:
        if self.config is None:
            return False
        if math.isnan(self.best):
            return True
        delta = self.config.min_delta
        return value < self.best - delta if self.mode == "min" else value > self.best + delta

    def update(self, *, epoch: int, logs: dict[str, float]) -> tuple[bool, bool]:
        """Return (improved, should_stop)."""
        if self.config is None:
            return False, False
        if self.config.monitor not in logs:
            raise KeyError(self.config.monitor)
        value = logs[self.config.monitor]
        if self.improved(value):
            self.best, self.best_epoch, self.wait = value, epoch, 0
            return True, False
        self.wait += 1
        return False, self.wait >= self.config.patience

    def state(self) -> dict:
        return {"best": None if math.isnan(self.best) else self.best, "best_epoch": self.best_epoch, "wait": self.wait}

    def load(self, state: dict) -> None:
        self.best = math.nan if state.get("best") is None else float(state["best"])
        self.best_epoch = int(state.get("best_epoch", -1))
        self.wait = int(state.get("wait", 0))
