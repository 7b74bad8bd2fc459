"""Classes from held-out round 8 (after its figure was recorded): Python 2 scripts of the TF1 books
(`print x`), an Estimator given a project's own params object, and tf.contrib.metrics' streaming
metrics (their row in test_migrate_removed_apis.py runs them). Written for tfpilot."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_migrate_heldout3_classes import run
from test_migrate_heldout7_classes import _migrate

from tfpilot.migrate.command import migrate

PYTHON2 = (
    "import tensorflow as tf\n"
    "x = tf.constant([1.0, 2.0])\n"
    "total = tf.reduce_sum(x)\n"
    "sess = tf.Session()\n"
    "try:\n"
    "    print 'total', sess.run(total)\n"
    "except ValueError, error:\n"
    "    print error\n"
)


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_a_python_2_script_is_converted_reported_and_runs(tmp_path: Path, mode: str) -> None:
    report, migrated = _migrate(tmp_path, "train.py", PYTHON2, mode)
    assert report.will_run == report.files, report.statuses
    assert any("Python 2 source" in item.message for item in report.rewritten), report.rewritten
    assert run(migrated) == "total 3.0"


def test_python_3_source_is_never_run_through_2to3(tmp_path: Path) -> None:
    # `print(a, b)` means a tuple to 2to3's print fixer only in Python 2 source: untouched here
    report, migrated = _migrate(
        tmp_path, "train.py", "import tensorflow as tf\nprint('a', tf.constant(1).dtype.name)\n"
    )
    assert not any("Python 2 source" in item.message for item in report.rewritten)
    assert run(migrated) == "a int32"


ESTIMATOR = (
    "import numpy as np\n"
    "import tensorflow as tf\n"
    "\n"
    "class Params:\n"
    "    def __init__(self):\n"
    "        self.learning_rate = 0.5\n"
    "\n"
    "def model_fn(features, labels, mode, params):\n"
    "    w = tf.get_variable('w', [], initializer=tf.zeros_initializer())\n"
    "    loss = tf.reduce_mean(tf.square(features['x'] * w - labels))\n"
    "    step = tf.train.GradientDescentOptimizer(params.learning_rate).minimize(\n"
    "        loss, global_step=tf.train.get_global_step())\n"
    "    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=step)\n"
    "\n"
    "x = np.ones([8], np.float32)\n"
    "input_fn = tf.estimator.inputs.numpy_input_fn({'x': x}, 2 * x, batch_size=8, num_epochs=None, shuffle=False)\n"
    "estimator = tf.estimator.Estimator(model_fn, params=Params(), model_dir=MODEL_DIR)\n"
    "estimator.train(input_fn, steps=20)\n"
    "print(round(float(estimator.get_variable_value('w')), 3), estimator.params.learning_rate)\n"
)


def test_an_estimator_takes_a_params_object_that_is_no_dict(tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    report, migrated = _migrate(tmp_path, "train.py", ESTIMATOR.replace("MODEL_DIR", repr(str(model_dir))))
    assert report.will_run == report.files, report.statuses
    assert run(migrated) == "2.0 0.5"


def test_a_package_module_finds_its_helpers_where_the_entry_script_runs(tmp_path: Path) -> None:
    # cs230's layout: train.py at the top imports model/model_fn.py, which uses tf.layers
    tree = tmp_path / "tf1"
    (tree / "model").mkdir(parents=True)
    (tree / "model" / "__init__.py").write_text("")
    (tree / "model" / "model_fn.py").write_text(
        "import tensorflow as tf\n\ndef build(x):\n    return tf.layers.dense(x, 3, name='out')\n"
    )
    (tree / "train.py").write_text(
        "import tensorflow as tf\nfrom model.model_fn import build\n"
        "out = build(tf.ones([2, 4]))\n"
        "with tf.Session() as sess:\n"
        "    sess.run(tf.global_variables_initializer())\n"
        "    print(sess.run(out).shape)\n"
    )
    report = migrate(tree, tmp_path / "tf2", mode="compat")
    assert report.will_run == report.files, report.statuses
    assert (tmp_path / "tf2" / "tf1_compat_shims.py").exists()
    assert not (tmp_path / "tf2" / "model" / "tf1_compat_shims.py").exists()
    assert run(tmp_path / "tf2" / "train.py") == "(2, 3)"


GLOBAL_STEP = (
    "import tensorflow as tf\n"
    "x = tf.placeholder(tf.float32, [None, 1])\n"
    "w = tf.Variable(tf.zeros([1, 1]))\n"
    "loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))\n"
    "global_step = tf.Variable(0, name='global_step', trainable=False)\n"
    "train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)\n"
    "with tf.Session() as sess:\n"
    "    sess.run(tf.global_variables_initializer())\n"
    "    print([int(sess.run([train_op, global_step], feed_dict={x: [[1.0]]})[1]) for _ in range(3)])\n"
)


def test_a_step_counter_fetched_with_its_update_reads_as_in_tf1(tmp_path: Path) -> None:
    # round 8's template scripts log `if step % 10 == 0` on the value fetched with train_op: TF1's
    # reference variable gives the updated count; TF2's tf.Variable (a resource variable) the old one
    report, migrated = _migrate(tmp_path, "train.py", GLOBAL_STEP)
    assert report.will_run == report.files, report.statuses
    assert "tf.compat.v1.Variable(0, name='global_step'" in migrated.read_text()
    assert run(migrated) == "[1, 2, 3]"


BRANCHES = (
    "import sys\n"
    "import tensorflow as tf\n"
    "kind = sys.argv[1] if len(sys.argv) > 1 else 'sparse'\n"
    "logits = tf.constant([[2.0, 0.5]])\n"
    "if kind == 'sparse':\n"
    "    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0], logits=logits)\n"
    "elif kind == 'dense':\n"
    "    loss = tf.nn.cross_entropy_with_logits(labels=[[1.0, 0.0]], logits=logits)\n"
    "print(round(float(tf.reduce_mean(loss)), 3))\n"
)


def test_a_name_tensorflow_never_had_in_an_untaken_branch_does_not_stop_the_file(tmp_path: Path) -> None:
    # round 8's template script: `elif FLAGS.loss == "cross_entropy": tf.nn.cross_entropy_with_logits(...)`
    report, migrated = _migrate(tmp_path, "train.py", BRANCHES)
    assert report.will_run == report.files, report.statuses
    flagged = [item for item in report.needs_person + report.notes if "cross_entropy_with_logits" in item.message]
    assert flagged and not flagged[0].blocks_run and "in a branch" in flagged[0].message
    assert run(migrated) == "0.201"


def test_the_same_name_outside_a_branch_still_stops_the_file(tmp_path: Path) -> None:
    source = BRANCHES.replace("elif kind == 'dense':\n    loss", "loss2")
    report, _ = _migrate(tmp_path, "train.py", source)
    assert report.will_run == 0


def test_the_lookup_helper_refuses_a_hasher_it_does_not_reproduce(tmp_path: Path) -> None:
    # TF 2.21's tables hash OOV keys with fingerprint64 only: a keyed hasher would give other ids
    from tfpilot.migrate.shims.lookup import _tf1_lookup
    from tfpilot.migrate.shims.refusal import TF1OptionRefused

    vocabulary = tmp_path / "words.txt"
    vocabulary.write_text("a\nb\n")
    with pytest.raises(TF1OptionRefused, match="hashes OOV keys"):
        _tf1_lookup.index_table_from_file(str(vocabulary), num_oov_buckets=1, hasher_spec=object())
    with pytest.raises(TF1OptionRefused, match="hashes OOV keys"):
        _tf1_lookup.index_table_from_tensor(["a", "b"], num_oov_buckets=1, hasher_spec=object())
