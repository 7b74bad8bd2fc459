"""Classes found on held-out lint round 16 (after its figure was taken; now tuning material).

- `try: import tensorflow.compat.v1 as tf` / `except ImportError: import tensorflow as tf`: on TF 2.21 the
  body's import succeeds, so `tf` is compat.v1 and its TF1 names exist; the handler's import bound `tf`;
- a notebook imports `tensorflow.compat.v1 as tf` in one cell and plain `tensorflow as tf` in a later one:
  each cell's code sees the import above it, not the file's last;
- a notebook that installs TensorFlow 1 itself (`!pip install tensorflow==1.14`, `%tensorflow_version 1.x`)
  runs its TF1 code on TF1 on purpose: those findings are notes, until a later cell installs TF 2;
- `model.predict(x, use_multiprocessing=True)` in a file whose model comes from another module of the
  project (the file imports no TensorFlow); keras-contrib imports (TFP509).
"""

from __future__ import annotations

import textwrap

import pytest

from tfpilot.findings import Severity
from tfpilot.lint.engine import lint_source


def _findings(source: str) -> list[tuple[str, int, Severity]]:
    return [
        (finding.code, int(finding.location.split(":")[-2]), finding.severity)
        for finding in lint_source(textwrap.dedent(source), path="case.py")
    ]


def _codes(source: str) -> set[tuple[str, int]]:
    return {(code, line) for code, line, _ in _findings(source)}


TRY_COMPAT = """
try:
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
except ImportError:
    import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
with tf.Session() as sess:
    pass
"""


def test_the_try_body_import_binds_where_it_succeeds():
    found = _codes(TRY_COMPAT)
    assert not {code for code, _ in found} & {"TFP601", "TFP602"}, found
    # the same lines without the compat import in the body are TF1 names under plain tf
    plain = _codes(TRY_COMPAT.replace("tensorflow.compat.v1 as tf", "tensorflow as tf"))
    assert ("TFP602", 8) in plain, plain


def test_a_contrib_import_in_the_try_body_fails_on_tf2_so_the_handler_binds():
    source = """
    import tensorflow as tf
    try:
        import tensorflow.contrib.slim as slim
    except ImportError:
        import tf_slim as slim

    net = slim.conv2d(tf.zeros([1, 8, 8, 3]), 4, [3, 3])
    """
    assert not any(code == "TFP604" and line == 8 for code, line in _codes(source))


NOTEBOOK = """
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
x = tf.placeholder(tf.float32, [None, 3])
sess = tf.Session()

import tensorflow as tf
y = tf.placeholder(tf.float32, [None, 3])
"""


def test_each_cell_sees_the_import_above_it():
    found = _codes(NOTEBOOK)
    assert ("TFP602", 8) in found, found
    assert ("TFP602", 4) not in found and ("TFP601", 5) not in found, found


INSTALLS = """
pass  # !pip install tensorflow==1.14
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
{second}
import tensorflow as tf
y = tf.placeholder(tf.float32, [None, 3])
"""


@pytest.mark.parametrize(
    "first, second, tf1_note, later_note",
    [
        ("pass  # !pip install tensorflow==1.14", "pass  # !pip install tensorflow==2.2.0", True, False),
        ("# %tensorflow_version 1.x", "", True, True),  # jupytext keeps magics as comments
        ("# !pip install 'tensorflow-gpu<2'", "# %tensorflow_version 2.x", True, False),
        ("# !pip install tensorflow==2.3", "", False, False),
        ("import os", "", False, False),  # no install: judged for TF 2.21
    ],
)
def test_code_that_installs_tensorflow_1_itself_gets_notes(first, second, tf1_note, later_note):
    source = INSTALLS.replace("pass  # !pip install tensorflow==1.14", first).format(second=second)
    severities = {line: severity for code, line, severity in _findings(source) if code == "TFP602"}
    assert set(severities) == {5, 8}, severities
    assert (severities[5] is Severity.INFO) is tf1_note, severities
    assert (severities[8] is Severity.INFO) is later_note, severities


def test_the_note_names_the_install():
    source = INSTALLS.format(second="")
    (message,) = [f.message for f in lint_source(textwrap.dedent(source), path="nb.py") if f.location.endswith(":5:5")]
    assert "installs itself (line 2" in message and "tensorflow==1.14" in message, message


def test_keras_worker_arguments_in_a_file_that_imports_no_tensorflow():
    source = """
    from project.models import load_model

    model = load_model("style")
    out = model.predict(batch, use_multiprocessing=True)
    other = forest.fit(x, y, workers=4)
    """
    found = _codes(source)
    assert ("TFP504", 5) in found, found
    # `workers` alone is many libraries' word: not judged without TensorFlow in the file
    assert ("TFP504", 6) not in found, found


def test_keras_contrib_is_a_keras_2_library():
    source = """
    import tensorflow as tf
    from keras_contrib.layers import InstanceNormalization
    """
    assert ("TFP509", 3) in _codes(source)


def test_premise_every_removed_numpy_name_is_gone_from_the_installed_numpy():
    import numpy as np

    from tfpilot.lint.numpy_removed import NUMPY_REMOVED

    assert [name for name in NUMPY_REMOVED if hasattr(np, name)] == []
    for row in NUMPY_REMOVED.values():
        if row.rename and row.replacement.startswith("numpy."):
            assert hasattr(np, row.replacement[len("numpy.") :]), row


@pytest.mark.parametrize(
    "line, reported",
    [
        ("best = np.Inf", True),
        ("labels = y.astype(np.float_)", True),
        ("best = np.inf", False),
        ("ok = np.bool(1)", False),  # NumPy 2 has np.bool again
        ("f = np.float_ if hasattr(np, 'float_') else np.float64", False),
    ],
)
def test_numpy_removed_names(line, reported):
    found = _codes(f"import numpy as np\n{line}\n")
    assert (("TFP514", 2) in found) is reported, found


def test_numpy_removed_names_are_notes_where_the_file_installs_tensorflow_1():
    source = "# !pip install tensorflow==1.15\nimport numpy as np\nbest = np.Inf\n"
    assert ("TFP514", 3, Severity.INFO) in _findings(source)
