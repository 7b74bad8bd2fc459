"""Issue 16 round 3: rules made right on the shapes real code showed, each firing case paired
with the near-identical one that must stay quiet (or become a note), so neither direction
regresses silently."""

from __future__ import annotations

import textwrap

from tfpilot.lint import LintConfig, lint_source
from tfpilot.lint.earned import rule_severity


def found(source: str, code: str) -> list[tuple[int, str]]:
    """(line, severity) of each `code` finding in `source`."""
    config = LintConfig(select=(code,))
    return [
        (int(f.location.split(":")[1]), rule_severity(f).value)
        for f in lint_source(textwrap.dedent(source), config=config)
    ]


# --- TFP203: a compiled step is a claim, an eager loop's per-step read a note ---------------------

COMPILED_LOOP = """\
import tensorflow as tf

@tf.function
def train_step(x):
    return tf.reduce_mean(x)

history = []
for x in [tf.ones(3)] * 10:
    loss = train_step(x)
    history.append(loss.numpy())
"""
EAGER_LOOP = """\
import tensorflow as tf

def fit(model, optimizer, dataset):
    history = []
    for x, y in dataset:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        history.append(loss.numpy())
"""


def test_tfp203_notes_a_compiled_step_and_an_eager_loop():
    assert found(COMPILED_LOOP, "TFP203") == [(10, "info")]  # a note: the doctor measures the cost
    assert found(EAGER_LOOP, "TFP203") == [(10, "info")]


# --- TFP303: a note; a batch() that is a window (batched again after the shuffle) is no batch ------


def test_tfp303_is_a_note_and_skips_windows():
    batched = "import tensorflow as tf\nds = tf.data.Dataset.range(100).batch(10).shuffle(100)\n"
    assert found(batched, "TFP303") == [(2, "info")]
    windows = (
        "import tensorflow as tf\n"
        "seqs = tf.data.Dataset.range(1000).batch(101, drop_remainder=True)\n"
        "ds = seqs.shuffle(1000).batch(64)\n"
    )
    assert found(windows, "TFP303") == []


# --- TFP402: an error where Keras 3 raises, a note where it only logs a deprecation ---------------


def test_tfp402_severity_follows_what_keras_3_does():
    source = """\
KERAS_MODEL_PATH = "/tmp/model.h5"
model.save(KERAS_MODEL_PATH, save_format="h5")
model.save("/tmp/exported", save_format="h5")
"""
    assert found(source, "TFP402") == [(2, "info"), (3, "error")]
    wrapper = "def save(model, path, save_format=None):\n    model.save(path, save_format=save_format)\n"
    assert found(wrapper, "TFP402") == []
    assert found(wrapper + "save(m, 'out/1', save_format='tf')\n", "TFP402") == [(2, "error"), (3, "error")]


# --- TFP502 / TFP503: Keras 2 only where the file brings it in ------------------------------------


def test_tfp502_warns_only_where_the_file_brings_in_keras_2():
    mixed = "import keras\nimport tensorflow as tf\n\nlayer = tf.keras.layers.Dense(1)\n"
    assert found(mixed, "TFP502") == [(4, "info")]
    legacy = 'import os\nos.environ["TF_USE_LEGACY_KERAS"] = "1"\n' + mixed
    assert found(legacy, "TFP502") == [(6, "warning")]


def test_tfp503_is_a_note_where_tensorflow_hub_needs_keras_2():
    assert found("import tf_keras\n", "TFP503") == [(1, "warning")]
    assert found("import tensorflow_hub as hub\nimport tf_keras\n", "TFP503") == [(2, "info")]


# --- TFP201: a note where no layer of the model depends on training -------------------------------

TAPE_STEP = """\
import keras
import tensorflow as tf

model = keras.Sequential([{layers}])

def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    return tape.gradient(loss, model.trainable_variables)
"""


def test_tfp201_is_a_note_when_no_layer_depends_on_training():
    plain = TAPE_STEP.format(layers="keras.layers.Dense(8), keras.layers.Dense(1)")
    assert found(plain, "TFP201") == [(8, "info")]
    dropout = TAPE_STEP.format(layers="keras.layers.Dense(8), keras.layers.Dropout(0.5), keras.layers.Dense(1)")
    assert found(dropout, "TFP201") == [(8, "warning")]
    recurrent = TAPE_STEP.format(layers="keras.layers.LSTM(8, dropout=0.2), keras.layers.Dense(1)")
    assert found(recurrent, "TFP201") == [(8, "warning")]


def test_tfp201_follows_a_subclass_and_its_own_training_flag():
    subclass = """\
import keras
import tensorflow as tf

class Net(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)

    def call(self, x{extra}):
        return self.dense(x){use}

net = Net()
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(net(tf.ones((1, 3))))
"""
    assert found(subclass.format(extra="", use=""), "TFP201") == [(14, "info")]
    # a `training` parameter the call never reads changes nothing: still a note
    assert found(subclass.format(extra=", training=None", use=""), "TFP201") == [(14, "info")]
    # a call() that reads `training` itself behaves differently: a warning
    assert found(subclass.format(extra=", training=None", use=" if training else x"), "TFP201") == [(14, "warning")]


def test_tfp201_survives_a_class_that_builds_itself():
    source = """\
import keras
import tensorflow as tf

class Net(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)

    def call(self, x):
        return self.dense(x)

    def fresh(self):
        return Net()

net = Net()
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(net(tf.ones((1, 3))))
"""
    assert found(source, "TFP201") == [(17, "info")]
