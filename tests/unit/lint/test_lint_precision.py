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
