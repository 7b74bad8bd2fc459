"""A class from held-out round 4: a TF1 script that indents some blocks with tabs and others with
spaces (Python reads it; libcst, which the rewrites use, does not) stopped `tfpilot migrate` for the
whole tree with a traceback. Now its indentation is expanded, it is migrated like any other file,
and the migrated file runs on TF 2.21."""

from __future__ import annotations

import ast
from pathlib import Path

from test_migrate_heldout3_classes import migrated, run

from tfpilot.migrate.indentation import expand_indentation_tabs, libcst_reads

# Blocks indented with tabs beside a function indented with spaces, and a line that starts with two
# spaces before its tabs (as an editor left it); the docstring's tab must stay.
MIXED = (
    "import tensorflow as tf\n"
    "\n"
    'NOTE = """kept\n\tas written"""\n'
    "\n"
    "\n"
    "def double(value):\n"
    "    return 2.0 * value\n"
    "\n"
    "\n"
    "x = tf.placeholder(tf.float32, [None])\n"
    "total = double(tf.reduce_sum(x))\n"
    "with tf.Session() as sess:\n"
    "\tstep = 0\n"
    "\twhile step < 3:\n"
    "\t\ttry:\n"
    "  \t\t\tprint(sess.run(total, feed_dict={x: [step, 1.0]}))\n"
    "\t\tfinally:\n"
    "\t\t\tstep += 1\n"
    "print(NOTE.split())\n"
)


def test_a_file_mixing_tabs_and_spaces_is_migrated_and_runs(tmp_path: Path) -> None:
    ast.parse(MIXED)  # Python reads it
    assert not libcst_reads(MIXED)
    expanded = expand_indentation_tabs(MIXED)
    assert libcst_reads(expanded) and '"""kept\n\tas written"""' in expanded
    assert ast.dump(ast.parse(expanded)) == ast.dump(ast.parse(MIXED))
    script = migrated(tmp_path, "mixed.py", MIXED)
    assert run(script) == "['kept', 'as', 'written']"  # the last line; the loop printed before it
    assert "tf.compat.v1.Session" in script.read_text() and "\t" not in script.read_text().split('"""')[2]
