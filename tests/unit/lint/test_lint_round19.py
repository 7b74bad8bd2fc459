"""Classes added in the nineteenth session: TensorFlow ops that Keras 3 refuses on KerasTensors when the op sits
in a block helper the model-building code calls (`def conv_block(x): ... tf.nn.relu(x)`), in the same file or
in another module of the project (FILM's `util.py` helpers, lint round 17)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tfpilot.lint.engine import lint_source


def _codes(source: str, path: str = "case.py") -> set[tuple[str, int]]:
    return {(f.code, _line(f)) for f in lint_source(textwrap.dedent(source), path=path)}


def _line(finding) -> int:  # type: ignore[no-untyped-def]
    return int(finding.location.split(":")[-2])


def test_premise_a_tensorflow_op_in_a_helper_called_on_a_keras_input_raises():
    keras = pytest.importorskip("keras")
    tf = pytest.importorskip("tensorflow")

    def conv_block(x):
        x = keras.layers.Dense(4)(x)
        return tf.nn.relu(x)

    with pytest.raises(ValueError, match="KerasTensor cannot be used as input to a TensorFlow function"):
        conv_block(keras.Input((3,)))


BLOCKS = """
import tensorflow as tf
from tensorflow import keras


def conv_block(x, filters):
    x = keras.layers.Conv2D(filters, 3, padding="same")(x)
    return tf.nn.relu(x)


def keras_block(x):
    return keras.layers.ReLU()(x)


def helper(t):
    return tf.nn.relu(t)


class Block(keras.layers.Layer):
    def call(self, x):
        return helper(x)


def build():
    inputs = keras.Input((32, 32, 3))
    x = conv_block(inputs, 16)
    x = keras_block(x)
    x = Block()(x)
    x = keras.layers.Lambda(lambda t: helper(t))(x)
    return keras.Model(inputs, x)
"""


def test_an_op_in_a_helper_of_the_file_is_reported_where_a_caller_gives_it_a_keras_tensor():
    found = {line for rule, line in _codes(BLOCKS) if rule == "TFP504"}
    # conv_block's relu; not `helper`, whose callers are a Layer's call and a Lambda (real tensors)
    assert found == {8}


def test_a_helper_called_only_with_real_tensors_is_left_alone():
    source = """
    import tensorflow as tf

    def helper(t):
        return tf.nn.relu(t)

    def step(batch):
        return helper(tf.constant(batch))

    inputs = tf.keras.Input((3,))
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(2)(inputs))
    """
    assert not {line for rule, line in _codes(source) if rule == "TFP504"}


def test_a_helper_of_another_module_is_reported_at_the_call_that_gives_it_a_keras_tensor(tmp_path: Path):
    package = tmp_path / "models"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "util.py").write_text(
        "import tensorflow as tf\n\n\ndef concat_all(xs):\n    return tf.concat(xs, axis=-1)\n\n\n"
        "def scale(x, k):\n    return tf.keras.layers.Rescaling(k)(x)\n"
    )
    model = package / "net.py"
    source = (
        "import tensorflow as tf\nfrom . import util\nfrom .util import concat_all\n\n\n"
        "def build():\n    a = tf.keras.Input((8,))\n    b = util.scale(a, 2.0)\n"
        "    c = concat_all([a, b])\n    return tf.keras.Model(a, c)\n"
    )
    model.write_text(source)
    findings = [f for f in lint_source(source, path=str(model)) if f.code == "TFP504"]
    assert [_line(f) for f in findings] == [9]  # concat_all's tf.concat; util.scale uses a Keras layer
    assert "util.py:5" in findings[0].message
    relative = source.replace("from .util import concat_all\n", "").replace("concat_all(", "util.concat_all(")
    model.write_text(relative)
    assert [_line(f) for f in lint_source(relative, path=str(model)) if f.code == "TFP504"] == [8]


def test_a_refused_keyword_is_reported_on_its_own_line_in_a_call_over_many_lines():
    # round 18: `fit(..., workers=...)` and `BatchNormalization(..., fused=False)` pointed at the call's first line
    source = """
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    norm = tf.keras.layers.BatchNormalization(
        momentum=0.9,
        fused=False,
    )
    model.fit(
        x,
        epochs=3,
        workers=4,
    )
    total = tf.reduce_sum(
        x,
        keep_dims=True,
    )
    """
    codes = _codes(source)
    assert ("TFP504", 7) in codes and ("TFP504", 12) in codes and ("TFP614", 16) in codes
    assert ("TFP504", 5) not in codes and ("TFP504", 9) not in codes


def test_the_tf1_training_api_under_plain_tf_is_a_removed_name_with_advice_of_its_own():
    source = """
    import tensorflow as tf

    tf.reset_default_graph()
    opt = tf.train.AdamOptimizer(1e-3)
    init = tf.global_variables_initializer()
    """
    findings = {_line(f): f for f in lint_source(textwrap.dedent(source)) if f.code == "TFP614"}
    assert sorted(findings) == [4, 5, 6]
    assert "keras.optimizers.Adam" in findings[5].message and "1e-8" in findings[5].message
    assert "initialise when they are created" in findings[6].message
    assert "TFP609" not in {f.code for f in lint_source(textwrap.dedent(source))}


def test_batch_norm_in_a_model_module_is_left_to_the_training_module_beside_it_that_depends_on_update_ops(
    tmp_path: Path,
):
    model = "import tensorflow as tf\n\n\ndef net(x, training):\n    return tf.layers.batch_normalization(x, training=training)\n"
    (tmp_path / "resnet.py").write_text(model)
    assert ("TFP605", 5) in _codes(model, path=str(tmp_path / "resnet.py"))  # nothing runs its updates yet
    (tmp_path / "train.py").write_text(
        "import tensorflow as tf\nwith tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):\n"
        "    op = opt.minimize(loss)\n"
    )
    assert ("TFP605", 5) not in _codes(model, path=str(tmp_path / "resnet.py"))
    # a file that builds its own train op without the dependency is still reported
    trains = model + "\nop = tf.train.AdamOptimizer().minimize(loss)\n"
    assert ("TFP605", 5) in _codes(trains, path=str(tmp_path / "resnet.py"))


def test_premise_keras3_refuses_a_slash_in_a_layer_or_model_name_but_not_in_a_metrics():
    keras = pytest.importorskip("keras")
    for make in (lambda: keras.layers.Conv2D(3, 1, name="p6/conv"), lambda: keras.Input((3,), name="a/b")):
        with pytest.raises(ValueError, match="cannot contain character `/`"):
            make()
    keras.metrics.Mean(name="loss/total")  # metrics keep it


def test_a_slash_in_a_keras_layer_name_is_reported_once_per_file():
    source = """
    import tensorflow as tf
    from tensorflow.keras import layers

    def block(x, name):
        x = layers.Conv2D(8, 3, name=f"{name}/conv")(x)
        x = layers.BatchNormalization(name=name + "/bn")(x)
        return layers.Dense(2, name="head/out")(x)

    mean = tf.keras.metrics.Mean(name="loss/total")
    scope = tf.name_scope("a/b")
    """
    assert [line for code, line in _codes(source) if code == "TFP504"] == [6]


def test_a_keras2_optimizer_subclass_reading_set_hyper_is_reported():
    source = """
    import tensorflow as tf

    class LARS(tf.keras.optimizers.Optimizer):
        def __init__(self, learning_rate=0.1, name="LARS"):
            super().__init__(name)
            self._set_hyper("learning_rate", learning_rate)
    """
    assert ("TFP504", 7) in _codes(source)
    keras = pytest.importorskip("keras")
    assert not hasattr(keras.optimizers.Optimizer(0.1), "_set_hyper")


def test_reset_states_on_a_metric_held_in_a_dict_or_list_of_keras_metrics():
    source = """
    import tensorflow as tf

    names = ["loss", "accuracy"]
    metric_list = {s: tf.keras.metrics.Mean(name=s) for s in names}
    trackers = [tf.keras.metrics.Mean(), tf.keras.metrics.AUC()]
    others = {s: make(s) for s in names}
    for m in names:
        metric_list[m].reset_states()
    trackers[0].reset_states()
    others["loss"].reset_states()
    """
    lines = {line for code, line in _codes(source) if code == "TFP501"}
    assert lines == {9, 10}


def test_a_weights_checkpoint_name_chosen_by_a_conditional_is_read_where_both_names_end_alike():
    source = """
    import os
    from tensorflow import keras

    a = keras.callbacks.ModelCheckpoint(
        os.path.join(d, f"{n}_{{epoch:02d}}_{{val_loss:.4f}}.h5" if v else f"{n}_{{epoch:02d}}.h5"),
        save_weights_only=True,
    )
    b = keras.callbacks.ModelCheckpoint(
        os.path.join(d, "m.weights.h5" if v else "m.h5"), save_weights_only=True
    )
    """
    lines = {line for code, line in _codes(source) if code == "TFP406"}
    assert 5 in lines and 9 not in lines  # the second may be either: not judged


def test_premise_keras3_refuses_float_layer_sizes_and_step_counts():
    keras = pytest.importorskip("keras")
    np = pytest.importorskip("numpy")
    with pytest.raises(ValueError, match="positive integer"):
        keras.layers.Dense(4 / 2)
    with pytest.raises(ValueError, match="positive integer"):
        keras.layers.Embedding(10 / 1, 4)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    with pytest.raises(TypeError, match="float"):
        model.evaluate(np.zeros((4, 2)), np.zeros((4, 1)), steps=4 / 2, verbose=0)


def test_a_true_division_given_as_a_layer_size_or_a_step_count_is_reported_once_per_file():
    source = """
    import tensorflow as tf

    head = tf.keras.layers.Dense(units / 2)
    conv = tf.keras.layers.Conv2D(filters / 2, 3)
    steps = n / batch_size
    model.fit(data, steps_per_epoch=steps, validation_steps=steps)
    model.evaluate(data, steps=n // batch_size)
    """
    lines = sorted(line for code, line in _codes(source) if code == "TFP504")
    assert lines == [4, 7]  # the Dense size, the first float step count; Conv2D casts its own
