"""Run in its own process: 2 logical CPU devices must be configured before TF initialises.

Trains the same tiny model on the same global batches with the default strategy and with
MirroredStrategy over 2 logical CPUs; writes both weight lists to the .npz given as argv[1].
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

sys.path.insert(0, os.path.dirname(__file__))
from _train_helpers import blobs, build, tiny_config  # noqa: E402


def train(strategy: str, root: str) -> tuple[list[np.ndarray], int]:
    # batch 20 over 140 training examples: 7 full batches, so the mirrored run (drop_remainder) drops nothing.
    # SGD, no clipping: the update is proportional to the gradient, so a gradient counted twice
    # (the optimizer all-reducing already-reduced gradients) shows up as a large weight difference.
    config = tiny_config(
        root,
        name=strategy,
        strategy=strategy,
        epochs=2,
        batch_size=20,
        steps_per_execution=3,
        clip_norm=None,
        optimizer={"name": "sgd", "learning_rate": 0.1, "momentum": 0.0},
    )
    features, labels = blobs(200)
    trainer = build(config, features, labels)
    trainer.fit()
    return [v.numpy() for v in trainer.model.trainable_variables], trainer.strategy.num_replicas_in_sync


if __name__ == "__main__":
    out, root = sys.argv[1], sys.argv[2]
    single, single_replicas = train("default", root)
    mirrored, mirrored_replicas = train("mirrored", root)
    np.savez(
        out,
        replicas=np.array([single_replicas, mirrored_replicas]),
        **{f"single_{i}": w for i, w in enumerate(single)},
        **{f"mirrored_{i}": w for i, w in enumerate(mirrored)},
    )
