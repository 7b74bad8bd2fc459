"""Pick a tf.distribute strategy from `train.strategy`."""

from __future__ import annotations

import json
import os

import tensorflow as tf

from tfpilot.config.schema import Strategy
from tfpilot.errors import TrainError

__all__ = ["make_strategy", "is_chief"]


def make_strategy(kind: Strategy) -> tf.distribute.Strategy:
    if kind == Strategy.AUTO:
        if os.environ.get("TF_CONFIG"):
            kind = Strategy.MULTI_WORKER
        elif len(tf.config.list_logical_devices("GPU")) > 1:
            kind = Strategy.MIRRORED
        else:
            kind = Strategy.DEFAULT
    if kind == Strategy.DEFAULT:
        return tf.distribute.get_strategy()
    if kind == Strategy.MIRRORED:
        return tf.distribute.MirroredStrategy()
    if kind == Strategy.MULTI_WORKER:
        if not os.environ.get("TF_CONFIG"):
            raise TrainError(
                "`train.strategy` is multi_worker but TF_CONFIG is not set; start workers with "
                "`tfpilot launch --workers N -- tfpilot train CONFIG`",
                exit_code=2,
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    if kind == Strategy.PARAMETER_SERVER:
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        return tf.distribute.experimental.ParameterServerStrategy(resolver)
    raise TrainError(f"unknown strategy `{kind}`", exit_code=2)


def is_chief() -> bool:
    """The chief writes checkpoints, summaries and exports; other workers write to throwaway dirs."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return True
    task = json.loads(raw).get("task", {})
    kind, index = task.get("type", "worker"), int(task.get("index", 0))
    has_chief = "chief" in json.loads(raw).get("cluster", {})
    return kind == "chief" or (not has_chief and kind == "worker" and index == 0)
