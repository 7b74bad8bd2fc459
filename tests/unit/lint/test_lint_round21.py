"""Classes found on held-out lint round 20 (after its figure was taken; now tuning material):

- TFP605 on batch norm whose train op comes from TF1's train-op helpers, which depend on UPDATE_OPS
  themselves (contrib.training / slim create_train_op, contrib.layers.optimize_loss) unless told
  ``update_ops=None``;
- TFP403 on ``model.save("x.ckpt")`` in a TF1 graph program that never names Keras (its model is its own
  object wrapping a tf.train.Saver);
- missed: ``np.lib.pad`` (NumPy 2 exports only submodules and a few tools from numpy.lib) and the Keras 2
  layer keywords ``batch_size=`` / ``weights=`` that Keras 3 layers refuse.
"""

from __future__ import annotations

import inspect
import textwrap

import numpy as np
import pytest

from tfpilot.lint.engine import lint_source
from tfpilot.lint.numpy_removed import NUMPY_LIB_KEPT
from tfpilot.lint.rules.tfp504_removed_keras_api import _LAYERS_TAKING, _REMOVED_LAYER_KEYWORDS


def _codes(source: str, path: str = "train.py") -> list[tuple[str, int]]:
    return [(f.code, int(f.location.split(":")[-2])) for f in lint_source(textwrap.dedent(source), path=path)]


BATCH_NORM = """\
import tensorflow as tf

def model_fn(x, labels, training):
    h = tf.layers.batch_normalization(tf.layers.dense(x, 8), training=training)
    loss = tf.losses.mean_squared_error(labels, tf.layers.dense(h, 1))
    optimizer = tf.train.AdamOptimizer(0.01)
    return {helper}
"""


@pytest.mark.parametrize(
    "helper",
    [
        "tf.contrib.training.create_train_op(loss, optimizer)",
        "tf.contrib.layers.optimize_loss(loss, tf.train.get_global_step(), learning_rate=0.01, optimizer='Adam')",
        "tf.contrib.slim.learning.create_train_op(loss, optimizer)",
    ],
)
def test_a_train_op_helper_that_runs_update_ops_is_no_tfp605(helper: str) -> None:
    assert "TFP605" not in {code for code, _ in _codes(BATCH_NORM.format(helper=helper))}


def test_a_train_op_helper_told_to_skip_update_ops_is_still_tfp605() -> None:
    source = BATCH_NORM.format(helper="tf.contrib.training.create_train_op(loss, optimizer, update_ops=None)")
    assert ("TFP605", 4) in _codes(source)


def test_save_of_a_tf1_programs_own_model_object_is_no_keras_save() -> None:
    source = """\
    import tensorflow as tf
    import model

    sess = tf.Session()
    model = model.model(sess, hps)
    model.save("logs/model_best_loss.ckpt")
    """
    assert "TFP403" not in {code for code, _ in _codes(source)}
    keras_file = textwrap.dedent(source).replace("import model\n", "import model\nfrom tensorflow import keras\n")
    assert "TFP403" in {code for code, _ in _codes(keras_file)}


def test_np_lib_functions_are_numpy2_removals_and_its_submodules_are_not() -> None:
    found = _codes(
        """\
        import numpy as np

        padded = np.lib.pad(x, ((0, 0), (2, 2)), "constant")
        windows = np.lib.stride_tricks.sliding_window_view(x, 3)
        """
    )
    assert ("TFP514", 3) in found
    assert [line for code, line in found if code == "TFP514"] == [3]
    findings = lint_source("import numpy as np\ny = np.lib.pad(x, 1)\n", path="a.py")
    assert any("np.pad" in f.message or "numpy.pad" in f.message for f in findings if f.code == "TFP514")


def test_numpy_lib_premise_on_the_installed_numpy() -> None:
    import numpy.lib.recfunctions  # noqa: F401 - submodules are attributes once imported
    import numpy.lib.user_array  # noqa: F401

    assert not hasattr(np.lib, "pad") and hasattr(np, "pad")
    assert all(hasattr(np.lib, name) for name in NUMPY_LIB_KEPT)


def test_keras2_layer_keywords_keras3_refuses() -> None:
    found = _codes(
        """\
        import tensorflow as tf

        model = tf.keras.Sequential([
            tf.keras.layers.Reshape([8, 1], input_shape=[8], batch_size=16),
            tf.keras.layers.Dense(4, weights=[w, b]),
            tf.keras.layers.Embedding(100, 8, weights=[matrix]),
        ])
        inputs = tf.keras.layers.Input((8,), batch_size=16)
        """
    )
    assert [line for code, line in found if code == "TFP504"] == [4, 5]


@pytest.mark.parametrize("keyword", sorted(_REMOVED_LAYER_KEYWORDS))
def test_keras3_layer_keyword_premise(keyword: str) -> None:
    import keras

    value = {"batch_input_shape": (None, 4), "batch_size": 4, "weights": [np.zeros((4, 3)), np.zeros(3)]}[keyword]
    with pytest.raises(ValueError, match="Unrecognized keyword arguments"):
        keras.layers.Dense(3, **{keyword: value})
    for name in _LAYERS_TAKING.get(keyword, ()):
        taking = keras.layers.Input if name == "Input" else getattr(keras.layers, name).__init__
        assert keyword in inspect.signature(taking).parameters, name


def test_a_layer_module_beside_a_train_op_helper_is_no_tfp605(tmp_path) -> None:
    layers = tmp_path / "model_layers.py"
    layers.write_text(
        "import tensorflow as tf\n\n"
        "def conv_bn(x, training):\n"
        "    return tf.layers.batch_normalization(tf.layers.conv2d(x, 8, 3), training=training)\n"
    )
    (tmp_path / "notes.py").write_text("# nothing here builds a train op\n")
    assert "TFP605" in {f.code for f in lint_source(layers.read_text(), path=str(layers))}
    (tmp_path / "model.py").write_text(
        "import tensorflow as tf\nimport model_layers\n\n"
        "def model_fn(x, loss, optimizer):\n"
        "    return tf.contrib.training.create_train_op(loss, optimizer)\n"
    )
    assert "TFP605" not in {f.code for f in lint_source(layers.read_text(), path=str(layers))}


def test_load_weights_by_name_outside_legacy_h5_is_tfp504() -> None:
    found = _codes(
        """\
        from tensorflow import keras

        model = keras.Sequential([keras.layers.Dense(2)])
        model.load_weights(path, by_name=is_hdf5(path), skip_mismatch=False)
        model.load_weights("w.weights.h5", by_name=True)
        model.load_weights("w.h5", by_name=True)
        model.load_weights(path, by_name=True)
        """
    )
    assert [line for code, line in found if code == "TFP504"] == [4, 5]


def test_load_weights_by_name_premise(tmp_path) -> None:
    import keras

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    path = str(tmp_path / "w.weights.h5")
    model.save_weights(path)
    with pytest.raises(ValueError, match="by_name"):
        model.load_weights(path, by_name=False)


def test_a_project_package_that_reexports_keras_and_tf_is_keras_and_tf(tmp_path) -> None:
    package = tmp_path / "asr"
    package.mkdir()
    (package / "__init__.py").write_text("import keras\nimport tensorflow as tf\n")
    (tmp_path / ".git").mkdir()
    layer = package / "bn.py"
    layer.write_text(
        "from asr import keras, tf\n\ndef cast(x, mean):\n    return tf.cast(x, keras.backend.dtype(mean))\n"
    )
    found = [(f.code, f.message) for f in lint_source(layer.read_text(), path=str(layer))]
    assert any(code == "TFP504" and "keras.backend.dtype" in message for code, message in found)


def test_a_private_member_keras3_sets_outside_init_is_no_tfp504() -> None:
    found = _codes(
        """\
        import keras

        class Checkpoint(keras.callbacks.ModelCheckpoint):
            def on_train_batch_end(self, batch, logs=None):
                super().on_train_batch_end(batch, logs)
                print(self._current_epoch)
        """
    )
    assert "TFP504" not in {code for code, _ in found}
