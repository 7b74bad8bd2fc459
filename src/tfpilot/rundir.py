"""The run directory contract (see shared/DESIGN.md): every component finds its files here."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tfpilot.errors import ConfigError
from tfpilot.savedmodel.versions import latest_version_dir, version_numbers

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

    @property
    def config_path(self) -> Path:
        """The resolved config, every default filled in."""
        return self.root / "config.yaml"

    @property
    def logs(self) -> Path:
        """TensorBoard root."""
        return self.root / "logs"

    @property
    def train_logs(self) -> Path:
        return self.root / "logs" / "train"

    @property
    def validation_logs(self) -> Path:
        return self.root / "logs" / "validation"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def model_base(self) -> Path:
        """A TF Serving base path: one integer directory per version."""
        return self.root / "model"

    @property
    def exports(self) -> Path:
        return self.root / "exports"

    @property
    def parity_path(self) -> Path:
        return self.root / "exports" / "parity.json"

    @property
    def keras_path(self) -> Path:
        return self.root / "exports" / "model.keras"

    @property
    def metrics_path(self) -> Path:
        return self.root / "metrics.json"

    @property
    def findings_path(self) -> Path:
        return self.root / "findings.json"

    @property
    def reference_stats_path(self) -> Path:
        return self.root / "reference_stats.json"

    @property
    def history_path(self) -> Path:
        return self.root / "history.json"

    @property
    def profile_dir(self) -> Path:
        return self.root / "profile"

    @property
    def profile_summary_path(self) -> Path:
        return self.root / "profile" / "summary.json"

    @property
    def report_path(self) -> Path:
        return self.root / "report.html"

    @property
    def preprocessing_path(self) -> Path:
        return self.root / "preprocessing.json"

    @property
    def final_checkpoint(self) -> Path:
        return self.root / "checkpoints" / "final"

    @property
    def drift_path(self) -> Path:
        """The last `tfpilot monitor drift` result, shown by the report."""
        return self.root / "drift.json"

    @property
    def blessing_path(self) -> Path:
        """The record `tfpilot validate` writes and `tfpilot push` requires."""
        return self.root / "blessing.json"

    @property
    def data_report_path(self) -> Path:
        """The data audit written before training (`tfpilot data inspect` shows it)."""
        return self.root / "data_report.json"

    @property
    def fit_dir(self) -> Path:
        """What `tfpilot.fit` keeps so evaluate/export work on the run later: the model, its data's spec."""
        return self.root / "fit"

    @property
    def fit_model_path(self) -> Path:
        return self.root / "fit" / "model.keras"

    @property
    def fit_spec_path(self) -> Path:
        return self.root / "fit" / "spec.json"

    @property
    def fit_validation_path(self) -> Path:
        """The validation batches as tf.data.Dataset.save wrote them (what `tfpilot evaluate` reads)."""
        return self.root / "fit" / "validation"

    @property
    def fit_sample_path(self) -> Path:
        """A few training rows (npz, one array per serving input) that export verifies with."""
        return self.root / "fit" / "sample_features.npz"

    @property
    def fit_saved_model_path(self) -> Path:
        """A verified SavedModel written from the live model at the end of tfpilot.fit, when the
        .keras archive cannot be loaded again (a model Keras cannot rebuild from its config)."""
        return self.root / "fit" / "saved_model"

    def is_fit_run(self) -> bool:
        """Written by tfpilot.fit: fit/ always exists there (spec.json only when the model has a
        forward pass to serve), never in a `tfpilot train` run."""
        return self.fit_spec_path.is_file() or self.fit_dir.is_dir()

    def versions(self) -> list[int]:
        """Integer version directories under model/, ascending (others are ignored, as TF Serving does)."""
        return version_numbers(self.model_base)

    def latest_version_dir(self) -> Path | None:
        return latest_version_dir(self.model_base)
