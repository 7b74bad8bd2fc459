"""The run directory contract (see shared/DESIGN.md): every component finds its files here."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from tfpilot.errors import ConfigError

__all__ = ["RunDir"]


@dataclasses.dataclass(frozen=True)
class RunDir:
    root: Path

    @classmethod
    def at(cls, path: str | Path) -> RunDir:
        return cls(Path(path))

    @classmethod
    def existing(cls, path: str | Path) -> RunDir:
        """A run directory that must already hold a resolved config (for evaluate/export/...)."""
        run = cls(Path(path))
        if not run.config_path.is_file():
            raise ConfigError(
                f"`{path}` is not a tfpilot run directory (no config.yaml inside); "
                "expected runs/<name> as written by `tfpilot train` or `tfpilot run`"
            )
        return run

    config_path = property(lambda self: self.root / "config.yaml")
    logs = property(lambda self: self.root / "logs")
    train_logs = property(lambda self: self.root / "logs" / "train")
    validation_logs = property(lambda self: self.root / "logs" / "validation")
    checkpoints = property(lambda self: self.root / "checkpoints")
    model_base = property(lambda self: self.root / "model")
    exports = property(lambda self: self.root / "exports")
    parity_path = property(lambda self: self.root / "exports" / "parity.json")
    keras_path = property(lambda self: self.root / "exports" / "model.keras")
    metrics_path = property(lambda self: self.root / "metrics.json")
    findings_path = property(lambda self: self.root / "findings.json")
    reference_stats_path = property(lambda self: self.root / "reference_stats.json")
    data_report_path = property(lambda self: self.root / "data_report.json")
    history_path = property(lambda self: self.root / "history.json")
    profile_dir = property(lambda self: self.root / "profile")
    report_path = property(lambda self: self.root / "report.html")
    preprocessing_path = property(lambda self: self.root / "preprocessing.json")
    final_checkpoint = property(lambda self: self.root / "checkpoints" / "final")

    def versions(self) -> list[int]:
        """Integer version directories under model/, ascending (others are ignored, as TF Serving does)."""
        if not self.model_base.is_dir():
            return []
        return sorted(int(p.name) for p in self.model_base.iterdir() if p.is_dir() and re.fullmatch(r"\d+", p.name))

    def latest_version_dir(self) -> Path | None:
        versions = self.versions()
        return self.model_base / str(versions[-1]) if versions else None
