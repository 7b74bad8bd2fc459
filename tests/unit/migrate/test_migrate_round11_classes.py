"""A class from migrate's held-out round 11 (a DQN tutorial): a TF1 script that refuses TensorFlow 2
(`if tf.__version__.startswith('2'): exit("Please install Tensorflow 1.x")`). The migrated code
runs on TF 2, so the guard goes, in both modes, with a change in the report; a version test that
does something else than stop the program stays (native mode decides it, compat leaves it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_migrate_heldout3_classes import run
from test_migrate_heldout7_classes import _migrate

SCRIPT = (
    "import sys\n"
    "import tensorflow as tf\n"
    "\n"
    "if tf.__version__.startswith('2'):\n"
    "  exit('Please install Tensorflow 1.x')\n"
    "if int(tf.__version__.split('.')[0]) >= 2:\n"
    "    print('TF 2 is not supported')\n"
    "    sys.exit(1)\n"
    "if tf.__version__.startswith('2'):\n"
    "    print('running on', 'TF2')\n"
    "\n"
    "x = tf.placeholder(tf.float32, [None, 2])\n"
    "y = tf.reduce_sum(x * 2.0)\n"
    "with tf.Session() as sess:\n"
    "    print(sess.run(y, {x: [[1.0, 2.0]]}))\n"
)


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_a_guard_refusing_tensorflow2_is_removed_and_the_program_runs(tmp_path: Path, mode: str) -> None:
    report, migrated = _migrate(tmp_path, "dqn.py", SCRIPT, mode)
    assert report.will_run == report.files, report.statuses
    text = migrated.read_text()
    assert "Please install" not in text and "sys.exit" not in text
    assert "running on" in text  # a version test that does not stop the program is no guard
    assert run(migrated) == "6.0"
    removed = [item for item in report.rewritten if "refused TensorFlow 2" in item.message]
    assert len(removed) == 2, report.rewritten


def test_a_guard_with_an_else_branch_is_not_removed(tmp_path: Path) -> None:
    script = SCRIPT.replace("  exit('Please install Tensorflow 1.x')\n", "  exit('old')\nelse:\n  print('ok')\n", 1)
    _, migrated = _migrate(tmp_path, "dqn.py", script)
    assert "exit('old')" in migrated.read_text()


# Round 11's CTC example: `tf.nn.dynamic_rnn(stack, inputs, seq_len, dtype=tf.float32)` passes the
# sequence length by position; native mode's reading of the call only knew two positions and
# crashed (IndexError), leaving tf_upgrade_v2's output, which does not run. It keeps the file on
# compat now, which runs.
RNN_SCRIPT = (
    "import numpy as np\n"
    "import tensorflow as tf\n"
    "\n"
    "tf.set_random_seed(0)\n"
    "inputs = tf.placeholder(tf.float32, [None, None, 3])\n"
    "seq_len = tf.placeholder(tf.int32, [None])\n"
    "cell = tf.contrib.rnn.LSTMCell(4, state_is_tuple=True)\n"
    "outputs, _ = tf.nn.dynamic_rnn(cell, inputs, seq_len, dtype=tf.float32)\n"
    "with tf.Session() as sess:\n"
    "    sess.run(tf.global_variables_initializer())\n"
    "    print(sess.run(outputs, {inputs: np.ones((2, 5, 3)), seq_len: [5, 3]}).shape)\n"
)


def test_dynamic_rnn_with_a_positional_sequence_length_stays_on_compat_and_runs(tmp_path: Path) -> None:
    report, migrated = _migrate(tmp_path, "ctc.py", RNN_SCRIPT, "native")
    assert report.will_run == report.files, report.statuses
    assert any("dynamic_rnn" in item.message for item in report.notes + report.needs_person + report.kept_on_compat)
    assert run(migrated) == "(2, 5, 4)"


# Round 11's infoGAN: `try: tf.nn.conv2d_transpose(...) except AttributeError: tf.nn.deconv2d(...)`,
# a fallback for TensorFlow before 0.7. The handler runs only if the try fails; the report said the
# removed name stops the file, which ran.
FALLBACK_SCRIPT = (
    "import tensorflow as tf\n"
    "\n"
    "x = tf.ones([1, 4, 4, 2])\n"
    "w = tf.ones([3, 3, 1, 2])\n"
    "try:\n"
    "    y = tf.nn.conv2d_transpose(x, w, output_shape=[1, 8, 8, 1], strides=[1, 2, 2, 1])\n"
    "except AttributeError:\n"
    "    y = tf.nn.deconv2d(x, w, output_shape=[1, 8, 8, 1], strides=[1, 2, 2, 1])\n"
    "with tf.Session() as sess:\n"
    "    print(sess.run(y).shape)\n"
)


def test_a_removed_name_in_an_except_handler_does_not_stop_the_file(tmp_path: Path) -> None:
    report, migrated = _migrate(tmp_path, "ops.py", FALLBACK_SCRIPT)
    assert report.will_run == report.files, report.statuses
    deconv = [item for item in report.needs_person + report.notes if "deconv2d" in item.message]
    assert deconv and not any(item.blocks_run for item in deconv)
    assert run(migrated) == "(1, 8, 8, 1)"
