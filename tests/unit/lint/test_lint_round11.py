"""Classes found by issue 30's held-out round 11 (after its figure was recorded), each with a VALID case (what the
rule must leave alone) and an INVALID one (what it must still report). Written for tfpilot; no outside code is
copied."""

from __future__ import annotations

import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfpilot.lint.engine import lint_paths, lint_source


def _lines(source: str, code: str) -> list[int]:
    return [int(f.location.split(":")[-2]) for f in lint_source(textwrap.dedent(source), path="c.py") if f.code == code]


# --- a project's utility module holds `import tensorflow as tf`; the others star-import it ---------------------


def _project(root: Path, star: str) -> Path:
    (root / "utils").mkdir()
    (root / "utils" / "__init__.py").write_text("")
    (root / "utils" / "tf_utils.py").write_text(
        "import tensorflow as tf\nimport numpy as np\n\n\ndef helper():\n    pass\n"
    )
    (root / "layers.py").write_text(
        f"{star}\n\n\nclass Conv1d(tf.keras.layers.Layer):\n    def build(self, input_shape):\n"
        "        self.w = self.add_weight('w', shape=[2, 2])\n"
    )
    return root / "layers.py"


def test_names_a_project_module_binds_come_with_its_star_import(tmp_path):
    # INVALID: `tf` is tensorflow through `from utils.tf_utils import *`: the Keras 2 add_weight is reported
    path = _project(tmp_path, "from utils.tf_utils import *")
    report = lint_paths([path])
    assert [f.code for f in report.findings if f.code == "TFP504"] == ["TFP504"]


def test_a_star_import_of_a_library_binds_nothing_it_cannot_see(tmp_path):
    # VALID: a star import from a module that is not in the project tells nothing: `tf` stays unknown
    path = _project(tmp_path, "from some_installed_library import *")
    assert not [f for f in lint_paths([path]).findings if f.code == "TFP504"]


# --- TFP504: Keras 2's add_weight options --------------------------------------------------------------------

_ADD_WEIGHT = """
    import tensorflow as tf


    class Norm(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.gamma = self.add_weight(
                name="gamma",
                shape=[4],
                OPTION,
            )
"""


@pytest.mark.parametrize("option", ["experimental_autocast=False", "use_resource=True", "partitioner=None"])
def test_keras2_add_weight_options_are_reported_at_the_keyword(option):
    assert _lines(_ADD_WEIGHT.replace("OPTION", option), "TFP504") == [10]


@pytest.mark.parametrize("option", ["autocast=False", "trainable=False", "aggregation='mean'"])
def test_keras3_add_weight_options_are_left_alone(option):
    assert _lines(_ADD_WEIGHT.replace("OPTION", option), "TFP504") == []


def test_keras3_refuses_experimental_autocast_in_add_weight():
    class Norm(keras.layers.Layer):
        def build(self, input_shape):
            self.gamma = self.add_weight(shape=(2,), experimental_autocast=False)

    with pytest.raises(TypeError, match="experimental_autocast"):
        Norm()(np.ones((1, 2), "float32"))


# --- TFP507: the loop variable over a list of Keras layers ----------------------------------------------------

_LOOP = """
    import tensorflow as tf


    class Block(tf.keras.layers.Layer):
        def call(self, x, training, mask):
            return x


    class Net(tf.keras.Model):
        def __init__(self, n):
            super().__init__()
            self.blocks = [Block() for _ in range(n)]
            self.names = ["a" for _ in range(n)]

        def call(self, x, training=False, pasts=None):
            LOOP
            return x
"""


@pytest.mark.parametrize(
    "loop",
    [
        "for block, past in zip(self.blocks, pasts):\n                x = block(x, training, None)",
        "for i, block in enumerate(self.blocks):\n                x = block(x, training, None)",
        "for block in self.blocks:\n                x = block(x, training, None)",
    ],
)
def test_a_training_flag_passed_positionally_to_each_layer_of_a_list_is_reported(loop):
    assert _lines(_LOOP.replace("LOOP", loop), "TFP507") == [18]


def test_a_loop_over_a_list_of_plain_values_is_left_alone():
    loop = "for name, past in zip(self.names, pasts):\n                x = name(x, training, None)"
    assert _lines(_LOOP.replace("LOOP", loop), "TFP507") == []


# --- TFP614: Keras 2's per-example metric functions under tf.metrics --------------------------------------------


def test_tf_metrics_mean_absolute_error_points_at_the_keras_function_tf_keeps():
    source = "import tensorflow as tf\n\nmae = tf.metrics.mean_absolute_error([1.0, 2.0], [1.5, 2.5])\n"
    (finding,) = [f for f in lint_source(source, path="m.py") if f.code == "TFP614"]
    assert "tf.keras.losses.MAE(y_true, y_pred)" in finding.message
    # the premise: the TF 2 name is gone and the replacement the message gives computes the same thing
    assert not hasattr(tf.metrics, "mean_absolute_error")
    assert float(tf.reduce_mean(tf.keras.losses.MAE([1.0, 2.0], [1.5, 2.5]))) == pytest.approx(0.5)
    assert hasattr(keras.losses, "mean_absolute_error") and hasattr(keras.losses, "mean_squared_error")


# --- TFP403: a model saved under its own Keras name ------------------------------------------------------------


def test_a_model_saved_under_its_own_name_is_reported_and_keras_3_refuses_it(tmp_path, monkeypatch):
    source = """
        import tensorflow as tf

        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.save(model.name)
        model.save(model.name + ".keras")


        class Run:
            name = "experiment"


        model.save(Run().name)
    """
    assert _lines(source, "TFP403") == [5]
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError):
        model.save(model.name)


def test_a_checkpoint_path_joined_from_a_parameter_every_caller_fills_with_a_model_name():
    source = """
        import os

        import tensorflow as tf


        def checkpoint(model_name, root="experiments"):
            return tf.keras.callbacks.ModelCheckpoint(filepath=os.path.join(root, model_name), save_best_only=True)


        def kept(model_name, root="experiments"):
            return tf.keras.callbacks.ModelCheckpoint(filepath=os.path.join(root, model_name), save_best_only=True)


        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.fit(x, y, callbacks=[checkpoint(model_name=model.name)])
        model.fit(x, y, callbacks=[kept(model_name=model.name + ".keras"), kept(model_name=chosen)])
    """
    # INVALID at line 8; VALID at line 12 (one caller adds .keras, another passes a name this file cannot read)
    assert _lines(source, "TFP403") == [8]
