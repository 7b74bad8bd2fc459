"""Classes from held-out round 7 (char-rnn): a removed TF1 name with no replacement that only an
optional branch uses (`elif args.model == 'nas': cell_fn = rnn.NASCell`) does not stop the file,
so the report must not say it will not run; the same name used unconditionally still stops it."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_migrate_heldout3_classes import run

from tfpilot.migrate.command import MigrationReport, migrate


def _migrate(tmp_path: Path, name: str, text: str, mode: str = "compat") -> tuple[MigrationReport, Path]:
    """Write `text` as tf1/NAME, migrate tf1/ into tf2/; the report and the migrated file."""
    source = tmp_path / "tf1" / name
    source.parent.mkdir()
    source.write_text(text)
    return migrate(source.parent, tmp_path / "tf2", mode=mode), tmp_path / "tf2" / name


SCRIPT = (
    "import sys\n"
    "import tensorflow as tf\n"
    "from tensorflow.contrib import rnn\n"
    "\n"
    "kind = sys.argv[1] if len(sys.argv) > 1 else 'lstm'\n"
    "if kind == 'lstm':\n"
    "    cell_fn = rnn.BasicLSTMCell\n"
    "elif kind == 'nas':\n"
    "    cell_fn = CHOSEN\n"
    "cell = cell_fn(3)\n"
    "out, _ = tf.nn.dynamic_rnn(cell, tf.ones([2, 4, 5]), dtype=tf.float32)\n"
    "with tf.Session() as sess:\n"
    "    sess.run(tf.global_variables_initializer())\n"
    "    print(sess.run(out).shape)\n"
)


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_a_removed_name_in_an_optional_branch_is_a_note_and_the_file_runs(tmp_path: Path, mode: str) -> None:
    report, migrated = _migrate(tmp_path, "cells.py", SCRIPT.replace("CHOSEN", "rnn.NASCell"), mode)
    assert report.will_run == report.files, report.statuses
    notes = [item for item in report.needs_person + report.notes if "NASCell" in item.message]
    assert notes and not any(item.blocks_run for item in notes) and "in a branch" in notes[0].message
    assert run(migrated) == "(2, 4, 3)"


def test_the_same_name_used_unconditionally_still_stops_the_file(tmp_path: Path) -> None:
    report, migrated = _migrate(
        tmp_path,
        "cells.py",
        SCRIPT.replace("CHOSEN", "rnn.BasicLSTMCell").replace("cell = cell_fn(3)", "cell = rnn.NASCell(3)"),
    )
    assert report.will_run == 0
    assert any(item.blocks_run and "NASCell" in item.message for item in report.needs_person + report.notes)


# held-out round 7's MorvanZhou network: a layer function with a branch on its activation
# parameter, and an initializer chosen by a TensorFlow version check
LAYERED = (
    "import numpy as np\n"
    "import tensorflow as tf\n"
    "\n"
    "def add_layer(inputs, in_size, out_size, activation_function=None):\n"
    "    Weights = tf.Variable(tf.random_normal([in_size, out_size], seed=1))\n"
    "    biases = tf.Variable(tf.zeros([1, out_size]) + 0.1)\n"
    "    Wx_plus_b = tf.matmul(inputs, Weights) + biases\n"
    "    if activation_function is None:\n"
    "        outputs = Wx_plus_b\n"
    "    else:\n"
    "        outputs = activation_function(Wx_plus_b)\n"
    "    return outputs\n"
    "\n"
    "x_data = np.linspace(-1, 1, 64)[:, np.newaxis]\n"
    "y_data = np.square(x_data) - 0.5\n"
    "xs = tf.placeholder(tf.float32, [None, 1])\n"
    "ys = tf.placeholder(tf.float32, [None, 1])\n"
    "l1 = add_layer(xs, 1, 10, activation_function=tf.nn.relu)\n"
    "prediction = add_layer(l1, 10, 1, activation_function=None)\n"
    "loss = tf.reduce_mean(tf.reduce_sum(tf.square(ys - prediction), reduction_indices=[1]))\n"
    "train_step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)\n"
    "if int((tf.__version__).split('.')[1]) < 12 and int((tf.__version__).split('.')[0]) < 1:\n"
    "    init = tf.initialize_all_variables()\n"
    "else:\n"
    "    init = tf.global_variables_initializer()\n"
    "sess = tf.Session()\n"
    "sess.run(init)\n"
    "first = sess.run(loss, feed_dict={xs: x_data, ys: y_data})\n"
    "for i in range(200):\n"
    "    sess.run(train_step, feed_dict={xs: x_data, ys: y_data})\n"
    "    if i % 50 == 0:\n"
    "        print(sess.run(loss, feed_dict={xs: x_data, ys: y_data}))\n"
    "print('first', first, 'last', sess.run(loss, feed_dict={xs: x_data, ys: y_data}))\n"
)


def test_a_layer_function_branching_on_a_parameter_and_a_version_check_become_native(tmp_path: Path) -> None:
    report, migrated = _migrate(tmp_path, "layered.py", LAYERED, "native")
    assert report.will_run == report.files and not report.kept_on_compat, report.statuses
    text = migrated.read_text()
    assert "tf.compat.v1" not in text and "Session" not in text and "placeholder" not in text
    assert "__version__" not in text and "initialize_all_variables" not in text
    assert "if activation_function is None:" in text  # the branch stays where each call makes its choice
    _, first, _, last = run(migrated).split()
    assert float(last) < float(first) / 2  # it trains


def test_a_version_check_on_other_values_is_left_alone() -> None:
    from tfpilot.migrate.native.version_checks import decide_version_checks

    source = "import tensorflow as tf\nif tf.__version__ > limit:\n    a = 1\nelse:\n    a = 2\n"
    assert decide_version_checks(source, "2.21.0") == (source, [])
    decided, tests = decide_version_checks(source.replace("limit", "'2.0'"), "2.21.0")
    assert decided == "import tensorflow as tf\na = 1\n" and tests == [(2, "tf.__version__ > '2.0'")]


def test_a_version_check_in_an_elif_is_folded_into_its_chain() -> None:
    from tfpilot.migrate.native.version_checks import decide_version_checks

    source = (
        "import tensorflow as tf\nif x > 2:\n    a = 1\nelif tf.__version__ > 'V':\n    a = 2\n"
        "elif y:\n    a = 3\nelse:\n    a = 4\n"
    )
    taken, tests = decide_version_checks(source.replace("'V'", "'2.0'"), "2.21.0")
    assert taken == "import tensorflow as tf\nif x > 2:\n    a = 1\nelse:\n    a = 2\n" and tests == [
        (4, "tf.__version__ > '2.0'")
    ]
    skipped, _ = decide_version_checks(source.replace("'V'", "'3.0'"), "2.21.0")
    assert skipped == "import tensorflow as tf\nif x > 2:\n    a = 1\nelif y:\n    a = 3\nelse:\n    a = 4\n"


# held-out round 7's pre-1.0 MLP: `softmax_cross_entropy_with_logits(y, y_)` meant (logits,
# labels) before TF 1.0; tf_upgrade_v2 reads labels first, so the migrated loss had no gradient
PRE_1_0 = (
    "import numpy as np\n"
    "import tensorflow as tf\n"
    "\n"
    "x = tf.placeholder(tf.float32, [None, 2])\n"
    "y_ = tf.placeholder(tf.float32, [None, 2])\n"
    "w = tf.Variable(tf.zeros([2, 2]))\n"
    "y = tf.matmul(x, w)\n"
    "loss = tf.reduce_mean(tf.nn.LOSS(y, y_))\n"
    "step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)\n"
    "data = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)\n"
    "sess = tf.Session()\n"
    "sess.run(tf.initialize_all_variables())\n"
    "before = sess.run(loss, {x: data, y_: data})\n"
    "for _ in range(20):\n"
    "    sess.run(step, {x: data, y_: data})\n"
    "print(before > sess.run(loss, {x: data, y_: data}))\n"
)


@pytest.mark.parametrize("loss", ["softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits"])
def test_positional_cross_entropy_of_tf_0_x_keeps_logits_and_labels_apart(tmp_path: Path, loss: str) -> None:
    report, migrated = _migrate(tmp_path, "pre.py", PRE_1_0.replace("LOSS", loss))
    text = migrated.read_text()
    assert f"{loss}(logits=y,labels=" in text.replace(" ", "")
    assert any("TF 0.x's (logits, labels) order" in item.message for item in report.rewritten)
    assert run(migrated) == "True"  # it trains: the loss has a gradient for w


def test_keyword_cross_entropy_is_left_to_tf_upgrade_v2(tmp_path: Path) -> None:
    report, migrated = _migrate(
        tmp_path, "post.py", PRE_1_0.replace("LOSS(y, y_)", "softmax_cross_entropy_with_logits(labels=y_, logits=y)")
    )
    assert not any("TF 0.x" in item.message for item in report.rewritten)
    assert run(migrated) == "True"


def test_a_one_line_version_check_keeps_its_statement() -> None:
    from tfpilot.migrate.native.version_checks import decide_version_checks

    source = "import tensorflow as tf\nif tf.__version__ > '2.0': a = 1\nelse: a = 2\nb = 3\n"
    assert decide_version_checks(source, "2.21.0")[0] == "import tensorflow as tf\na = 1\nb = 3\n"


def test_the_projects_own_function_of_the_same_name_keeps_its_positional_arguments(tmp_path: Path) -> None:
    """DCGAN (held-out round 15) wraps the loss in its own `sigmoid_cross_entropy_with_logits(x, y)` that tries
    both keyword spellings: its positional calls are the project's, whose parameters are x and y."""
    wrapper = (
        "def sigmoid_cross_entropy_with_logits(a, b):\n"
        "    try:\n"
        "        return tf.nn.sigmoid_cross_entropy_with_logits(logits=a, labels=b)\n"
        "    except Exception:\n"
        "        return tf.nn.sigmoid_cross_entropy_with_logits(logits=a, targets=b)\n"
    )
    source = PRE_1_0.replace("y = tf.matmul(x, w)\n", "y = tf.matmul(x, w)\n" + wrapper).replace(
        "tf.nn.LOSS(y, y_)", "sigmoid_cross_entropy_with_logits(y, y_)"
    )
    report, migrated = _migrate(tmp_path, "wrapper.py", source)
    assert "sigmoid_cross_entropy_with_logits(y, y_)" in migrated.read_text()
    assert not any("TF 0.x" in item.message for item in report.rewritten)
    assert run(migrated) == "True"
