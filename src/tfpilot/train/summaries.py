"""TensorBoard summaries: scalars every N steps, histograms every N epochs."""

from __future__ import annotations

import keras
import tensorflow as tf

from tfpilot.rundir import RunDir

__all__ = ["SummaryWriters"]


class SummaryWriters:
    """Train and validation writers; a worker that is not the chief gets no-op writers."""

    def __init__(self, run: RunDir, *, enabled: bool = True) -> None:
        if enabled:
            self.train = tf.summary.create_file_writer(str(run.train_logs))
            self.validation = tf.summary.create_file_writer(str(run.validation_logs))
        else:
            self.train = tf.summary.create_noop_writer()
            self.validation = tf.summary.create_noop_writer()

    def scalars(self, writer, values: dict[str, float], *, step: int) -> None:
        with writer.as_default(step=step):
            for name, value in values.items():
                tf.summary.scalar(name, value)

    def histograms(self, model: keras.Model, gradients: list[tf.Tensor] | None, *, step: int) -> None:
        with self.train.as_default(step=step):
            for variable in model.trainable_variables:
                tf.summary.histogram(f"weights/{variable.path}", variable)
            for variable, gradient in zip(model.trainable_variables, gradients or [], strict=False):
                tf.summary.histogram(f"gradients/{variable.path}", gradient)

    def flush(self) -> None:
        self.train.flush()
        self.validation.flush()

    def close(self) -> None:
        self.train.close()
        self.validation.close()
