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
    if mode == "compat":
        removed = [item for item in report.rewritten if "refused TensorFlow 2" in item.message]
        assert len(removed) == 2


def test_a_guard_with_an_else_branch_is_not_removed(tmp_path: Path) -> None:
    script = SCRIPT.replace("  exit('Please install Tensorflow 1.x')\n", "  exit('old')\nelse:\n  print('ok')\n", 1)
    _, migrated = _migrate(tmp_path, "dqn.py", script)
    assert "exit('old')" in migrated.read_text()
