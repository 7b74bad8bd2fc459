"""Turn a pipeline's labels into a standardised regression target.

Sources read labels as classes (sorted distinct values -> ids). For a regression the raw values
are the target instead. The model trains on (y - mean) / std with the mean and standard
deviation of the training split only (statistics of validation or test rows would leak into
training), and the serving signatures undo it, so clients get predictions in the target's own
units. The statistics live in preprocessing.json (`extra["target"]`), so `tfpilot evaluate` and
`tfpilot export` in a new process standardise exactly as training did.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfpilot.errors import ConfigError

__all__ = ["REGRESSION", "task_of", "target_stats", "make_regression", "apply_saved_task", "target_name"]

REGRESSION = "regression"


def task_of(preprocessor: Any) -> str:
    """`regression` for a regression run; `classification` otherwise (runs written before tasks existed)."""
    return str(preprocessor.extra.get("task", "classification"))


def target_stats(preprocessor: Any) -> tuple[float, float]:
    target = preprocessor.extra["target"]
    return float(target["mean"]), float(target["std"])


def target_name(config: Any) -> str:
    """The name the target is reported under: the label column, or `target` for arrays."""
    kind = str(getattr(config.kind, "value", config.kind))
    if kind == "csv":
        return str(config.csv.label_column)
    if kind == "text":
        return str(config.text.label_column)
    if kind == "tfrecord":
        return str(config.tfrecord.label_key)
    return "target"


def _values(pipeline: Any) -> np.ndarray:
    raw = pipeline.source.label_values
    if raw is None:
        raise ConfigError(
            "`model.task` is regression but this source gives class ids only (image folders); "
            "expected numeric label values, from a csv, text or arrays source"
        )
    try:
        values = np.asarray([float(str(v)) for v in np.asarray(raw, dtype=object).reshape(-1)], np.float64)
    except ValueError:
        raise ConfigError(
            "`model.task` is regression but some labels are not numbers; fix the label column or set "
            "`model.task: auto` to train a classifier"
        ) from None
    if not np.all(np.isfinite(values)):
        bad = int(np.sum(~np.isfinite(values)))
        raise ConfigError(f"{bad} regression target(s) are NaN or infinite; expected finite numbers in every row")
    return values


def make_regression(pipeline: Any, *, name: str) -> None:
    """Fit the target's mean/std on the training split and make the pipeline yield standardised targets."""
    values = _values(pipeline)
    train = values[pipeline.indices["train"]]
    mean = float(np.mean(train))
    # A constant target has no spread to learn; dividing by 1 keeps it finite and the error honest.
    std = float(np.std(train)) or 1.0
    pipeline.preprocessor.extra["task"] = REGRESSION
    pipeline.preprocessor.extra["target"] = {"name": name, "mean": mean, "std": std}
    _standardise(pipeline, values, mean, std, name)


def apply_saved_task(pipeline: Any) -> None:
    """A pipeline rebuilt from a run's preprocessing.json: standardise with the saved statistics."""
    if task_of(pipeline.preprocessor) != REGRESSION:
        return
    mean, std = target_stats(pipeline.preprocessor)
    _standardise(pipeline, _values(pipeline), mean, std, str(pipeline.preprocessor.extra["target"]["name"]))


def _standardise(pipeline: Any, values: np.ndarray, mean: float, std: float, name: str) -> None:
    pipeline.source.labels = ((values - mean) / std).astype(np.float32)
    # One "class": the single output unit, named after the target (export contract, metrics.json).
    pipeline.source.class_names = [name]
    pipeline.clear_cache()
