"""Whether a migrated file will start, checked against the installed TensorFlow."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from tfpilot.migrate.readiness import check_runs  # noqa: E402


def whats(source: str, **kwargs) -> list[str]:
    return [blocker.what for blocker in check_runs(source, **kwargs)]


def test_clean_tf2_code_is_expected_to_run() -> None:
    assert check_runs("import numpy as np\nimport tensorflow as tf\nx = tf.math.reduce_sum(tf.ones(3))\n") == []


def test_graph_code_with_v2_behaviour_disabled_is_expected_to_run() -> None:
    source = (
        "import tensorflow as tf\ntf.compat.v1.disable_v2_behavior()\n"
        "x = tf.compat.v1.placeholder(tf.float32)\nwith tf.compat.v1.Session() as s:\n    pass\n"
    )
    assert check_runs(source) == []


def test_graph_code_left_eager_will_not_run() -> None:
    blockers = check_runs("import tensorflow as tf\nx = tf.compat.v1.placeholder(tf.float32)\n")
    assert [b.line for b in blockers] == [2] and "disable_v2_behavior" in blockers[0].fix


def test_removed_apis_are_named_with_their_replacement() -> None:
    source = (
        "import tensorflow as tf\n"
        "est = tf.estimator.Estimator(None)\n"
        "y = tf.compat.v1.layers.dense(x, 3)\n"
        "z = tf.contrib.layers.flatten(x)\n"
    )
    blockers = check_runs(source)
    assert [b.line for b in blockers] == [2, 3, 4]
    assert "tf.estimator was removed" in blockers[0].fix and "keras.Model" in blockers[0].fix
    assert "Keras 2" in blockers[1].fix and "tf.contrib was removed" in blockers[2].fix


def test_imports_that_do_not_resolve() -> None:
    source = (
        "from tensorflow.examples.tutorials.mnist import input_data\n"
        "import no_such_package_xyz\n"
        "from tensorflow.contrib import rnn\n"
        "import helpers\n"
    )
    what = whats(source, local_modules={"helpers"})
    assert len(what) == 3 and "no_such_package_xyz" in what[1]


def test_helper_lines_are_not_checked() -> None:
    source = "import tensorflow as tf\nx = tf.compat.v1.placeholder(tf.float32)\n"
    assert check_runs(source, skip_lines=range(2, 3)) == []


def test_syntax_error_is_a_blocker() -> None:
    assert whats("def broken(:\n")[0].startswith("does not parse")


def test_options_the_shims_refuse_are_named_before_the_file_runs() -> None:
    from tfpilot.migrate.readiness import _SHIM_LIMITS

    source = (
        "import tensorflow as tf\n"
        "cell = _tf1_rnn.LSTMCell(4, use_peepholes=True)\n"
        "stack = _tf1_rnn.MultiRNNCell([cell], state_is_tuple=False)\n"  # emulated since round 14
        "ok = _tf1_rnn.LSTMCell(4, use_peepholes=False, num_proj=None)\n"
        "computed = _tf1_rnn.LSTMCell(4, use_peepholes=flags.peepholes)\n"  # a computed value is not judged
        "up = _tf1_layers.conv2d_transpose(x, 3, 3, data_format='channels_first')\n"
    )
    blockers = check_runs(source)
    assert [(b.line, b.what.split(":")[0]) for b in blockers] == [
        (2, "`LSTMCell(use_peepholes=True)`"),
        (6, "`conv2d_transpose(data_format='channels_first')`"),
    ]
    # every option in the table is one a shim really refuses (a raise within three lines of its test)
    import re
    from pathlib import Path

    import tfpilot.migrate.shims as shims

    lines = [line for path in Path(shims.__file__).parent.glob("*.py") for line in path.read_text().splitlines()]
    refused = {
        word
        for index, line in enumerate(lines)
        if "raise TF1OptionRefused" in line
        for previous in lines[max(0, index - 3) : index]
        for word in re.findall(r"[A-Za-z]\w*", previous)
    }
    assert {option for _name, option, _harmless in _SHIM_LIMITS} <= refused
