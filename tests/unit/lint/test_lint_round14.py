"""Classes found on held-out lint round 14 (after its figure was taken; now tuning material).

- a file whose `keras` is TensorFlow's private Keras 2 copy (`from tensorflow.python import keras`, MusicTransformer):
  TFP509 reports that import, and the Keras 3 claims on its objects are notes (the copy is Keras 2);
- strategy.experimental_run_v2 / experimental_make_numpy_dataset: gone from TF 2.21's strategies (TFP614);
- TF-only methods on a Keras 3 layer's weight (`self.conv.kernel.get_shape()`, keras-io's PixelCNN shape) (TFP504).
Each premise runs on the installed TensorFlow / Keras.
"""

from __future__ import annotations

import textwrap

import keras
import pytest
import tensorflow as tf

from tfpilot.lint.engine import lint_source


def _found(source: str) -> list:
    return lint_source(textwrap.dedent(source), path="case.py")


def _line(finding) -> int:
    return int(finding.location.split(":")[-2])


PRIVATE_COPY = """
import tensorflow as tf
from tensorflow.python import keras


class Music(keras.Model):
    def save(self, root):
        self.save_weights(root + "/ckpt", save_format="tf")

    def reset(self):
        self.metric.reset_states()
"""


def test_a_file_on_tensorflows_private_keras_copy_gets_the_import_reported_and_keras3_claims_as_notes():
    found = _found(PRIVATE_COPY)
    imports = [f for f in found if f.code == "TFP509"]
    assert [_line(f) for f in imports] == [3]
    assert "private, frozen copy of Keras 2" in imports[0].message
    keras3_claims = [f for f in found if f.code in ("TFP402", "TFP406", "TFP501")]
    assert {f.code for f in keras3_claims} == {"TFP402", "TFP406", "TFP501"}
    assert all(f.severity.value == "info" and "private Keras 2 copy" in f.message for f in keras3_claims)


def test_the_same_code_on_keras_3_keeps_its_claims():
    found = _found(PRIVATE_COPY.replace("from tensorflow.python import keras", "import keras"))
    assert "TFP509" not in [f.code for f in found]
    claims = [f for f in found if f.code in ("TFP402", "TFP406", "TFP501")]
    assert claims and not any("private Keras 2 copy" in f.message for f in claims)


def test_experimental_run_v2_is_gone_from_tf_2_21s_strategies_and_reported():
    strategy = tf.distribute.get_strategy()
    assert not hasattr(strategy, "experimental_run_v2") and hasattr(strategy, "run")
    assert not hasattr(strategy, "experimental_make_numpy_dataset")
    found = _found(
        """
        import tensorflow as tf

        class Trainer:
            def step(self, batch):
                return self._strategy.experimental_run_v2(self._train, args=(batch,))
        """
    )
    assert [(f.code, _line(f)) for f in found if f.code == "TFP614"] == [("TFP614", 6)]
    guarded = _found(
        """
        import tensorflow as tf

        def step(strategy, fn, batch):
            if hasattr(strategy, "run"):
                return strategy.run(fn, args=(batch,))
            else:
                return strategy.experimental_run_v2(fn, args=(batch,))
        """
    )
    assert "TFP614" not in [f.code for f in guarded]


@pytest.mark.parametrize("method", ["get_shape", "eval", "initialized_value", "read_value"])
def test_tf_only_methods_of_a_keras_layer_weight_raise_and_are_reported(method):
    conv = keras.layers.Conv2D(4, 3)
    conv.build((None, 8, 8, 1))
    with pytest.raises(AttributeError):
        getattr(conv.kernel, method)()
    assert tf.Variable([1.0]).get_shape() == (1,)  # a tf.Variable has it: not reported
    found = _found(
        f"""
        import numpy as np
        import tensorflow as tf
        from tensorflow.keras import layers


        class MaskedConv(layers.Layer):
            def __init__(self, **kwargs):
                super().__init__()
                self.conv = layers.Conv2D(**kwargs)

            def build(self, input_shape):
                self.conv.build(input_shape)
                self.mask = np.zeros(self.conv.kernel.{method}())


        class Plain(tf.Module):
            def __init__(self):
                self.kernel = tf.Variable(tf.zeros([3, 3]))
                self.inner = tf.Module()

            def shape(self):
                return self.kernel.{method}(), self.inner.kernel.{method}()
        """
    )
    assert [(f.code, _line(f)) for f in found if f.code == "TFP504"] == [("TFP504", 14)]


def test_tf_compat_v1_keras_is_keras_3_on_tf_2_21_and_its_removals_are_reported():
    """keras-ocr's `tf.compat.v1.keras.backend.set_session(...)`: compat.v1's keras is the same Keras 3 as tf.keras."""
    assert tf.compat.v1.keras.layers.Dense is keras.layers.Dense
    assert not hasattr(tf.compat.v1.keras.backend, "set_session")
    found = _found(
        """
        import tensorflow as tf

        config = tf.compat.v1.ConfigProto()
        tf.compat.v1.keras.backend.set_session(tf.compat.v1.Session(config=config))
        """
    )
    assert ("TFP504", 5) in [(f.code, _line(f)) for f in found]
