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


# ------------------------------------------------------------------- models fit must honour


def embedding_with_add_loss(*, seed: int = 3) -> Any:
    """Token ids -> Embedding (sparse gradients) -> pooled Dense, with an activity penalty (add_loss)."""
    import keras

    keras.utils.set_random_seed(seed)

    class Penalised(keras.layers.Layer):
        def call(self, inputs):
            self.add_loss(0.01 * keras.ops.mean(keras.ops.square(inputs)))
            return inputs

    tokens = keras.Input((6,), dtype="int32", name="tokens")
    embedded = keras.layers.Embedding(50, 8)(tokens)
    pooled = keras.layers.GlobalAveragePooling1D()(Penalised()(embedded))
    model = keras.Model(tokens, keras.layers.Dense(1, activation="sigmoid")(pooled))
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="binary_crossentropy", metrics=["accuracy"])
    return model


def token_arrays(rows: int = 80, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 50, size=(rows, 6)).astype("int32")
    return tokens, (tokens[:, 0] > 25).astype("float32")


def own_train_step_model(*, seed: int = 4) -> Any:
    """A subclassed model with its own train_step and test_step (compiled with an optimizer only,
    as keras-io's GAN and VAE examples are): its loss lives in its own tracker."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(seed)

    class OwnStep(keras.Model):
        def __init__(self) -> None:
            super().__init__()
            self.hidden = keras.layers.Dense(8, activation="relu")
            self.out = keras.layers.Dense(1)
            self.tracker = keras.metrics.Mean(name="own_loss")

        def call(self, inputs):
            return self.out(self.hidden(inputs))

        @property
        def metrics(self):
            return [self.tracker]

        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                loss = keras.ops.mean(keras.ops.abs(self(x, training=True) - y))
            gradients = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(gradients, self.trainable_variables, strict=True))
            self.tracker.update_state(loss)
            return {"own_loss": self.tracker.result()}

        def test_step(self, data):
            x, y = data
            self.tracker.update_state(keras.ops.mean(keras.ops.abs(self(x) - y)))
            return {"own_loss": self.tracker.result()}

    model = OwnStep()
    model.compile(optimizer=keras.optimizers.SGD(0.05))
    model(np.zeros((1, 3), "float32"))
    return model


def batch_norm_dropout(*, seed: int = 5) -> Any:
    """Dense -> BatchNormalization -> Dropout -> Dense: every kind of state a training step writes
    besides the weights (moving statistics, dropout's seed generator, metric totals)."""
    import keras

    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(8),
            keras.layers.BatchNormalization(),
            keras.layers.Dropout(0.3),
            keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    return model
