"""Run in its own process: 2 logical CPU devices must be configured before TF initialises.

Trains the same tiny model on the same global batches with the default strategy and with
MirroredStrategy over 2 logical CPUs, with the default train config (only epochs and sizes
lowered), on a training split that is not a multiple of the global batch, with
steps_per_execution 1 and 3; writes weights and history of every run to the .npz in argv[1].
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
from _train_helpers import blobs, build  # noqa: E402

# 200 examples -> 140 training examples; batch 24 -> 5 full global batches and one of 20.
BATCH_SIZE = 24
HISTORY_KEYS = ("loss", "accuracy", "val_loss", "val_accuracy", "grad_norm")


def default_config(root: str, *, name: str, strategy: str, steps_per_execution: int):
    from tfpilot.config import config_from_dict

    raw = {
        "name": name,
        "runs_dir": root,
        "data": {"kind": "arrays", "split": {"validation": 0.2, "test": 0.1, "seed": 0}},
        "model": {"name": "mlp", "hidden_units": [16], "dropout": 0.0},
        "train": {
            "epochs": 2,
            "batch_size": BATCH_SIZE,
            "strategy": strategy,
            "steps_per_execution": steps_per_execution,
        },
        "export": {"enabled": False},
    }
    return config_from_dict(raw, source="<test>")


def train(strategy: str, root: str, steps_per_execution: int):
    config = default_config(
        root, name=f"{strategy}-{steps_per_execution}", strategy=strategy, steps_per_execution=steps_per_execution
    )
    features, labels = blobs(200)
    trainer = build(config, features, labels)
    result = trainer.fit()
    history = np.array([[row[key] for key in HISTORY_KEYS] for row in result.history])
    return (
        [v.numpy() for v in trainer.model.trainable_variables],
        history,
        trainer.strategy.num_replicas_in_sync,
        result.global_step,
    )


if __name__ == "__main__":
    out, root = sys.argv[1], sys.argv[2]
    arrays: dict[str, np.ndarray] = {}
    for steps_per_execution in (1, 3):
        for strategy in ("default", "mirrored"):
            weights, history, replicas, global_step = train(strategy, root, steps_per_execution)
            prefix = f"{strategy}_{steps_per_execution}"
            arrays[f"{prefix}_replicas"] = np.array(replicas)
            arrays[f"{prefix}_global_step"] = np.array(global_step)
            arrays[f"{prefix}_history"] = history
            arrays.update({f"{prefix}_weight_{i}": w for i, w in enumerate(weights)})
    np.savez(out, **arrays)
