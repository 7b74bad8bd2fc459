"""--mode native on the commonest TF1 layout after the plain script: a model class that builds the
graph in ``__init__`` (placeholders, variables, loss, train op as ``self.*`` handles), one instance
made in ``main()``, and the Session loop feeding ``model.x`` and fetching ``model.train_op``.

The class's statements are built where the instance was made, the handles become plain names, and
the rest of the native rewrite applies: the output has no class, no Session, no placeholder, and
prints what the compat output (TF1's program on tf.compat.v1) prints. Anything but the plain shape
leaves the source as it was.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_migrate_heldout3_classes import run
from test_migrate_heldout7_classes import _migrate

from tfpilot.migrate.native.classes import inline_graph_classes

# Initial weights from NumPy's seeded generator: TF1 (compat) and TF2 (native) start from the same
# values, so both outputs must print the same numbers.
PLAIN = """\
import numpy as np
import tensorflow as tf


class Model(object):
    def __init__(self, n_in, n_hidden, n_out, lr=0.5):
        rng = np.random.RandomState(3)
        self.x = tf.placeholder(tf.float32, [None, n_in], name="x")
        self.y = tf.placeholder(tf.float32, [None, n_out], name="y")
        w1 = tf.Variable(rng.randn(n_in, n_hidden).astype(np.float32) * 0.3)
        b1 = tf.Variable(tf.zeros([n_hidden]))
        h = tf.nn.relu(tf.matmul(self.x, w1) + b1)
        w2 = tf.Variable(rng.randn(n_hidden, n_out).astype(np.float32) * 0.3)
        self.logits = tf.matmul(h, w2)
        self.loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=self.y, logits=self.logits))
        self.train_op = tf.train.GradientDescentOptimizer(lr).minimize(self.loss)
        correct = tf.equal(tf.argmax(self.logits, 1), tf.argmax(self.y, 1))
        self.accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))


def main():
    rng = np.random.RandomState(0)
    X = rng.randn(256, 6).astype(np.float32)
    Y = np.eye(2)[(X[:, 0] + X[:, 1] > 0).astype(int)].astype(np.float32)
    model = Model(6, 16, 2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(3):
            for i in range(0, 256, 64):
                _, loss = sess.run([model.train_op, model.loss], feed_dict={model.x: X[i:i + 64], model.y: Y[i:i + 64]})
            acc = sess.run(model.accuracy, feed_dict={model.x: X, model.y: Y})
        print("loss %.5f acc %.5f" % (loss, acc))


if __name__ == "__main__":
    main()
"""

# A builder method, a config object kept as an attribute, tf.layers, name scopes, a Graph block,
# a Saver and tf.app.run: the layout of many text-classification repositories.
BUILDER = '''\
import os
import sys
import numpy as np
import tensorflow as tf


class Config(object):
    hidden = 8
    lr = 0.05


class TextModel(object):
    """A small classifier."""

    def __init__(self, config):
        self.config = config
        self.input_x = tf.placeholder(tf.float32, [None, 5], name="input_x")
        self.input_y = tf.placeholder(tf.int64, [None], name="input_y")
        self.build()

    def build(self):
        with tf.name_scope("net"):
            h = tf.layers.dense(self.input_x, self.config.hidden, activation=tf.nn.relu)
            self.logits = tf.layers.dense(h, 2)
        with tf.name_scope("optimize"):
            self.loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=self.input_y, logits=self.logits))
            self.optim = tf.train.AdamOptimizer(learning_rate=self.config.lr).minimize(self.loss)


def main(_):
    rng = np.random.RandomState(1)
    x = rng.randn(200, 5).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    config = Config()
    with tf.Graph().as_default():
        model = TextModel(config)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = None
            for step in range(40):
                _, loss = sess.run([model.optim, model.loss], feed_dict={model.input_x: x, model.input_y: y})
                first = loss if first is None else first
            saver.save(sess, os.path.join(sys.argv[1], "model"))
            print("improved", bool(loss < 0.7 * first))


if __name__ == "__main__":
    tf.app.run()
'''


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_a_model_class_built_in_init_becomes_plain_tf2_code_that_prints_what_tf1_printed(
    tmp_path: Path, mode: str
) -> None:
    report, migrated = _migrate(tmp_path, "train.py", PLAIN, mode)
    assert report.will_run == report.files, report.statuses
    text = migrated.read_text()
    if mode == "native":
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        assert "class Model" not in code and "model." not in code
        assert not re.search(r"compat\.v1|Session|placeholder", text), text
        assert "@tf.function" in text and "GradientTape" in text
        assert any("class `Model` only built the graph" in change.message for change in report.rewritten)
    printed = run(migrated)
    assert printed == "loss 0.29201 acc 0.96094", printed  # TF1's numbers (compat) and TF2's alike


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_a_model_class_with_a_builder_method_and_a_config_attribute_runs_natively(tmp_path: Path, mode: str) -> None:
    report, migrated = _migrate(tmp_path, "train.py", BUILDER, mode)
    assert report.will_run == report.files, report.statuses
    text = migrated.read_text()
    if mode == "native":
        assert not re.search(r"compat\.v1|Session|placeholder|class TextModel", text), text
        assert "units=config.hidden" in text  # `self.config` of the parameter is the caller's `config`
        assert "tf.train.Checkpoint(" in text
    (tmp_path / "ckpt").mkdir()
    assert run(migrated, str(tmp_path / "ckpt")) == "improved True"


REFUSED = {
    "the instance passed to a function": ("def step(m):\n    return m.loss\n", "print(step(model))"),
    "a method called on the instance": ("", "print(model.predict())"),
    "an attribute set from outside": ("", "model.loss = 1"),
    "a second instance": ("", "other = Model(3)"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_anything_but_the_plain_shape_is_left_as_it_was(case: str) -> None:
    helper, use = REFUSED[case]
    source = (
        "import tensorflow as tf\n"
        "class Model(object):\n"
        "    def __init__(self, n):\n"
        "        self.x = tf.compat.v1.placeholder(tf.float32, [None, n])\n"
        "        self.loss = tf.reduce_sum(self.x)\n"
        "    def predict(self):\n"
        "        return self.loss\n"
        f"{helper}"
        "model = Model(3)\n"
        f"{use}\n"
    )
    if case != "a method called on the instance":
        source = source.replace("    def predict(self):\n        return self.loss\n", "")
    out, changes = inline_graph_classes(source)
    assert out == source and changes == []


def test_a_class_that_builds_no_graph_is_left_alone() -> None:
    source = "class Data(object):\n    def __init__(self, n):\n        self.n = n\n\nd = Data(3)\nprint(d.n)\n"
    assert inline_graph_classes(source) == (source, [])


def test_names_the_caller_already_uses_get_the_instance_prefix() -> None:
    source = (
        "import tensorflow as tf\n"
        "class Model(object):\n"
        "    def __init__(self, n):\n"
        "        h = tf.ones([n])\n"
        "        self.loss = tf.reduce_sum(h)\n"
        "def main():\n"
        "    loss, h = 0, 1\n"
        "    model = Model(3)\n"
        "    print(model.loss, loss, h)\n"
    )
    out, changes = inline_graph_classes(source)
    assert "model_h = tf.ones([3])" in out and "model_loss = tf.reduce_sum(model_h)" in out
    assert "print(model_loss, loss, h)" in out and "class Model" not in out
    assert len(changes) == 1


GLOBAL_STEP = """\
import numpy as np
import tensorflow as tf


class Net:
    def __init__(self, lr):
        self.x = tf.placeholder(tf.float32, [None, 4])
        self.y = tf.placeholder(tf.float32, [None, 1])
        self.global_step = tf.Variable(0, trainable=False, name="global_step")
        w = tf.Variable(np.full((4, 1), 0.1, np.float32))
        self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, w) - self.y))
        self.train_op = tf.train.AdamOptimizer(lr).minimize(self.loss, global_step=self.global_step)


def main():
    x = np.arange(40, dtype=np.float32).reshape(10, 4) / 40.0
    y = x.sum(axis=1, keepdims=True)
    net = Net(0.05)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(20):
            _, loss, step = sess.run([net.train_op, net.loss, net.global_step], feed_dict={net.x: x, net.y: y})
        print("step %d loss %.4f" % (step, loss))


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_minimize_with_a_global_step_adds_one_per_update_as_tf1_did(tmp_path: Path, mode: str) -> None:
    report, migrated = _migrate(tmp_path, "train.py", GLOBAL_STEP, mode)
    assert report.will_run == report.files, report.statuses
    text = migrated.read_text()
    if mode == "native":
        assert not re.search(r"compat\.v1|Session|placeholder", text), text
        assert "global_step.assign_add(1)" in text
    assert run(migrated) == "step 20 loss 0.0199"
