"""What the model's output means for the loss and the metrics: one object per task.

The compiled step asks its head for the per-example loss and updates the head's metrics; the
outer loop, the report and `tfpilot evaluate` read the same metrics, so every place that
reports a number computes it the same way.

- Classification: sparse softmax cross-entropy from logits (optional label smoothing), accuracy.
- Regression: the model predicts the standardised target z = (y - mean) / std; the loss is the
  mean squared error on z (so its scale does not depend on the target's units, and one learning
  rate fits every target), and `mae` / `rmse` are reported in the target's own units.
"""

from __future__ import annotations

import abc

import keras
import numpy as np
import tensorflow as tf

__all__ = ["Head", "ClassificationHead", "RegressionHead", "head_for"]


class Head(abc.ABC):
    """What a task decides in the step: the loss, the metrics and how whole arrays are scored."""

    task = "classification"

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


class ClassificationHead(Head):
    def __init__(self, *, num_classes: int, label_smoothing: float = 0.0) -> None:
        self.num_classes = num_classes
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

    def update_metrics(self, metrics: list[keras.metrics.Metric], labels: tf.Tensor, outputs: tf.Tensor) -> None:
        for metric in metrics:
            metric.update_state(labels, outputs)


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
        truth = self.original_units(tf.cast(labels, tf.float32))
        predicted = self.original_units(self._column(outputs))
        for metric in metrics:
            metric.update_state(truth, predicted)


def head_for(preprocessor: object, *, num_classes: int, label_smoothing: float = 0.0) -> Head:
    """The head a run's preprocessing describes (regression runs store their target statistics there)."""
    from tfpilot.data.regression import REGRESSION, target_stats, task_of

    if task_of(preprocessor) == REGRESSION:
        mean, std = target_stats(preprocessor)
        return RegressionHead(mean=mean, std=std)
    return ClassificationHead(num_classes=num_classes, label_smoothing=label_smoothing)
