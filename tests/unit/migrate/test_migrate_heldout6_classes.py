"""A class from held-out round 6: four of its eleven TF1 scripts begin with a UTF-8 byte order mark
(written by Windows editors). Python runs such a file, but tf_upgrade_v2 read it as text, failed to
parse U+FEFF and `tfpilot migrate` copied it unchanged (`tf.get_variable`, `tf.Session` left as
they were). Now the mark is dropped before the upgrade, in both modes, and the migrated file runs."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest
from test_migrate_heldout3_classes import run

from tfpilot.migrate.command import migrate

SCRIPT = (
    "import tensorflow as tf\n"
    "\n"
    "x = tf.get_variable('x', initializer=tf.constant([1.0, 2.0, 3.0]))\n"
    "y = tf.reduce_sum(x * x)\n"
    "grads = tf.gradients(y, [x], grad_ys=[tf.constant(2.0)])\n"
    "with tf.Session() as sess:\n"
    "    tf.global_variables_initializer().run()\n"
    "    print(sess.run(grads)[0].tolist())\n"
)


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_a_script_with_a_byte_order_mark_is_migrated_and_runs(tmp_path: Path, mode: str) -> None:
    source = tmp_path / "tf1" / "bom.py"
    source.parent.mkdir()
    source.write_bytes(codecs.BOM_UTF8 + SCRIPT.encode("utf-8"))
    compile(source.read_bytes(), str(source), "exec")  # Python reads it, mark and all
    report = migrate(source.parent, tmp_path / "tf2", mode=mode)
    assert report.will_run == report.files, report.statuses
    output = tmp_path / "tf2" / "bom.py"
    text = output.read_text(encoding="utf-8")
    assert not text.startswith("\ufeff") and "tf.get_variable(" not in text
    assert run(output) == "[4.0, 8.0, 12.0]"


LAYER_OBJECTS = (
    "import tensorflow as tf\n"
    "\n"
    "x = tf.constant([[1.0], [2.0], [3.0], [4.0]])\n"
    "y_true = tf.constant([[0.0], [-1.0], [-2.0], [-3.0]])\n"
    "tf.set_random_seed(0)\n"
    "linear = tf.layers.Dense(units=1, kernel_initializer=tf.constant_initializer(0.5))\n"
    "other = tf.layers.Dense(units=1)\n"
    "y_pred = linear(x)\n"
    "again = linear(x * 2.0)  # the same variables: TF1 layer objects build once\n"
    "unused = other(x)\n"
    "dropped = tf.layers.Dropout(0.5)(y_pred, training=False)\n"
    "loss = tf.losses.mean_squared_error(labels=y_true, predictions=y_pred)\n"
    "train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)\n"
    "names = sorted(v.name for v in tf.global_variables())\n"
    "sess = tf.Session()\n"
    "sess.run(tf.global_variables_initializer())\n"
    "first = sess.run(loss)\n"
    "for _ in range(200):\n"
    "    sess.run(train)\n"
    "print(names, float(sess.run(loss)) < first / 2, bool((sess.run(dropped) == sess.run(y_pred)).all()))\n"
)


def test_tf_layers_objects_build_their_variables_once_and_train(tmp_path: Path) -> None:
    """`tf.layers.Dense(units=1)` then `layer(x)` (round 6's first TF1 tutorial): the compat helper's
    layer classes keep TF1's variable names and share them between calls of one object."""
    source = tmp_path / "tf1" / "objects.py"
    source.parent.mkdir()
    source.write_text(LAYER_OBJECTS, encoding="utf-8")
    report = migrate(source.parent, tmp_path / "tf2", mode="compat")
    assert report.will_run == report.files, report.statuses
    output = tmp_path / "tf2" / "objects.py"
    expected = "['dense/bias:0', 'dense/kernel:0', 'dense_1/bias:0', 'dense_1/kernel:0'] True True"
    assert run(output) == expected
