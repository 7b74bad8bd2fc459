"""Run in its own process (2 logical CPU devices must be configured before TF initialises):
model.fit and tfpilot.fit on a model built under MirroredStrategy; writes both histories and the
findings' codes as JSON to argv[1]."""

from __future__ import annotations

import json
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402

import tfpilot  # noqa: E402


def build() -> keras.Model:
    keras.utils.set_random_seed(0)
    with tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    return model


rng = np.random.default_rng(0)
x = rng.random((64, 4)).astype("float32")
y = x.sum(axis=1)
theirs = build().fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history
with tempfile.TemporaryDirectory() as directory:
    ours = tfpilot.fit(build(), x, y, batch_size=16, epochs=2, shuffle=False, name="mirrored", runs_dir=directory)
with open(sys.argv[1], "w") as out:
    json.dump({"theirs": theirs, "ours": ours.history, "codes": [f.code for f in ours.findings]}, out)
