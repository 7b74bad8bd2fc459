"""Losses, metrics and class weights from config: `train.loss`, `train.metrics`, `train.class_weight`.

Names are checked when the config loads (tfpilot.config.objectives); this module builds the
objects once the task is known. Every head hands losses and metrics its tensors in Keras'
conventions for the task (Head.loss_space / Head.metric_space), so a Keras name means what it
means in `model.compile`:

- loss space: multiclass (class ids [batch], logits [batch, classes]); binary (0/1 [batch, 1],
  logit [batch, 1]); multilabel (multi-hot, logits); regression (standardised target and output,
  [batch, 1]). Cross-entropies are built with from_logits=True, since tfpilot models output logits.
- metric space: multiclass (one-hot, softmax probabilities); binary and multilabel (0/1,
  sigmoid probabilities); regression (target and prediction in the target's own units).

A `package.module:function` loss is called as function(y_true, y_pred) in loss space and returns
per-example losses; a custom metric is a function (y_true, y_pred) -> per-example values (averaged,
like Keras' MeanMetricWrapper) or a keras.metrics.Metric subclass, in metric space.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tfpilot.config.objectives import DEFAULT_METRICS, LOSSES, METRICS, canonical_loss, is_custom, metric_name
from tfpilot.errors import ConfigError
from tfpilot.findings import Finding, Severity

__all__ = ["task_name", "import_object", "build_loss", "build_metric", "class_weights"]

LossFn = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]


def task_name(head: Any) -> str:
    """The config's name for a head's task (`classification` heads are multiclass)."""
    return "multiclass" if head.task == "classification" else str(head.task)


def import_object(spec: str, *, key: str) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"`{key}` `{spec}`: cannot import module `{module_name}` ({exc}); make it importable "
            "(install the package or add its folder to PYTHONPATH)"
        ) from None
    found = getattr(module, attr, None)
    if found is None or not callable(found):
        raise ConfigError(f"`{key}` `{spec}`: `{module_name}` has no callable `{attr}`")
    return found


def _per_example(values: tf.Tensor, batch: tf.Tensor) -> tf.Tensor:
    values = tf.cast(values, tf.float32)
    if values.shape.rank == 0:
        # A function that already averaged: every example carries that mean.
        return tf.fill([batch], values)
    if values.shape.rank is not None and values.shape.rank > 1:
        values = tf.reduce_mean(values, axis=list(range(1, values.shape.rank)))
    return values


def _keras_loss(name: str, task: str, *, num_classes: int, label_smoothing: float) -> LossFn:
    smoothing = {"label_smoothing": label_smoothing} if label_smoothing else {}
    if name == "sparse_categorical_crossentropy":
        if label_smoothing:
            # Keras' sparse cross-entropy has no label smoothing; the one-hot form is the same loss.
            name = "categorical_crossentropy"
        else:
            sparse = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
            return lambda y, z: sparse(tf.cast(y, tf.int32), z)
    categorical: dict[str, Callable[[], Any]] = {
        "categorical_crossentropy": lambda: keras.losses.CategoricalCrossentropy(
            from_logits=True, reduction=None, **smoothing
        ),
        "categorical_focal_crossentropy": lambda: keras.losses.CategoricalFocalCrossentropy(
            from_logits=True, reduction=None, **smoothing
        ),
        "categorical_hinge": lambda: keras.losses.CategoricalHinge(reduction=None),
    }
    if name in categorical:
        loss = categorical[name]()
        return lambda y, z: loss(tf.one_hot(tf.cast(y, tf.int32), num_classes), z)
    sigmoid: dict[str, Callable[[], Any]] = {
        "binary_crossentropy": lambda: keras.losses.BinaryCrossentropy(from_logits=True, reduction=None, **smoothing),
        "binary_focal_crossentropy": lambda: keras.losses.BinaryFocalCrossentropy(
            from_logits=True, reduction=None, **smoothing
        ),
        "hinge": lambda: keras.losses.Hinge(reduction=None),
        "squared_hinge": lambda: keras.losses.SquaredHinge(reduction=None),
        "mean_squared_error": lambda: keras.losses.MeanSquaredError(reduction=None),
        "mean_absolute_error": lambda: keras.losses.MeanAbsoluteError(reduction=None),
        "huber": lambda: keras.losses.Huber(reduction=None),
        "log_cosh": lambda: keras.losses.LogCosh(reduction=None),
    }
    return sigmoid[name]()


def build_loss(spec: str, head: Any, *, label_smoothing: float = 0.0) -> LossFn:
    """fn(y_true, y_pred) in the head's loss space -> per-example loss [batch]."""
    task = task_name(head)
    if is_custom(spec):
        function = import_object(spec, key="train.loss")
    else:
        name = canonical_loss(spec)
        if name not in LOSSES[task]:
            raise ConfigError(
                f"`train.loss` `{spec}` is not a loss for model.task {task} (the task this run trains); expected one "
                f"of {list(LOSSES[task])} or `package.module:function`"
            )
        function = _keras_loss(
            name, task, num_classes=int(getattr(head, "output_units", 1)), label_smoothing=label_smoothing
        )

    def per_example(labels: tf.Tensor, outputs: tf.Tensor) -> tf.Tensor:
        y_true, y_pred = head.loss_space(labels, outputs)
        return _per_example(function(y_true, y_pred), tf.shape(y_pred)[0])

    return per_example


def _keras_metric(name: str, task: str, head: Any) -> keras.metrics.Metric:
    threshold = float(getattr(head, "threshold", 0.5))
    if task == "multiclass":
        if name == "accuracy":
            return keras.metrics.CategoricalAccuracy(name=name)
        if name == "top_k_accuracy" or (name.startswith("top_") and name.endswith("_accuracy")):
            k = 5 if name == "top_k_accuracy" else int(name[4:-9])
            return keras.metrics.TopKCategoricalAccuracy(k=k, name=name)
        if name in ("precision", "recall"):
            # The top-scored class is the prediction (micro-averaged over classes).
            cls = keras.metrics.Precision if name == "precision" else keras.metrics.Recall
            return cls(top_k=1, name=name)
    if task == "multilabel":
        labels = int(head.output_units)
        if name == "binary_accuracy":
            return keras.metrics.BinaryAccuracy(threshold=threshold, name=name)
        if name in ("auc", "prc"):
            curve = "PR" if name == "prc" else "ROC"
            return keras.metrics.AUC(curve=curve, multi_label=True, num_labels=labels, name=name)
        if name == "precision":
            return keras.metrics.Precision(thresholds=threshold, name=name)
        if name == "recall":
            return keras.metrics.Recall(thresholds=threshold, name=name)
    if task == "binary":
        if name == "accuracy":
            return keras.metrics.BinaryAccuracy(name=name)
        if name == "precision":
            return keras.metrics.Precision(name=name)
        if name == "recall":
            return keras.metrics.Recall(name=name)
    if name == "auc":
        return keras.metrics.AUC(name=name)
    if name == "prc":
        return keras.metrics.AUC(curve="PR", name=name)
    regression: dict[str, Callable[[], keras.metrics.Metric]] = {
        "mae": lambda: keras.metrics.MeanAbsoluteError(name=name),
        "rmse": lambda: keras.metrics.RootMeanSquaredError(name=name),
        "mse": lambda: keras.metrics.MeanSquaredError(name=name),
        "r2": lambda: keras.metrics.R2Score(name=name),
        "mape": lambda: keras.metrics.MeanAbsolutePercentageError(name=name),
    }
    return regression[name]()


def _known(name: str, task: str) -> bool:
    if name in METRICS[task]:
        return True
    return task == "multiclass" and name.startswith("top_") and name.endswith("_accuracy") and name[4:-9].isdigit()


def build_metric(spec: str, head: Any) -> keras.metrics.Metric:
    """A fresh metric updated with the head's metric space (call inside the strategy scope)."""
    task = task_name(head)
    name = metric_name(spec)
    if not is_custom(spec):
        if not _known(spec, task):
            raise ConfigError(
                f"`train.metrics` `{spec}` is not a metric for model.task {task} (the task this run trains); "
                f"expected one of {list(METRICS[task])} or `package.module:function`"
            )
        return _keras_metric(spec, task, head)
    found = import_object(spec, key="train.metrics")
    if isinstance(found, type) and issubclass(found, keras.metrics.Metric):
        try:
            return found(name=name)
        except TypeError:
            return found()
    return keras.metrics.MeanMetricWrapper(found, name=name)


def configured_metric_specs(head: Any, metrics: list[str]) -> list[str]:
    """train.metrics minus the task's own metrics (logged already), in order, without repeats."""
    own = set(DEFAULT_METRICS[task_name(head)])
    return [m for m in dict.fromkeys(metrics) if metric_name(m) not in own]


def class_weights(
    setting: str | dict[str, float] | None, *, labels: np.ndarray, class_names: list[str], head: Any
) -> tuple[np.ndarray | None, Finding | None]:
    """Per-class loss weights (indexed by class id) and the finding that reports them, or (None, None)."""
    if setting is None:
        return None, None
    task = task_name(head)
    if task not in ("multiclass", "binary"):
        raise ConfigError(
            f"`train.class_weight` weighs classes, but this run trains model.task {task}; remove train.class_weight"
        )
    counts = np.bincount(np.asarray(labels, np.int64), minlength=len(class_names)).astype(np.float64)
    if setting == "balanced":
        # scikit-learn's "balanced": n_samples / (n_classes * count); an absent class gets no weight to scale.
        weights = np.where(counts > 0, counts.sum() / (len(class_names) * np.maximum(counts, 1)), 1.0)
    else:
        assert isinstance(setting, dict)
        unknown = [k for k in setting if k not in class_names]
        if unknown:
            raise ConfigError(
                f"`train.class_weight` names {unknown}, which are not classes of this data; expected names among "
                f"{class_names[:20]}"
            )
        weights = np.asarray([float(setting.get(name, 1.0)) for name in class_names])
    finding = Finding(
        code="TRAIN-CLASS-WEIGHT",
        severity=Severity.INFO,
        title="class weights in the training loss",
        message="training examples are weighed by class ("
        + ", ".join(f"{n}: {w:.3g}" for n, w in zip(class_names, weights, strict=True))
        + f"; training-split counts {[int(c) for c in counts]}); validation and test losses are unweighted",
        evidence={"weights": dict(zip(class_names, map(float, weights), strict=True)), "counts": counts.tolist()},
        fix="remove train.class_weight to weigh every example the same",
    )
    return weights.astype(np.float32), finding
