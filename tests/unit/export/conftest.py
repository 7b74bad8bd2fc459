"""Tiny models and pipelines for export tests (seconds, not a training run)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


def _images(num: int, num_classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """4x4 uint8 images whose brightness pattern encodes the class: separable by a tiny MLP."""
    rng = np.random.default_rng(seed)
    labels = np.arange(num) % num_classes
    images = rng.integers(0, 60, size=(num, 4, 4, 1)).astype(np.int32)
    for index, label in enumerate(labels):
        images[index, label % 4, :, 0] += 180
    return np.clip(images, 0, 255).astype(np.uint8), labels


def make_trained(root: Path, *, num_classes: int = 3, name: str = "tiny"):
    import keras

    from tfpilot.config import RunConfig, dump_config
    from tfpilot.config.schema import DataConfig
    from tfpilot.data import build_pipeline
    from tfpilot.rundir import RunDir
    from tfpilot.workflow import TrainedRun

    keras.utils.set_random_seed(0)
    features, labels = _images(180, num_classes)
    config = RunConfig(name=name, runs_dir=root, data=DataConfig(kind="arrays", shuffle_buffer=0))
    pipeline = build_pipeline(config.data, batch_size=32, seed=0, features=features, labels=labels)
    model = keras.Sequential(
        [
            keras.Input((4, 4, 1)),
            keras.layers.Flatten(),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(num_classes, name="logits"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(0.05), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    x, y = pipeline.arrays("train")
    model.fit(x, y, epochs=15, batch_size=32, verbose=0)
    run = RunDir.at(config.run_path)
    run.root.mkdir(parents=True, exist_ok=True)
    dump_config(config, run.config_path)
    return TrainedRun(config=config, run=run, pipeline=pipeline, model=model)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory):
    return make_trained(tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def binary_trained(tmp_path_factory: pytest.TempPathFactory):
    return make_trained(tmp_path_factory.mktemp("runs"), num_classes=2, name="binary")


@pytest.fixture
def make_trained_run():
    """Factory: make_trained_run(root, num_classes=3, name="tiny") -> a fresh TrainedRun."""
    return make_trained
