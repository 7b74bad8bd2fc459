"""Precision fixes from labelling real code (issue 16): the shapes that used to be wrong findings.

Each test pairs the real-world shape that must stay quiet with the near-identical one that must
still fire, so neither direction can regress silently.
"""

from __future__ import annotations

import textwrap

from tfpilot.lint import LintConfig, lint_source


def findings(source: str, code: str) -> list[tuple[int, str]]:
    config = LintConfig(select=(code,))
    return [(int(f.location.split(":")[1]), f.message) for f in lint_source(textwrap.dedent(source), config=config)]


# --- TFP206: the loss is linked to the model it is compiled with or applied to ------------------

TUTORIAL = """\
import keras

model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(train_images, train_labels, epochs=10)
probability_model = keras.Sequential([model, keras.layers.Softmax()])
"""


def test_tfp206_inference_wrapper_built_after_training_does_not_fire():
    assert findings(TUTORIAL, "TFP206") == []
    # The wrapper reusing the name `model` after the compile does not change what was compiled.
    rebound = TUTORIAL.replace("probability_model = ", "model = ")
    assert findings(rebound, "TFP206") == []


def test_tfp206_fires_when_the_compiled_model_itself_ends_in_softmax():
    source = TUTORIAL.replace("keras.layers.Dense(10)]", 'keras.layers.Dense(10, activation="softmax")]')
    ((line, message),) = findings(source, "TFP206")
    assert line == 4 and "compiled with it on line 4" in message and "(line 3)" in message


def test_tfp206_function_scopes_keep_their_own_models():
    source = """\
    import keras

    def build_probabilities():
        outputs = keras.layers.Dense(3, activation="softmax")(inputs)
        model = keras.Model(inputs, outputs)
        return model

    def build_logits():
        model = keras.Model(inputs, keras.layers.Dense(3)(inputs))
        model.compile(loss=keras.losses.CategoricalCrossentropy(from_logits=True))
        return model

    def build_wrong():
        outputs = keras.layers.Dense(3, activation="softmax")(inputs)
        model = keras.Model(inputs, outputs)
        model.compile(loss=keras.losses.CategoricalCrossentropy(from_logits=True))
        return model
    """
    assert [line for line, _ in findings(source, "TFP206")] == [16]


def test_tfp206_custom_loop_applies_the_loss_to_the_softmax_model_output():
    source = """\
    import keras
    import tensorflow as tf

    model = keras.Sequential([keras.layers.Dense(10, activation="softmax")])
    scorer = keras.Sequential([keras.layers.Dense(10)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step(x, y):
        with tf.GradientTape() as tape:
            logits = scorer(x, training=True)
            loss = loss_fn(y, logits)
        return loss

    def wrong_step(x, y):
        probabilities = model(x, training=True)
        return loss_fn(y, probabilities)
    """
    ((line, message),) = findings(source, "TFP206")
    assert line == 6 and "applied to the model's output on line 16" in message


# --- TFP302: TF 2.21 injects the final prefetch itself -------------------------------------------

PIPELINE = """\
import tensorflow as tf

def train(model, x, y):
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024).batch(32)
    model.fit(ds, epochs=3)
"""


def test_tfp302_is_an_info_note_that_says_tf_injects_the_prefetch():
    (finding,) = lint_source(PIPELINE, config=LintConfig(select=("TFP302",)))
    assert finding.severity.value == "info"
    assert "injects one itself" in finding.message and "take turns" not in finding.message
    assert "Optional on TF 2.21" in finding.fix


def test_tfp302_says_the_overlap_is_lost_when_the_file_turns_injection_off():
    source = PIPELINE.replace(
        "    model.fit(ds, epochs=3)",
        "    options = tf.data.Options()\n"
        "    options.experimental_optimization.inject_prefetch = False\n"
        "    model.fit(ds.with_options(options), epochs=3)\n"
        "    model.fit(ds, epochs=3)",
    )
    (finding,) = lint_source(source, config=LintConfig(select=("TFP302",)))
    assert "turns off the prefetch TF would inject" in finding.message and "take turns" in finding.message


# --- TFP201: tf.Module objects, frozen extractors, and when --fix may add training= -------------

TAPE_CALLS = """\
import keras
import tensorflow as tf


class Scale(tf.Module):
    def __init__(self):
        self.w = tf.Variable(2.0)

    def __call__(self, x):
        return self.w * x


class Block(keras.layers.Layer):
    def call(self, x):
        return x


scale_model = Scale()
keras_model = keras.Sequential([keras.layers.Dense(1)])
block_model = Block()
backbone = keras.Sequential([keras.layers.Dense(4)])
backbone.trainable = False
hub_model = make_layer("https://example/model", trainable=False)


def train_step(model, x):
    with tf.GradientTape() as tape:
        a = scale_model(x)
        b = keras_model(x)
        c = block_model(x)
        d = backbone(x)
        e = hub_model(x)
        f = model(x)
    return a, b, c, d, e, f
"""


def test_tfp201_skips_tf_modules_and_frozen_models_and_fixes_only_keras_models():
    found = lint_source(TAPE_CALLS, config=LintConfig(select=("TFP201",)))
    by_line = {int(f.location.split(":")[1]): f.evidence["fixable"] for f in found}
    # keras_model and block_model: certainly Keras -> fixable; `model` (a parameter): unknown -> no fix.
    assert by_line == {29: True, 30: True, 33: False}, by_line


def test_tfp201_self_call_in_a_tf_module_subclass_does_not_fire():
    source = """\
    import tensorflow as tf

    class Model(tf.Module):
        def __call__(self, x):
            return x

        def step(self, x):
            with tf.GradientTape() as tape:
                y = self(x)
            return y
    """
    assert findings(source, "TFP201") == []


# --- TFP202: a redefined helper is resolved the way Python resolves it ---------------------------

REDEFINED = """\
import keras
import tensorflow as tf

train_loss = keras.metrics.Mean()


def train_step(x):
    train_loss.update_state(tf.reduce_mean(x))


LOOP_BETWEEN


def train_step(x):
    return tf.reduce_mean(x)


LOOP_AFTER
"""
LOOP = "for epoch in range(3):\n    for x in [1.0]:\n        train_step(x)\n"


def test_tfp202_uses_the_definition_in_effect_where_the_loop_runs():
    after = REDEFINED.replace("LOOP_BETWEEN", "").replace("LOOP_AFTER", LOOP)
    assert findings(after, "TFP202") == []  # the last definition updates no metric
    between = REDEFINED.replace("LOOP_BETWEEN", LOOP).replace("LOOP_AFTER", "")
    assert [line for line, _ in findings(between, "TFP202")] == [13]


def test_tfp202_a_loop_inside_a_function_runs_the_last_definition():
    inside = REDEFINED.replace("LOOP_BETWEEN", "def fit():\n" + textwrap.indent(LOOP, "    ")).replace("LOOP_AFTER", "")
    assert findings(inside, "TFP202") == []


# --- TFP101 / TFP102: code that Keras or nobody ever traces ---------------------------------------

STEP_MODEL = """\
import keras
import tensorflow as tf


class Classifier(BASE):
    def train_step(self, data):
        x, y = data
        print("step", float(tf.reduce_mean(x)))
        return {"loss": 0.0}


model = Classifier()
model.compile(optimizer="adam", loss="mse"COMPILE)
"""


def test_tfp101_tfp102_fire_in_a_keras_train_step():
    source = STEP_MODEL.replace("BASE", "keras.Model").replace("COMPILE", "")
    assert [line for line, _ in findings(source, "TFP101")] == [8]
    assert [line for line, _ in findings(source, "TFP102")] == [8]


def test_tfp101_tfp102_skip_a_model_compiled_with_run_eagerly():
    source = STEP_MODEL.replace("BASE", "keras.Model").replace("COMPILE", ", run_eagerly=True")
    assert findings(source, "TFP101") == [] and findings(source, "TFP102") == []


def test_tfp101_tfp102_skip_train_step_of_a_class_that_is_no_keras_model():
    source = STEP_MODEL.replace("BASE", "object").replace("COMPILE", "")
    assert findings(source, "TFP101") == [] and findings(source, "TFP102") == []
    local_base = STEP_MODEL.replace(
        "class Classifier(BASE)", "class Base(keras.Model):\n    pass\n\n\nclass Classifier(Base)"
    )
    assert [line for line, _ in findings(local_base.replace("COMPILE", ""), "TFP101")] == [12]
