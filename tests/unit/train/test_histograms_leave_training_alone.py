"""Histograms are computed on a batch in training mode; that pass must not change what the model
learns (BatchNorm statistics, dropout's seed state). Found running keras-io's mnist_convnet through
tfpilot.fit: its second epoch's loss differed from model.fit's only where histograms were on."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import tfpilot


def _model() -> keras.Model:
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(16),
            keras.layers.BatchNormalization(),
            keras.layers.Activation("relu"),
            keras.layers.Dropout(0.5),
            keras.layers.Dense(3, activation="softmax"),
        ]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model


def test_histograms_change_neither_batchnorm_statistics_nor_dropout_masks(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    features = rng.normal(size=(256, 8)).astype(np.float32)
    labels = rng.integers(0, 3, 256).astype(np.int32)
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(32)
    runs = []
    for every in (0, 1):
        model = _model()
        result = tfpilot.fit(
            model, data, epochs=3, name=f"hist{every}", runs_dir=tmp_path, histogram_every_epochs=every, seed=0
        )
        runs.append((model, result))
    (plain, plain_result), (histograms, histograms_result) = runs
    assert (tmp_path / "hist1").is_dir()
    np.testing.assert_allclose(
        [e["loss"] for e in histograms_result.history], [e["loss"] for e in plain_result.history], rtol=1e-6
    )
    names = [v.path for v in plain.variables]
    assert any("moving_mean" in name for name in names) and any("seed" in name for name in names)
    for a, b in zip(plain.variables, histograms.variables, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, err_msg=a.path)
