"""Classes from migrate's held-out round 14 (after its figure; tuning material now).

- A module of a package (`mnist/__init__.py`) that is also run as a script from its own folder
  (`python mnist/convolutional.py`, sugyan's MNIST: it imports its sibling as `import model`): the shim
  module went only above the package, where that run cannot find it; it now goes in the folder too.
- `MultiRNNCell(state_is_tuple=False)` (the Shakespeare GRU feeds its whole state through one placeholder):
  the cells' states side by side in one tensor, as TF1 kept them.
- contrib's CRF, `contrib.layers.linear` / `bias_add` / `xavier_initializer` through `from tensorflow.contrib
  import layers`, `contrib.framework.get_variables`: shim rows, run in test_migrate_removed_apis.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_migrate_round13_classes import _last_line

from tfpilot.migrate import migrate


def _migrated_last_line(tmp_path: Path, name: str, source: str) -> str:
    """Migrate one TF1 file (compat), check the report says it runs, run it: its last printed line."""
    (tmp_path / "tf1").mkdir()
    (tmp_path / "tf1" / name).write_text(source)
    report = migrate(tmp_path / "tf1", tmp_path / "tf2")
    assert report.will_run == report.files, report.statuses
    return _last_line(tmp_path / "tf2", name)


MODEL = "import tensorflow as tf\n\n\ndef build(x):\n    return tf.layers.dense(x, 2, kernel_initializer=tf.ones_initializer())\n"
SCRIPT = (
    "import numpy as np\n"
    "import tensorflow as tf\n"
    "import model\n"
    "\n"
    "x = tf.placeholder(tf.float32, [None, 3])\n"
    "y = model.build(x)\n"
    "with tf.Session() as sess:\n"
    "    sess.run(tf.global_variables_initializer())\n"
    "    print(sess.run(y, feed_dict={x: np.ones((1, 3))}).tolist())\n"
)


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_a_package_module_run_as_a_script_finds_its_helpers(tmp_path: Path, mode: str) -> None:
    source = tmp_path / "tf1"
    (source / "mnist").mkdir(parents=True)
    (source / "mnist" / "__init__.py").write_text("")
    (source / "mnist" / "model.py").write_text(MODEL)
    (source / "mnist" / "convolutional.py").write_text(SCRIPT)
    migrate(source, tmp_path / "tf2", mode=mode)
    # run from the tree's root, as the repository's README says: `python mnist/convolutional.py`
    assert _last_line(tmp_path / "tf2", "mnist/convolutional.py") == "[[3.0, 3.0]]"


CELLS = (
    "import numpy as np\n"
    "import tensorflow as tf\n"
    "from tensorflow.contrib import rnn\n"
    "\n"
    "tf.set_random_seed(0)\n"
    "x = tf.constant(np.linspace(-1, 1, 2 * 5 * 3).reshape(2, 5, 3).astype(np.float32))\n"
    "with tf.variable_scope('flat'):\n"
    "    flat = rnn.MultiRNNCell([rnn.GRUCell(4), rnn.GRUCell(4)], state_is_tuple=False)\n"
    "    start = tf.placeholder(tf.float32, [None, 8])\n"
    "    out_flat, state_flat = tf.nn.dynamic_rnn(flat, x, initial_state=start)\n"
    "with tf.variable_scope('flat', reuse=True):\n"
    "    pair = rnn.MultiRNNCell([rnn.GRUCell(4), rnn.GRUCell(4)], state_is_tuple=True)\n"
    "    init = np.arange(16, dtype=np.float32).reshape(2, 8) / 16.0\n"
    "    out_pair, state_pair = tf.nn.dynamic_rnn(pair, x, initial_state=(init[:, :4], init[:, 4:]))\n"
    "with tf.Session() as sess:\n"
    "    sess.run(tf.global_variables_initializer())\n"
    "    a, s, b, t = sess.run([out_flat, state_flat, out_pair, state_pair], feed_dict={start: init})\n"
    "    print(s.shape, np.allclose(a, b), np.allclose(s, np.concatenate(t, 1)), len(tf.trainable_variables()))\n"
)


def test_multi_rnn_cell_with_one_state_tensor_computes_what_the_tuple_state_does(tmp_path: Path) -> None:
    # the same variables (one scope, reused): 2 GRU cells x (gates kernel, bias, candidate kernel, bias)
    assert _migrated_last_line(tmp_path, "cells.py", CELLS) == "(2, 8) True True 8"


STACK = (
    "import numpy as np\n"
    "import tensorflow as tf\n"
    "\n"
    "tf.set_random_seed(0)\n"
    "x = tf.constant(np.linspace(-1, 1, 2 * 5 * 3).reshape(2, 5, 3).astype(np.float32))\n"
    "lengths = tf.constant([5, 3])\n"
    "with tf.variable_scope('s'):\n"
    "    out, fw, bw = tf.contrib.rnn.stack_bidirectional_dynamic_rnn(\n"
    "        [tf.contrib.rnn.GRUCell(4), tf.contrib.rnn.GRUCell(4)], [tf.contrib.rnn.GRUCell(4), tf.contrib.rnn.GRUCell(4)],\n"
    "        x, sequence_length=lengths, dtype=tf.float32)\n"
    "with tf.variable_scope('s/stack_bidirectional_rnn/cell_0', reuse=True):\n"
    "    (a, b), _ = tf.nn.bidirectional_dynamic_rnn(tf.contrib.rnn.GRUCell(4), tf.contrib.rnn.GRUCell(4), x,\n"
    "                                                 sequence_length=lengths, dtype=tf.float32)\n"
    "first = tf.get_default_graph().get_tensor_by_name('s/stack_bidirectional_rnn/cell_0/concat:0')\n"
    "with tf.Session() as sess:\n"
    "    sess.run(tf.global_variables_initializer())\n"
    "    o, f, one, two = sess.run([out, first, a, b])\n"
    "    names = sorted(v.name for v in tf.trainable_variables())\n"
    "    print(o.shape, len(fw), np.allclose(f, np.concatenate([one, two], 2)), names[0])\n"
)


def test_stacked_bidirectional_rnn_feeds_each_layer_both_directions(tmp_path: Path) -> None:
    assert _migrated_last_line(tmp_path, "stack.py", STACK) == (
        "(2, 5, 8) 2 True s/stack_bidirectional_rnn/cell_0/bidirectional_rnn/bw/gru_cell/candidate/bias:0"
    )


def test_a_missing_package_imported_inside_a_function_stops_only_that_function() -> None:
    """tf_unet's plot helper imports matplotlib inside the function: a training run that never plots
    runs without it, so the file is not reported as one that will not run."""
    from tfpilot.migrate.readiness import check_runs

    source = (
        "import tensorflow as tf\n"
        "\n"
        "def plot(images):\n"
        "    import no_such_plotting_package\n"
        "    return no_such_plotting_package.show(images)\n"
        "\n"
        "import no_such_plotting_package\n"
    )
    blockers = {b.line: b for b in check_runs(source)}
    assert blockers[4].in_branch and "inside a function" in blockers[4].what
    assert not blockers[7].in_branch
