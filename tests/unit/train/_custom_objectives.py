"""User losses and metrics for test_objectives.py (imported as `_custom_objectives:NAME`)."""

from __future__ import annotations

import keras
import tensorflow as tf


def logistic_loss(y_true, y_pred):
    """Binary loss space (0/1 [batch, 1], logit [batch, 1]): log(1 + exp(-s z)), s = +-1 (= BCE from logits)."""
    sign = 2.0 * y_true - 1.0
    return tf.reduce_mean(tf.nn.softplus(-sign * y_pred), axis=-1)


def mean_probability(y_true, y_pred):
    """Metric space: the predicted probability itself, averaged over the epoch."""
    return tf.reduce_mean(y_pred, axis=-1)


class ExampleCount(keras.metrics.Metric):
    """How many examples the metric saw since its last reset (the epoch's examples if reset each epoch);
    logged as `ExampleCount`, the name in train.metrics."""

    def __init__(self, name: str = "example_count", **kwargs) -> None:
        super().__init__(name=name, **kwargs)
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        self.count.assign_add(tf.cast(tf.shape(y_pred)[0], self.count.dtype))

    def result(self):
        return self.count

    def reset_state(self) -> None:
        self.count.assign(0.0)
