"""Models and data for the tfpilot.fit tests: a functional model with two inputs and two outputs."""

from __future__ import annotations

from typing import Any

import numpy as np


def two_headed(*, seed: int = 1, compiled: bool = True, learning_rate: float = 0.01) -> Any:
    """Inputs `num` [4] and `extra` [3]; outputs `cls` (sigmoid probability) and `reg` (a number)."""
    import keras

    keras.utils.set_random_seed(seed)
    num = keras.Input((4,), name="num")
    extra = keras.Input((3,), name="extra")
    hidden = keras.layers.Dense(8, activation="relu")(keras.layers.Concatenate()([num, extra]))
    cls = keras.layers.Dense(1, activation="sigmoid", name="cls")(hidden)
    reg = keras.layers.Dense(1, name="reg")(hidden)
    model = keras.Model({"num": num, "extra": extra}, {"cls": cls, "reg": reg})
    if compiled:
        model.compile(
            optimizer=keras.optimizers.Adam(learning_rate),
            loss={"cls": "binary_crossentropy", "reg": "mse"},
            loss_weights={"cls": 1.0, "reg": 0.5},
            metrics={"cls": ["auc", "accuracy"], "reg": ["mae"]},
        )
    return model


def two_headed_arrays(rows: int = 96, *, seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    features = {
        "num": rng.random((rows, 4)).astype("float32"),
        "extra": rng.random((rows, 3)).astype("float32"),
    }
    labels = {
        "cls": (features["num"][:, :1] + features["extra"][:, :1] > 1.0).astype("float32"),
        "reg": (features["extra"][:, 1:2] * 3.0 - features["num"][:, 2:3]).astype("float32"),
    }
    return features, labels


def two_headed_datasets(batch_size: int = 16) -> tuple[Any, Any]:
    """(training, validation) tf.data.Datasets of ({num, extra}, {cls, reg}) batches; the last batch is short."""
    import tensorflow as tf

    features, labels = two_headed_arrays(90)
    train = tf.data.Dataset.from_tensor_slices((features, labels)).batch(batch_size)
    val_features, val_labels = two_headed_arrays(40, seed=1)
    validation = tf.data.Dataset.from_tensor_slices((val_features, val_labels)).batch(batch_size)
    return train, validation
