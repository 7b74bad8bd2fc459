"""Shared helpers for the train tests: tiny configs and array data (no files needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def tiny_config(run_root: Path, *, name: str = "tiny", **train: Any):
    from tfpilot.config import config_from_dict

    raw = {
        "name": name,
        "runs_dir": str(run_root),
        "data": {"kind": "arrays", "shuffle_buffer": 0, "split": {"validation": 0.2, "test": 0.1, "seed": 0}},
        "model": {"name": "mlp", "hidden_units": [16], "dropout": 0.0},
        "train": {
            "epochs": 2,
            "batch_size": 16,
            "early_stopping": None,
            "histogram_every_epochs": 0,
            "optimizer": {"name": "adam", "learning_rate": 0.01},
            **train,
        },
        "export": {"enabled": False},
    }
    return config_from_dict(raw, source="<test>")


def blobs(num_examples: int = 200, *, num_features: int = 6, num_classes: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, num_examples)
    centers = rng.normal(0, 2, (num_classes, num_features))
    features = (centers[labels] + rng.normal(0, 1, (num_examples, num_features))).astype(np.float32)
    return features, labels.astype(np.int32)


def build(config, features, labels, **trainer_kwargs):
    from tfpilot.data import build_pipeline
    from tfpilot.train import Trainer

    pipeline = build_pipeline(
        config.data, batch_size=config.train.batch_size, seed=config.train.seed, features=features, labels=labels
    )
    return Trainer(config, pipeline=pipeline, **trainer_kwargs)
