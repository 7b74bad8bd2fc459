"""Hooks into the outer loop (Orbit style): every method is a no-op by default.

The CLI's progress bar, the profiler window and user extensions are hooks; the trainer itself
never prints.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TrainHook", "HookList"]


class TrainHook:
    def on_train_begin(self, *, epochs: int, steps_per_epoch: int, initial_epoch: int, initial_step: int) -> None: ...

    def on_epoch_begin(self, *, epoch: int) -> None: ...

    def before_execution(self, *, step: int) -> None:
        """Called before each compiled call (which runs up to steps_per_execution steps)."""

    def after_execution(self, *, step: int, steps_run: int) -> None: ...

    def next_boundary(self, *, step: int) -> int | None:
        """The next global step (> `step`) at which a compiled call must end for this hook (a
        profiling window's start or stop), or None. Calls run several steps; this keeps windows exact."""
        return None

    def on_step_logs(self, *, step: int, logs: dict[str, float]) -> None:
        """Called every `summary_every_steps` with running loss, metrics, learning rate, grad norm, steps/s."""

    def on_epoch_end(self, *, epoch: int, logs: dict[str, float]) -> None: ...

    def on_train_end(self, *, logs: dict[str, Any]) -> None: ...


class HookList(TrainHook):
    def __init__(self, hooks: list[TrainHook] | None = None) -> None:
        self.hooks = list(hooks or [])

    def __getattribute__(self, name: str):
        if name.startswith(("on_", "before_", "after_")):
            hooks = object.__getattribute__(self, "hooks")

            def dispatch(**kwargs):
                for hook in hooks:
                    getattr(hook, name)(**kwargs)

            return dispatch
        return object.__getattribute__(self, name)

    def next_boundary(self, *, step: int) -> int | None:
        boundaries = [b for hook in self.hooks if (b := hook.next_boundary(step=step)) is not None and b > step]
        return min(boundaries, default=None)
