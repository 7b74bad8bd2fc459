"""Optimizer and learning-rate schedule from config."""

from __future__ import annotations

import keras
import tensorflow as tf

from tfpilot.config.schema import OptimizerConfig, ScheduleKind

__all__ = ["build_optimizer", "build_schedule", "WarmupSchedule"]


@keras.saving.register_keras_serializable(package="tfpilot")
class WarmupSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to the base schedule's first value, then the base schedule."""

    def __init__(self, base, warmup_steps: int, peak: float) -> None:
        self.base = base
        self.warmup_steps = warmup_steps
        self.peak = peak

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        warm = self.peak * (step + 1.0) / float(max(1, self.warmup_steps))
        return tf.where(step < self.warmup_steps, warm, tf.cast(self.base(step - self.warmup_steps), tf.float32))

    def get_config(self):
        return {
            "base": keras.saving.serialize_keras_object(self.base),
            "warmup_steps": self.warmup_steps,
            "peak": self.peak,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["base"] = keras.saving.deserialize_keras_object(config["base"])
        return cls(**config)


def build_schedule(config: OptimizerConfig, *, steps_per_epoch: int, total_steps: int):
    lr = config.learning_rate
    if config.schedule == ScheduleKind.CONSTANT:
        schedule = keras.optimizers.schedules.ExponentialDecay(lr, decay_steps=1, decay_rate=1.0)
    elif config.schedule == ScheduleKind.COSINE:
        schedule = keras.optimizers.schedules.CosineDecay(
            lr, decay_steps=max(1, total_steps - config.warmup_steps), alpha=0.01
        )
    else:
        schedule = keras.optimizers.schedules.ExponentialDecay(
            lr, decay_steps=max(1, steps_per_epoch), decay_rate=config.decay_rate
        )
    if config.warmup_steps:
        schedule = WarmupSchedule(schedule, config.warmup_steps, lr)
    return schedule


def build_optimizer(config: OptimizerConfig, *, steps_per_epoch: int, total_steps: int) -> keras.optimizers.Optimizer:
    # Clipping is done by the trainer on the global norm it also logs, not by the optimizer.
    schedule = build_schedule(config, steps_per_epoch=steps_per_epoch, total_steps=total_steps)
    if config.name == "adam":
        return keras.optimizers.Adam(schedule)
    if config.name == "adamw":
        return keras.optimizers.AdamW(schedule, weight_decay=config.weight_decay)
    if config.name == "sgd":
        return keras.optimizers.SGD(schedule, momentum=config.momentum)
    return keras.optimizers.RMSprop(schedule)
