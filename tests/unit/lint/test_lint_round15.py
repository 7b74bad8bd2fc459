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
