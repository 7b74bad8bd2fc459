"""Classes found by issue 30's held-out round 12 (after its figure was recorded), each with a VALID case (what the
rule must leave alone) and an INVALID one (what it must still report), and premise tests that run the behaviour on
the installed TensorFlow / Keras. Written for tfpilot; no outside code is copied."""

from __future__ import annotations

import re
import textwrap

import keras
import pytest
import tensorflow as tf

from tfpilot.findings import Severity
from tfpilot.lint.engine import lint_source


def _found(source: str, code: str) -> list[tuple[int, Severity]]:
    return [
        (int(f.location.split(":")[-2]), f.severity)
        for f in lint_source(textwrap.dedent(source), path="c.py")
        if f.code == code
    ]


# --- TFP205: one finding per persistent tape block; a block run once at module level is a note -----------------

_TAPE_IN_STEP = """
    import tensorflow as tf

    def train_step(x, y, model, optimizer):
        with tf.GradientTape(persistent=True) as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            extra = tape.gradient(loss, x)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return extra
"""

_TAPE_IN_A_CELL = """
    import tensorflow as tf

    a = tf.Variable(0.0)
    b = tf.Variable(1.0)
    with tf.GradientTape(persistent=True) as tape:
        y = a * 3.0 + b
        s = tf.square(y)
        ds_dy = tape.gradient(s, y)
        dy_da = tape.gradient(y, a)
        grads = tape.gradient(s, [a, b])
"""


def test_a_persistent_tape_block_in_a_step_is_one_warning_however_many_gradients():
    # INVALID: the block is the cause; its second gradient call is not a second finding
    assert _found(_TAPE_IN_STEP, "TFP205") == [(7, Severity.WARNING)]


def test_a_persistent_tape_block_run_once_at_module_level_is_a_note():
    # VALID as a warning: a notebook cell printing chain-rule factors runs once
    assert _found(_TAPE_IN_A_CELL, "TFP205") == [(9, Severity.INFO)]


def test_premise_a_persistent_tape_records_the_gradient_it_computes_inside_its_block():
    x = tf.Variable(2.0)
    with tf.GradientTape(persistent=True) as tape:
        y = x * x
        dy = tape.gradient(y, x)  # recorded: the tape can differentiate it again
    assert float(tape.gradient(dy, x)) == pytest.approx(2.0)


# --- TFP504: Keras 2's private function builders ------------------------------------------------------------------

_PRIVATE_BUILDER = """
    import tensorflow as tf

    class Agent:
        def __init__(self):
            self.actor = tf.keras.Sequential([tf.keras.layers.Dense(2)])

        def train(self):
            self.actor.{call}
"""


def test_keras2_private_function_builder_is_reported():
    # INVALID: `_make_predict_function()` was Keras 2.2's threading workaround
    assert _found(_PRIVATE_BUILDER.format(call="_make_predict_function()"), "TFP504") == [(9, Severity.ERROR)]


def test_keras3_public_function_builder_is_left_alone():
    # VALID: Keras 3's TensorFlow trainer has a public make_predict_function
    assert _found(_PRIVATE_BUILDER.format(call="make_predict_function()"), "TFP504") == []


def test_premise_keras3_models_have_no_private_function_builders():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    for name in ("_make_predict_function", "_make_train_function", "_make_test_function"):
        assert not hasattr(model, name)
    assert callable(model.make_predict_function)


# --- TFP510: a regular expression that expects Keras 2's scoped `...:0` weight name -------------------------------

_REGEX_ON_WEIGHT_NAMES = """
    import re
    import keras

    model = keras.Sequential([keras.layers.Dense(2)])
    prefix = re.compile(r"(.*)/(dense|encoder)/(.+):0")
    first = prefix.match(model.weights[0].name)
    params = model.weights
    for index, (value, weight) in enumerate(zip([1, 2], params)):
        if re.match(r"(.*)/kernel:0", weight.name):
            print(index, value)
    by_path = prefix.match(model.weights[0].path)
    raw = tf_variable_names = [v for v in ["a:0"] if re.match(r"a:0", v)]
"""


def test_regex_for_scoped_names_on_keras_weights_is_reported():
    # INVALID: a compiled pattern on `model.weights[0].name`, re.match on a name from zip(..., model.weights)
    assert [line for line, _ in _found(_REGEX_ON_WEIGHT_NAMES, "TFP510")] == [7, 10]


def test_regex_on_weight_paths_and_other_strings_is_left_alone():
    # VALID: `.path` is the scoped name in Keras 3; a regex on plain strings is not about Keras weights
    source = _REGEX_ON_WEIGHT_NAMES.replace("model.weights[0].name", "model.weights[0].path").replace(
        "weight.name", "weight.path"
    )
    assert _found(source, "TFP510") == []


def test_premise_keras3_weight_names_never_match_a_scoped_pattern():
    layer = keras.layers.Dense(2, name="dense")
    layer.build((None, 3))
    pattern = re.compile(r"(.*)/(dense|encoder)/(.+):0")
    assert [w.name for w in layer.weights] == ["kernel", "bias"]
    assert not any(pattern.match(w.name) for w in layer.weights)


# --- TFP207: predict once per element of a comprehension ----------------------------------------------------------

_PREDICT_IN_COMPREHENSION = """
    import numpy as np
    import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    ensemble = [model, model]
    grid = np.zeros((2500, 2))
    per_point = [model.predict(point[None]) for point in grid]
    per_model = [member.predict(grid) for member in ensemble]
    twice = [model.predict(grid) for _ in range(2)]
"""


def test_predict_per_element_of_a_comprehension_is_reported():
    # INVALID: one predict per grid point; VALID in the same file: each model of an ensemble once, two calls
    assert [line for line, _ in _found(_PREDICT_IN_COMPREHENSION, "TFP207")] == [8]


# --- TFP103 (a round 11 miss): an optimizer made per call of a method while a tf.function method applies it ---------

_OPTIMIZER_PER_CALL = """
    import tensorflow as tf


    class Explainer:
        def __init__(self, learning_rate):
            self.w = tf.Variable(1.0)
            self.learning_rate = learning_rate
            self.steady = tf.keras.optimizers.SGD(learning_rate)
            self.configure()

        def configure(self):
            self.configured = tf.keras.optimizers.SGD(self.learning_rate)

        def _setup_subclass_optimizer(self):
            self.subclassed = tf.keras.optimizers.SGD(self.learning_rate)

        def explain(self, n):
            self.opt = tf.keras.optimizers.Adam(self.learning_rate)
            if self.lazy is None:
                self.lazy = tf.keras.optimizers.Adam(self.learning_rate)
            for _ in range(3):
                self.step(n)

        @tf.function
        def step(self, n):
            with tf.GradientTape() as tape:
                loss = (self.w * n) ** 2
            grads = tape.gradient(loss, [self.w])
            self.opt.apply_gradients(zip(grads, [self.w], strict=True))
            self.steady.apply_gradients(zip(grads, [self.w], strict=True))
            self.lazy.apply_gradients(zip(grads, [self.w], strict=True))
            self.configured.apply_gradients(zip(grads, [self.w], strict=True))
            self.subclassed.apply_gradients(zip(grads, [self.w], strict=True))
"""


def test_optimizer_made_per_call_and_applied_in_a_tf_function_method_is_reported():
    # INVALID: self.opt (line 19); VALID in the same class: made once in __init__, in a method __init__ calls, in a
    # setup method (a base class's __init__ calls it), or behind a creation guard
    assert _found(_OPTIMIZER_PER_CALL, "TFP103") == [(19, Severity.ERROR)]


def test_optimizer_made_per_call_for_an_eager_step_is_left_alone():
    # VALID: without tf.function every call uses the optimizer it is given
    assert _found(_OPTIMIZER_PER_CALL.replace("@tf.function", ""), "TFP103") == []


def test_premise_a_new_optimizer_per_call_breaks_a_traced_step():
    class Explainer:
        def __init__(self) -> None:
            self.w = tf.Variable(1.0)

        def explain(self, n: int) -> None:
            self.opt = keras.optimizers.Adam(0.1)
            for _ in range(2):
                self.step(n)

        @tf.function
        def step(self, n: int) -> None:
            with tf.GradientTape() as tape:
                loss = (self.w * n) ** 2
            grads = tape.gradient(loss, [self.w])
            self.opt.apply_gradients(zip(grads, [self.w], strict=True))

    explainer = Explainer()
    explainer.explain(1)
    with pytest.raises(ValueError, match="singleton tf.Variables"):
        explainer.explain(2)  # a new trace (another Python int) builds the new optimizer's slots in it
    explainer.explain(1)  # the first trace again: it applies the first optimizer, never the new one
    assert int(explainer.opt.iterations) == 0


# --- TFP401: a Lambda model from a factory, saved to a path its callers fill with `.h5` ------------------------------

_LAMBDA_FACTORY = """
    import numpy as np
    from tensorflow.keras.layers import Dense, Input, Lambda
    from tensorflow.keras.models import Model


    def actor(state_shape, bound):
        state = Input(shape=state_shape)
        scale = bound * np.ones(2)
        output = Lambda(lambda op: op * scale)(Dense(2, activation="tanh")(state))
        return Model(inputs=state, outputs=output)


    class Agent:
        def __init__(self):
            self.actor = actor((3,), 2.0)

        def save_model(self, path):
            self.actor.save(path)

        def train(self, episode):
            self.save_model("actor_episode{}.h5".format(episode))
"""


def test_lambda_model_saved_to_an_hdf5_path_its_callers_pass_is_reported():
    # INVALID: every call site fills `path` with an .h5 name
    assert [line for line, _ in _found(_LAMBDA_FACTORY, "TFP401")] == [19]


def test_lambda_model_saved_to_a_keras_path_its_callers_pass_is_left_alone():
    # VALID: the callers pass a .keras name
    assert _found(_LAMBDA_FACTORY.replace("{}.h5", "{}.keras"), "TFP401") == []


# --- TFP504: eager execution switched off in a file that runs a Keras 3 model ----------------------------------------

_EAGER_OFF = """
    import numpy as np
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler()
    scaler.fit(np.ones((4, 3)))
    model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 3)), np.ones((4, 2)))
"""


def test_eager_execution_switched_off_before_keras_fit_is_one_finding_at_the_switch():
    # INVALID: reported once, at the switch, naming the model's fit (not the scaler's)
    found = [f for f in lint_source(textwrap.dedent(_EAGER_OFF), path="c.py") if f.code == "TFP504"]
    assert [int(f.location.split(":")[-2]) for f in found] == [5]
    assert "`model.fit()` (line 12) raises RuntimeError" in found[0].message


def test_eager_execution_switched_off_for_graph_code_without_keras_runs_is_left_alone():
    # VALID: TF1 graph code and a scikit-learn fit; no Keras model is run
    source = _EAGER_OFF.replace("    model.fit(np.ones((4, 3)), np.ones((4, 2)))\n", "")
    assert _found(source, "TFP504") == []


def test_premise_keras3_fit_refuses_to_run_with_eager_execution_off():
    import subprocess
    import sys

    program = (
        "import numpy as np, tensorflow as tf\n"
        "tf.compat.v1.disable_eager_execution()\n"
        "import keras\n"
        "m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])\n"
        "m.compile(optimizer='adam', loss='mse')\n"
        "try:\n    m.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)\nexcept RuntimeError as e:\n    print('RuntimeError', e)\n"
        "print(type(m.train_on_batch(np.ones((4, 3)), np.ones((4, 2)))).__name__)\n"
    )
    ran = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert "RuntimeError `tf.data.Dataset` only supports Python-style iteration in eager mode" in ran.stdout, ran
    assert ran.stdout.strip().endswith("SymbolicTensor"), ran.stdout
