"""Classes added in the twentieth session (lint round 19's held-out course code and BERT):

- a solution snippet that a notebook pulls in with ``%load`` runs in the notebook's namespace, so the
  notebook's imports are its imports (lint.loaded_snippets); an orphaned snippet still means TensorFlow by
  ``tf`` and NumPy by ``np``;
- ``tf.nn.dropout(keep_prob=...)`` is an error at the keyword (TypeError on every TF 2 call);
- TensorFlow ops on KerasTensors are reported once per model-building function, not once per file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tfpilot.findings import Severity
from tfpilot.lint.engine import lint_source
from tfpilot.lint.loaded_snippets import loader_imports


def _found(path: Path) -> set[tuple[str, int]]:
    return {(f.code, int(f.location.split(":")[-2])) for f in lint_source(path.read_text(), path=str(path))}


def _notebook(cells: list[str]) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "metadata": {}, "source": cell.splitlines(keepends=True), "outputs": []}
                for cell in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 4,
        }
    )


SNIPPET = """\
# %load solutions/keras_adam.py
model = Sequential()
model.add(Dense(10, activation="relu"))
optimizer = optimizers.Adam(lr=0.001)
labels = np.array(names, dtype=np.object)
"""


def test_a_snippet_loaded_by_a_notebook_has_the_notebooks_imports(tmp_path: Path) -> None:
    (tmp_path / "solutions").mkdir()
    snippet = tmp_path / "solutions" / "keras_adam.py"
    snippet.write_text(SNIPPET)
    (tmp_path / "Intro.ipynb").write_text(
        _notebook(
            [
                "import numpy as np\nfrom tensorflow.keras.models import Sequential\n"
                "from tensorflow.keras.layers import Dense\nfrom tensorflow.keras import optimizers\n",
                "%load solutions/keras_adam.py\n",
            ]
        )
    )
    assert loader_imports(str(snippet))["optimizers"] == "tensorflow.keras.optimizers"
    found = _found(snippet)
    assert ("TFP505", 4) in found  # Keras 3's Adam refuses lr=
    assert ("TFP514", 5) in found  # np.object: NumPy 2 has none


def test_the_same_snippet_with_no_loader_is_left_alone(tmp_path: Path) -> None:
    # nothing says what `optimizers` is: a standalone file that imports nothing is not guessed at
    snippet = tmp_path / "keras_adam.py"
    snippet.write_text(SNIPPET.replace("np.", "numpy_alias."))
    assert _found(snippet) == set()


def test_an_orphaned_snippet_means_tensorflow_by_tf(tmp_path: Path) -> None:
    snippet = tmp_path / "tf_train.py"
    snippet.write_text(
        "keep_prob = tf.placeholder(tf.float32)\nh = tf.nn.dropout(h, keep_prob)\nwith tf.Session() as sess:\n"
        "    sess.run(init)\n"
    )
    found = _found(snippet)
    assert {("TFP602", 1), ("TFP615", 2), ("TFP601", 3)} <= found


def test_a_file_that_binds_tf_itself_is_not_given_tensorflow(tmp_path: Path) -> None:
    snippet = tmp_path / "frames.py"
    snippet.write_text("def frame(tf):\n    with tf.Session() as s:\n        return s\n")
    assert _found(snippet) == set()


def test_premise_tf_nn_dropout_has_no_keep_prob() -> None:
    tf = pytest.importorskip("tensorflow")
    with pytest.raises(TypeError, match="keep_prob"):
        tf.nn.dropout(tf.ones((2, 2)), keep_prob=0.9)


def test_keep_prob_keyword_is_an_error_at_the_keyword() -> None:
    source = (
        "import tensorflow as tf\n\ndef f(h):\n    return tf.nn.dropout(h,\n                         keep_prob=0.9)\n"
    )
    [finding] = [f for f in lint_source(source, path="bert.py") if f.code == "TFP615"]
    assert finding.severity is Severity.ERROR
    assert finding.location.split(":")[-2] == "5"


GENERATOR_AND_DISCRIMINATOR = """
import tensorflow as tf
from tensorflow import keras


def generator():
    h = inputs = keras.Input(shape=(8, 8, 3))
    h = keras.layers.Conv2D(4, 3)(h)
    h = tf.nn.relu(h)
    h = keras.layers.Conv2D(3, 3)(h)
    h = tf.tanh(h)
    return keras.Model(inputs, h)


def discriminator():
    h = inputs = keras.Input(shape=(8, 8, 3))
    h = keras.layers.Conv2D(4, 3)(h)
    h = tf.nn.leaky_relu(h, alpha=0.2)
    return keras.Model(inputs, h)
"""


def test_symbolic_ops_are_reported_once_per_model_building_function() -> None:
    findings = [f for f in lint_source(textwrap.dedent(GENERATOR_AND_DISCRIMINATOR), path="module.py")]
    symbolic = sorted(int(f.location.split(":")[-2]) for f in findings if "KerasTensor" in f.message)
    assert symbolic == [9, 18]  # the generator's first op (its second counted in the message), the discriminator's
    first = next(f for f in findings if f.location.split(":")[-2] == "9")
    assert "(and 1 more in this function)" in first.message


# --- Keras 2's own modules (`from keras.utils.data_utils import get_file`) -------------------------------------


def test_every_removed_keras2_module_in_the_table_fails_to_import_under_both_namespaces() -> None:
    pytest.importorskip("keras")
    from tfpilot.lint.keras2_removed_data import GONE_KERAS2_MODULES

    assert "utils.data_utils" in GONE_KERAS2_MODULES and "layers.recurrent" in GONE_KERAS2_MODULES
    # In a process of its own: a failed `import tensorflow.keras.saving.x` can leave `tensorflow.keras.saving`
    # resolvable behind it, which another test of this worker (the generated names' premise) would then see.
    script = (
        "import importlib, sys\n"
        "imported = []\n"
        "for module in sys.argv[1:]:\n"
        "    for namespace in ('keras', 'tensorflow.keras'):\n"
        "        try:\n"
        "            importlib.import_module(namespace + '.' + module)\n"
        "        except ImportError:\n"
        "            continue\n"
        "        imported.append(namespace + '.' + module)\n"
        "print(imported)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *GONE_KERAS2_MODULES], capture_output=True, text=True, timeout=600, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    "line",
    [
        "from keras.utils.data_utils import get_file",
        "from tensorflow.keras.layers.recurrent import LSTM",
        "import keras.engine.topology",
    ],
)
def test_an_import_from_a_removed_keras2_module_is_reported(line: str) -> None:
    findings = [f for f in lint_source(f"import tensorflow as tf\n{line}\n", path="lm.py") if f.code == "TFP504"]
    assert [f.location.split(":")[-2] for f in findings] == ["2"]


def test_an_import_from_a_kept_module_is_left_alone() -> None:
    source = "import tensorflow as tf\nfrom keras.preprocessing.sequence import pad_sequences\nfrom keras.utils import get_file\n"
    assert [f for f in lint_source(source, path="lm.py") if f.code == "TFP504"] == []


# --- a notebook cell that does not parse stops only itself -----------------------------------------------------


def test_a_notebook_with_an_exercise_cell_that_does_not_parse_is_checked_everywhere_else(tmp_path: Path) -> None:
    from tfpilot.lint.engine import lint_paths

    notebook = tmp_path / "siamese.ipynb"
    notebook.write_text(
        _notebook(
            [
                "import tensorflow as tf\n",
                "class SharedConv(tf.keras.Model):\n    def call(self, inputs):\n        # TODO\n",
                "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmodel.compile('sgd', 'mse')\n"
                "model.fit_generator(gen, epochs=3)\n",
            ]
        )
    )
    findings = lint_paths([notebook]).findings
    codes = {f.code for f in findings}
    assert "TFP504" in codes  # fit_generator, in the cell after the broken one
    [note] = [f for f in findings if f.code == "TFP000"]
    assert "code cell 2" in note.message and note.severity is not Severity.ERROR


# --- outputs of a model call unpacked into names (`z_mean, z_log_var = encoder(x)`) ----------------------------

_VAE = """
import tensorflow as tf
from tensorflow.keras.layers import Input
from tensorflow.keras.models import Model


def make_vae(encoder, decoder):
    x = Input(shape=(4,))
    z_mean, z_log_var = encoder(x)
    vae = Model(x, decoder(z_mean))
    kl_loss = -0.5 * tf.reduce_sum(1 + z_log_var - tf.square(z_mean), axis=-1)
    return vae, kl_loss
"""


def test_premise_unpacked_outputs_of_a_model_call_are_keras_tensors() -> None:
    keras = pytest.importorskip("keras")
    tf = pytest.importorskip("tensorflow")
    inputs = keras.Input((4,))
    encoder = keras.Model(inputs, [keras.layers.Dense(2)(inputs), keras.layers.Dense(2)(inputs)])
    z_mean, _ = encoder(keras.Input((4,)))
    with pytest.raises(ValueError, match="KerasTensor cannot be used as input to a TensorFlow function"):
        tf.square(z_mean)


def test_a_tensorflow_op_on_unpacked_model_outputs_is_reported() -> None:
    findings = [f for f in lint_source(textwrap.dedent(_VAE), path="vae.py") if "KerasTensor" in f.message]
    assert [f.location.split(":")[-2] for f in findings] == ["11"]


def test_unpacking_a_python_result_of_a_keras_tensor_is_left_alone() -> None:
    source = _VAE.replace("z_mean, z_log_var = encoder(x)", "z_mean, z_log_var = divmod(len(x.shape), 2)")
    assert [f for f in lint_source(textwrap.dedent(source), path="vae.py") if "KerasTensor" in f.message] == []


def test_output_shape_of_a_layer_in_a_comprehension_over_model_layers_is_reported() -> None:
    source = (
        "import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(2)])\n"
        "shapes = [(i, l.output_shape)\n          for (i, l) in enumerate(model.layers)]\n"
        "sizes = [s.output_shape for s in sizes_of_something_else]\n"
    )
    found = [f.location.split(":")[-2] for f in lint_source(source, path="cnn.py") if "output_shape" in f.message]
    assert found == ["3"]
