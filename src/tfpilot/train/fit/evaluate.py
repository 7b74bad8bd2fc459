"""`tfpilot evaluate RUN` for a tfpilot.fit run: the saved model's own `evaluate` on its kept
validation batches (or on batches written by tf.data.Dataset.save)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tensorflow as tf

from tfpilot.errors import ConfigError, DataError
from tfpilot.rundir import RunDir
from tfpilot.train.fit.artifacts import first_line, load_fit_model, read_fit_spec

__all__ = ["evaluate_fit_run"]


def evaluate_fit_run(
    run: RunDir, *, data_path: str | Path | None = None, extra_modules: list[str] | None = None
) -> dict[str, Any]:
    spec = read_fit_spec(run)
    if data_path is None:
        if not spec.get("validation_data"):
            raise ConfigError(
                f"run `{run.root}` was trained by tfpilot.fit without validation data to evaluate on; pass --data DIR "
                "(batches written by tf.data.Dataset.save)"
            )
        data_path = run.root / spec["validation_data"]
    if not Path(data_path).exists():
        raise ConfigError(f"`{data_path}` does not exist; expected a directory written by tf.data.Dataset.save")
    try:
        dataset = tf.data.Dataset.load(str(data_path))
    except Exception as exc:
        raise DataError(
            f"cannot read `{data_path}` as a saved tf.data.Dataset ({first_line(exc)}); expected the directory that "
            "`dataset.save(DIR)` writes from batched (features, labels) elements, as the model was trained on"
        ) from None
    model = load_fit_model(run, extra_modules=extra_modules, compile=True)
    if not getattr(model, "compiled", False):
        raise ConfigError(
            f"run `{run.root}`'s model has no loss Keras can restore (a lambda or an unregistered function); register "
            "it with @keras.saving.register_keras_serializable() or evaluate in Python"
        )
    batches = int(dataset.cardinality())
    metrics = model.evaluate(dataset, verbose=0, return_dict=True)
    return {**{k: float(v) for k, v in metrics.items()}, "batches": batches}
