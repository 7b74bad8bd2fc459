"""Classes found on held-out lint round 15 (after its figure was taken; now tuning material).

- `strategy.experimental_run_v2` behind `if self.cur_tf_ver == '2.0.0':` (stylegan2-tf-2.x): the branch runs
  only on TF 2.0.0, where the method exists, so it breaks nothing on TF 2.21. A name bound once to
  `tf.__version__`, or named as TensorFlow's version (`tf_ver`, `cur_tf_version`), decides the test as
  `tf.__version__` itself does;
- raw `tf.Variable`s in several Keras layers of one file (six layers in stylegan2's custom_layers.py): one
  finding per layer, each its own fix, where there was one per file.
"""

from __future__ import annotations

import textwrap

import pytest

from tfpilot.lint.engine import lint_source


def _codes(source: str) -> list[tuple[str, int]]:
    return [
        (finding.code, int(finding.location.split(":")[-2]))
        for finding in lint_source(textwrap.dedent(source), path="case.py")
        if finding.code in ("TFP614", "TFP504")
    ]


GUARDED = """
import tensorflow as tf


class Trainer:
    def __init__(self, params):
        self.cur_tf_ver = {binding}

    def step(self, strategy, inputs):
        if self.cur_tf_ver {test}:
            return strategy.experimental_run_v2(self.fn, args=(inputs,))
        return strategy.run(self.fn, args=(inputs,))
"""


@pytest.mark.parametrize(
    "binding, test, reported",
    [
        ("tf.__version__", "== '2.0.0'", False),  # bound once to the version in this file
        ("params['cur_tf_ver']", "== '2.0.0'", False),  # set elsewhere: its name says what it is
        ("params['cur_tf_ver']", "!= '2.0.0'", True),  # the branch TF 2.21 runs: reported
        ("params['cur_tf_ver']", "== '2.21.0' or True", True),  # not a pure version test: judged as any code
    ],
)
def test_a_removed_api_behind_a_version_test_that_excludes_tf_2_21_breaks_nothing(binding, test, reported):
    found = _codes(GUARDED.format(binding=binding, test=test))
    assert (("TFP614", 11) in found) is reported, found


def test_an_app_version_is_no_tensorflow_version():
    source = GUARDED.format(binding="params['app']", test="== '2.0.0'").replace("cur_tf_ver", "app_version")
    assert ("TFP614", 11) in _codes(source)


LAYERS = """
import tensorflow as tf


class Bias(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.b = tf.Variable(tf.zeros([input_shape[-1]]))
        self.c = tf.Variable(tf.zeros([input_shape[-1]]))


class Noise(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.strength = tf.Variable(0.0)


class Scale(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.s = self.add_weight(shape=(), initializer="ones")
"""


def test_each_keras_layer_holding_raw_variables_is_one_finding_at_its_first():
    found = [line for code, line in _codes(LAYERS) if code == "TFP504"]
    assert found == [7, 13]  # Bias (its second variable counted in the message), Noise; Scale uses add_weight
    message = next(f.message for f in lint_source(textwrap.dedent(LAYERS), path="case.py") if f.code == "TFP504")
    assert "(and 1 more in this class)" in message


def test_premise_keras_3_runs_a_layers_call_without_autograph_so_an_if_on_a_tensor_fails_to_build():
    import keras
    import tensorflow as tf

    class Mixing(keras.layers.Layer):
        def call(self, x):
            if tf.random.uniform([]) < 0.5:
                return x * 2
            return x

    with pytest.raises(tf.errors.OperatorNotAllowedInGraphError):
        keras.Sequential([keras.Input((3,)), Mixing()])
    found = lint_source(
        textwrap.dedent(
            """
            import tensorflow as tf


            class Mixing(tf.keras.layers.Layer):
                def call(self, x):
                    if tf.random.uniform([]) < 0.5:
                        return x * 2
                    return tf.cond(tf.reduce_sum(x) > 0, lambda: x, lambda: -x)
            """
        ),
        path="case.py",
    )
    assert [(f.code, f.severity.value, int(f.location.split(":")[-2])) for f in found if f.code == "TFP513"] == [
        ("TFP513", "error", 7)
    ]


def test_a_tensor_test_in_a_method_that_call_runs_is_reported_there():
    source = """
    import tensorflow as tf


    class Generator(tf.keras.Model):
        def mixing(self, w):
            if tf.random.uniform([], 0.0, 1.0) < self.prob:
                return w * 2
            return w

        def unused(self, w):
            if tf.reduce_sum(w) > 0:
                return w
            return -w

        def call(self, inputs):
            return self.mixing(inputs)
    """
    found = [f for f in lint_source(textwrap.dedent(source), path="case.py") if f.code == "TFP513"]
    assert [int(f.location.split(":")[-2]) for f in found] == [7]  # `unused` is no part of call()
    assert "mixing(), which call() runs" in found[0].message
