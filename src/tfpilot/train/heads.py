"""What the model's output means for the loss and the metrics: one object per task.

The compiled step asks its head for the per-example loss and updates the head's metrics; the
outer loop, the report and `tfpilot evaluate` read the same metrics, so every place that
reports a number computes it the same way.

- Classification: sparse softmax cross-entropy from logits (optional label smoothing), accuracy.
- Binary: one logit z, P(second class) = sigmoid(z); sigmoid cross-entropy; accuracy and AUC.
  Serving turns z into the two-class logits [0, z] (softmax([0, z]) = [1 - sigmoid(z), sigmoid(z)]),
  so clients still get one probability per class.
- Multilabel: one logit per label, each an independent sigmoid; the loss is the sigmoid
  cross-entropy averaged over the labels; binary accuracy at `model.threshold` and AUC
  (multi_label: one curve per label, averaged).
- Regression: the model predicts the standardised target z = (y - mean) / std; the loss is the
  mean squared error on z (so its scale does not depend on the target's units, and one learning
  rate fits every target), and `mae` / `rmse` are reported in the target's own units.
"""

from __future__ import annotations

import abc

import keras
import numpy as np
import tensorflow as tf

__all__ = [
    "Head",
    "ClassificationHead",
    "BinaryHead",
    "MultiLabelHead",
    "RegressionHead",
    "ConfiguredHead",
    "head_for",
    "output_units",
]


class Head(abc.ABC):
    """What a task decides in the step: the loss, the metrics and how whole arrays are scored."""

    task = "classification"
    # Width of the model's output layer for this head.
    output_units = 1

    @abc.abstractmethod
    def per_example_loss(self, labels: tf.Tensor, outputs: tf.Tensor) -> tf.Tensor: ...

    @abc.abstractmethod
    def make_metrics(self) -> list[keras.metrics.Metric]:
        """Fresh metric objects (created inside the strategy scope by the caller)."""

    @abc.abstractmethod
    def update_metrics(self, metrics: list[keras.metrics.Metric], labels: tf.Tensor, outputs: tf.Tensor) -> None: ...

    def evaluate_arrays(self, labels: np.ndarray, outputs: np.ndarray) -> dict[str, float]:
        """Loss and metrics of whole arrays, outside any compiled step (evaluate, multi-worker chief)."""
        metrics = self.make_metrics()
        labels_t, outputs_t = tf.constant(labels), tf.constant(outputs)
        self.update_metrics(metrics, labels_t, outputs_t)
        loss = float(np.mean(self.per_example_loss(labels_t, outputs_t).numpy()))
        return {"loss": loss, **{m.name: float(m.result()) for m in metrics}}

    def predicted_classes(self, outputs: np.ndarray) -> np.ndarray:
        """Class ids from the model's outputs (the confusion matrix); argmax over the logits."""
        return np.argmax(outputs, axis=-1)

    @abc.abstractmethod
    def loss_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """(y_true, y_pred) as a Keras loss of this task takes them (see losses.py)."""

    @abc.abstractmethod
    def metric_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """(y_true, y_pred) as a Keras metric of this task takes them (see losses.py)."""


class ClassificationHead(Head):
    def __init__(self, *, num_classes: int, label_smoothing: float = 0.0) -> None:
        self.num_classes = num_classes
        self.output_units = num_classes
        self.label_smoothing = label_smoothing

    def per_example_loss(self, labels: tf.Tensor, outputs: tf.Tensor) -> tf.Tensor:
        logits = tf.cast(outputs, tf.float32)
        if self.label_smoothing:
            one_hot = tf.one_hot(tf.cast(labels, tf.int32), self.num_classes)
            return keras.losses.categorical_crossentropy(
                one_hot, logits, from_logits=True, label_smoothing=self.label_smoothing
            )
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(labels, tf.int32), logits=logits)

    def make_metrics(self) -> list[keras.metrics.Metric]:
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def loss_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.cast(labels, tf.int32), tf.cast(outputs, tf.float32)

    def metric_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        one_hot = tf.one_hot(tf.cast(labels, tf.int32), self.num_classes)
        return one_hot, tf.nn.softmax(tf.cast(outputs, tf.float32), axis=-1)

    def update_metrics(self, metrics: list[keras.metrics.Metric], labels: tf.Tensor, outputs: tf.Tensor) -> None:
        for metric in metrics:
            metric.update_state(labels, outputs)


def _smoothed(labels: tf.Tensor, smoothing: float) -> tf.Tensor:
    # Keras' binary_crossentropy convention: pull 0/1 targets towards 0.5.
    labels = tf.cast(labels, tf.float32)
    return labels * (1.0 - smoothing) + 0.5 * smoothing if smoothing else labels


class BinaryHead(Head):
    """Two classes as one logit: z > 0 means class_names[1]."""

    task = "binary"
    output_units = 1

    def __init__(self, *, label_smoothing: float = 0.0) -> None:
        self.label_smoothing = label_smoothing

    @staticmethod
    def _logit(outputs: tf.Tensor) -> tf.Tensor:
        outputs = tf.cast(outputs, tf.float32)
        return outputs[:, 0] if outputs.shape.rank == 2 else outputs

    def per_example_loss(self, labels: tf.Tensor, outputs: tf.Tensor) -> tf.Tensor:
        return tf.nn.sigmoid_cross_entropy_with_logits(
            labels=_smoothed(labels, self.label_smoothing), logits=self._logit(outputs)
        )

    def make_metrics(self) -> list[keras.metrics.Metric]:
        return [keras.metrics.BinaryAccuracy(name="accuracy"), keras.metrics.AUC(name="auc")]

    def update_metrics(self, metrics: list[keras.metrics.Metric], labels: tf.Tensor, outputs: tf.Tensor) -> None:
        truth, probability = self.metric_space(labels, outputs)
        for metric in metrics:
            metric.update_state(truth, probability)

    def loss_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.cast(labels, tf.float32)[:, None], self._logit(outputs)[:, None]

    def metric_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.cast(labels, tf.float32)[:, None], tf.sigmoid(self._logit(outputs))[:, None]

    def predicted_classes(self, outputs: np.ndarray) -> np.ndarray:
        return (np.asarray(outputs).reshape(len(outputs), -1)[:, 0] > 0).astype(np.int64)


class MultiLabelHead(Head):
    """Independent labels: one sigmoid per label, multi-hot float targets [batch, num_labels]."""

    task = "multilabel"

    def __init__(self, *, num_labels: int, threshold: float = 0.5, label_smoothing: float = 0.0) -> None:
        self.num_labels = num_labels
        self.output_units = num_labels
        self.threshold = float(threshold)
        self.label_smoothing = label_smoothing

    def per_example_loss(self, labels: tf.Tensor, outputs: tf.Tensor) -> tf.Tensor:
        per_label = tf.nn.sigmoid_cross_entropy_with_logits(
            labels=_smoothed(labels, self.label_smoothing), logits=tf.cast(outputs, tf.float32)
        )
        # Mean over labels (Keras' binary_crossentropy), so the loss scale does not grow with the label count.
        return tf.reduce_mean(per_label, axis=-1)

    def make_metrics(self) -> list[keras.metrics.Metric]:
        return [
            keras.metrics.BinaryAccuracy(name="binary_accuracy", threshold=self.threshold),
            keras.metrics.AUC(name="auc", multi_label=True, num_labels=self.num_labels),
        ]

    def update_metrics(self, metrics: list[keras.metrics.Metric], labels: tf.Tensor, outputs: tf.Tensor) -> None:
        truth, probabilities = self.metric_space(labels, outputs)
        for metric in metrics:
            metric.update_state(truth, probabilities)

    def loss_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.cast(labels, tf.float32), tf.cast(outputs, tf.float32)

    def metric_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.cast(labels, tf.float32), tf.sigmoid(tf.cast(outputs, tf.float32))

    def predicted_classes(self, outputs: np.ndarray) -> np.ndarray:
        """Multi-hot predictions: a label is on when its probability reaches the threshold."""
        probabilities = 1.0 / (1.0 + np.exp(-np.asarray(outputs, np.float64)))
        return (probabilities >= self.threshold).astype(np.int64)


class RegressionHead(Head):
    task = "regression"

    def __init__(self, *, mean: float, std: float) -> None:
        self.mean = float(mean)
        self.std = float(std)

    @staticmethod
    def _column(outputs: tf.Tensor) -> tf.Tensor:
        outputs = tf.cast(outputs, tf.float32)
        return outputs[:, 0] if outputs.shape.rank == 2 else outputs

    def per_example_loss(self, labels: tf.Tensor, outputs: tf.Tensor) -> tf.Tensor:
        return tf.square(self._column(outputs) - tf.cast(labels, tf.float32))

    def original_units(self, standardised: tf.Tensor) -> tf.Tensor:
        return standardised * self.std + self.mean

    def make_metrics(self) -> list[keras.metrics.Metric]:
        return [keras.metrics.MeanAbsoluteError(name="mae"), keras.metrics.RootMeanSquaredError(name="rmse")]

    def update_metrics(self, metrics: list[keras.metrics.Metric], labels: tf.Tensor, outputs: tf.Tensor) -> None:
        truth, predicted = self.metric_space(labels, outputs)
        for metric in metrics:
            metric.update_state(truth, predicted)

    def loss_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.cast(labels, tf.float32)[:, None], self._column(outputs)[:, None]

    def metric_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        truth = self.original_units(tf.cast(labels, tf.float32))
        return truth[:, None], self.original_units(self._column(outputs))[:, None]


class ConfiguredHead(Head):
    """A task's head with `train.loss` instead of its own loss and `train.metrics` after its own metrics."""

    def __init__(self, base: Head, *, loss: str | None, metrics: list[str], label_smoothing: float = 0.0) -> None:
        from tfpilot.train.losses import build_loss, build_metric, configured_metric_specs

        self.base = base
        self.task = base.task
        self.output_units = base.output_units
        self.loss_spec = loss
        self._loss = build_loss(loss, base, label_smoothing=label_smoothing) if loss else None
        self.metric_specs = configured_metric_specs(base, metrics)
        self._build_metric = build_metric
        self._num_own = len(base.make_metrics())
        for spec in self.metric_specs:
            build_metric(spec, base)  # unknown names and bad imports fail now, not inside the first step

    def __getattr__(self, name: str) -> object:
        # threshold, original_units, num_classes ...: whatever the task's head has.
        base = self.__dict__.get("base")
        if base is None:
            raise AttributeError(name)
        return getattr(base, name)

    def per_example_loss(self, labels: tf.Tensor, outputs: tf.Tensor) -> tf.Tensor:
        if self._loss is None:
            return self.base.per_example_loss(labels, outputs)
        return self._loss(labels, outputs)

    def make_metrics(self) -> list[keras.metrics.Metric]:
        return [*self.base.make_metrics(), *(self._build_metric(spec, self.base) for spec in self.metric_specs)]

    def update_metrics(self, metrics: list[keras.metrics.Metric], labels: tf.Tensor, outputs: tf.Tensor) -> None:
        own, configured = metrics[: self._num_own], metrics[self._num_own :]
        self.base.update_metrics(own, labels, outputs)
        if configured:
            truth, predicted = self.base.metric_space(labels, outputs)
            for metric in configured:
                metric.update_state(truth, predicted)

    def predicted_classes(self, outputs: np.ndarray) -> np.ndarray:
        return self.base.predicted_classes(outputs)

    def loss_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return self.base.loss_space(labels, outputs)

    def metric_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return self.base.metric_space(labels, outputs)


def head_for(
    preprocessor: object, *, num_classes: int, label_smoothing: float = 0.0, train: object | None = None
) -> Head:
    """The head a run's preprocessing describes (its task and, for a regression, target statistics);
    with ``train`` (the config's train section) its loss and extra metrics too."""
    head = _task_head(preprocessor, num_classes=num_classes, label_smoothing=label_smoothing)
    loss, metrics = getattr(train, "loss", None), list(getattr(train, "metrics", None) or [])
    if loss or metrics:
        return ConfiguredHead(head, loss=loss, metrics=metrics, label_smoothing=label_smoothing)
    return head


def _task_head(preprocessor: object, *, num_classes: int, label_smoothing: float) -> Head:
    from tfpilot.data.regression import REGRESSION, target_stats, task_of
    from tfpilot.data.task import BINARY, MULTILABEL, multilabel_threshold

    task = task_of(preprocessor)
    if task == REGRESSION:
        mean, std = target_stats(preprocessor)
        return RegressionHead(mean=mean, std=std)
    if task == BINARY:
        return BinaryHead(label_smoothing=label_smoothing)
    if task == MULTILABEL:
        return MultiLabelHead(
            num_labels=num_classes, threshold=multilabel_threshold(preprocessor), label_smoothing=label_smoothing
        )
    # Multiclass, and runs written before tasks existed (two classes then had two softmax logits).
    return ClassificationHead(num_classes=num_classes, label_smoothing=label_smoothing)


def output_units(preprocessor: object, *, num_classes: int) -> int:
    """Width of the model's output layer for a run (1 for binary and regression)."""
    return head_for(preprocessor, num_classes=num_classes).output_units
