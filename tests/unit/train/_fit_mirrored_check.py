"""Run in its own process (2 logical CPU devices must be configured before TF initialises):
model.fit and tfpilot.fit on models built under MirroredStrategy (two replicas) and
OneDeviceStrategy; writes histories, weight comparisons and the findings' codes as JSON to argv[1]."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402

import tfpilot  # noqa: E402
from tfpilot.errors import TrainError  # noqa: E402

MIRRORED = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
ONE_DEVICE = tf.distribute.OneDeviceStrategy("/cpu:0")


def build(strategy: tf.distribute.Strategy) -> keras.Model:
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = keras.Sequential(
            [
                keras.Input((4,)),
                keras.layers.Dense(8, activation="relu"),
                keras.layers.BatchNormalization(),
                keras.layers.Dense(1),
            ]
        )
        # AdamW: its weight decay and bias correction see every increment of the iterations
        model.compile(optimizer=keras.optimizers.AdamW(1e-2), loss="mse", metrics=["mae"])
    return model


class TwoStepModel(keras.Model):
    """Its own train_step applying its optimizer twice per batch (a critic's extra update)."""

    def train_step(self, data: Any) -> dict[str, Any]:
        x, y = data
        for _ in range(2):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(self(x, training=True)[:, 0] - y))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
        return {"raw_loss": loss}


def build_own_step(strategy: tf.distribute.Strategy) -> keras.Model:
    keras.utils.set_random_seed(0)
    with strategy.scope():
        inputs = keras.Input((4,))
        model = TwoStepModel(inputs, keras.layers.Dense(1)(keras.layers.Dense(8, activation="relu")(inputs)))
        model.compile(optimizer="adam")
    return model


def same(a: keras.Model, b: keras.Model) -> bool:
    return all(np.array_equal(np.asarray(v), np.asarray(w)) for v, w in zip(a.variables, b.variables, strict=True))


def finite(model: keras.Model) -> bool:
    return all(np.isfinite(np.asarray(v)).all() for v in model.variables)


def unknown_length(x: np.ndarray, y: np.ndarray) -> tf.data.Dataset:
    # a filter hides the length: model.fit's step then meets the end of the data in a call of its own
    return tf.data.Dataset.from_tensor_slices((x, y)).filter(lambda a, b: True).batch(16)


rng = np.random.default_rng(0)
x = rng.random((64, 4)).astype("float32")
y = x.sum(axis=1)
poisoned = x.copy()
poisoned[5, 2] = np.nan  # the first batch of every epoch; with two replicas, only the first replica's half
result: dict[str, Any] = {}
with tempfile.TemporaryDirectory() as directory:

    def ours(model: keras.Model, name: str, *args: Any, **kwargs: Any) -> Any:
        return tfpilot.fit(model, *args, name=name, runs_dir=directory, **kwargs)

    plain = build(MIRRORED)
    theirs = plain.fit(unknown_length(x, y), epochs=2, verbose=0).history
    model = build(MIRRORED)
    clean = ours(model, "clean", unknown_length(x, y), epochs=2)
    result["clean"] = {
        "theirs": theirs,
        "ours": {k: [row[k] for row in clean.history] for k in theirs},
        "same_weights": same(plain, model),
        "codes": [f.code for f in clean.findings],
    }

    without = build(MIRRORED)
    reference = without.fit(x[16:], y[16:], batch_size=16, epochs=3, shuffle=False, verbose=0).history
    model = build(MIRRORED)
    skipped = ours(model, "skip", poisoned, y, batch_size=16, epochs=3, shuffle=False, nan_policy="skip_batch")
    result["skip"] = {
        "reference": reference,
        "ours": {k: [row[k] for row in skipped.history] for k in reference},
        "same_weights": same(without, model),
        "finite": finite(model),
        "codes": [f.code for f in skipped.findings],
    }

    model = build(MIRRORED)
    try:
        ours(model, "stop", poisoned, y, batch_size=16, epochs=2, shuffle=False, nan_policy="stop")
        result["stop"] = {"raised": None}
    except TrainError as exc:
        result["stop"] = {"raised": str(exc), "finite": finite(model)}

    own = build_own_step(MIRRORED)
    own_result = ours(own, "own", poisoned, y, batch_size=16, epochs=2, shuffle=False, nan_policy="skip_batch")
    result["own_step"] = {"finite": finite(own), "codes": [f.code for f in own_result.findings]}

    # resume=True under the strategy: the optimizer's slots are made and restored in its scope
    whole = ours(build(MIRRORED), "whole", x, y, batch_size=16, epochs=3, shuffle=False, checkpoint_every_secs=0)
    ours(build(MIRRORED), "part", x, y, batch_size=16, epochs=2, shuffle=False, checkpoint_every_secs=0)
    resumed = ours(
        build(MIRRORED), "part", x, y, batch_size=16, epochs=3, shuffle=False, resume=True, checkpoint_every_secs=0
    )
    result["resume"] = {
        "whole": [row["loss"] for row in whole.history],
        "resumed": [row["loss"] for row in resumed.history],
    }

    plain = build(ONE_DEVICE)
    theirs = plain.fit(unknown_length(x, y), epochs=2, verbose=0).history
    model = build(ONE_DEVICE)
    one = ours(model, "one", unknown_length(poisoned, y), epochs=2, nan_policy="skip_batch")
    result["one_device"] = {"finite": finite(model), "codes": [f.code for f in one.findings]}

with open(sys.argv[1], "w") as out:
    json.dump(result, out)
