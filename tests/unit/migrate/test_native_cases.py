"""--mode native from a table of cases: tf_upgrade_v2-style TF1 input -> what the TF2 output holds, or why not.

The inputs are written as tf_upgrade_v2 leaves them (``tf.compat.v1.placeholder``, ``tf.compat.v1.Session``),
which is what :func:`rewrite_native` receives inside ``tfpilot migrate``. No TensorFlow runs here: the
programs are run, against their TF1 meaning, in test_migrate_native.py.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap

import pytest

from tfpilot.migrate.native import rewrite_native


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    source: str
    contains: tuple[str, ...] = ()  # in the native output
    absent: tuple[str, ...] = ()  # not in the native output
    fallback: str = ""  # the start of the reason when the file stays on compat
    once: tuple[str, ...] = ()  # exactly once in the native output (no duplicated forward pass)


MODULE_STEP = """
import tensorflow as tf
x = tf.compat.v1.placeholder(tf.float32, [None, 2])
y = tf.compat.v1.placeholder(tf.float32, [None, 1])
W = tf.Variable(tf.zeros([2, 1]))
pred = tf.matmul(x, W)
loss = tf.reduce_mean(tf.square(y - pred))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    _, value = sess.run([train_op, loss], feed_dict={x: xs, y: ys})
    print(value)
"""

ITERATOR_STEP = """
import numpy as np
import tensorflow as tf
dataset = tf.data.Dataset.from_tensor_slices((xs, ys)).repeat().batch(4)
it = tf.compat.v1.data.make_one_shot_iterator(dataset)
x, y = it.get_next()
W = tf.Variable(tf.zeros([2, 1]))
loss = tf.reduce_mean(tf.square(y - tf.matmul(x, W)))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    print(sess.run([x, y]))
    _, value = sess.run([train_op, loss])
    print(value)
"""

MAIN_STEP = """
import tensorflow as tf

def main(_):
    x = tf.compat.v1.placeholder(tf.float32, [None, 2])
    y = tf.compat.v1.placeholder(tf.float32, [None, 1])
    W = tf.Variable(tf.zeros([2, 1]))
    loss = tf.reduce_mean(tf.square(y - tf.matmul(x, W)))
    train_step = tf.compat.v1.train.AdamOptimizer(0.1).minimize(loss)
    sess = tf.compat.v1.InteractiveSession()
    tf.compat.v1.global_variables_initializer().run()
    for _ in range(3):
        sess.run(train_step, feed_dict={x: xs, y: ys})
    print(sess.run(loss, feed_dict={x: xs, y: ys}))

if __name__ == "__main__":
    tf.compat.v1.app.run(main=main)
"""

TWO_PROGRAMS = """
import numpy as np
import tensorflow as tf


def model(x):
    hidden = tf.compat.v1.layers.batch_normalization(x)
    return tf.compat.v1.layers.dense(hidden, 1)


def fit_line():
    x = tf.compat.v1.placeholder(tf.float32, [None, 2])
    y = tf.compat.v1.placeholder(tf.float32, [None, 1])
    pred = model(x)
    loss = tf.reduce_mean(tf.square(y - pred))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for step in range(3):
            _, value = sess.run([train_op, loss], feed_dict={x: np.ones((4, 2)), y: np.ones((4, 1))})
            print(value)


def count():
    total = tf.Variable(0.0)
    add = tf.compat.v1.assign_add(total, 1.0)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for _ in range(3):
            sess.run(add)
        print(sess.run(total))


if __name__ == "__main__":
    fit_line()
    count()
"""

TWO_PLAYERS = """
import tensorflow as tf
x = tf.compat.v1.placeholder(tf.float32, [None, 2])
z = tf.compat.v1.placeholder(tf.float32, [None, 2])
W_d = tf.Variable(tf.ones([2, 1]))
W_g = tf.Variable(tf.ones([2, 2]))
theta_d = [W_d]
theta_g = [W_g]
eps = tf.random.uniform([4, 1])
fake = tf.matmul(z, W_g)
mixed = eps * x + (1.0 - eps) * fake
d_loss = tf.reduce_mean(tf.matmul(mixed, W_d)) - tf.reduce_mean(tf.matmul(x, W_d))
g_loss = -tf.reduce_mean(tf.matmul(fake, W_d))
d_step = tf.compat.v1.train.AdamOptimizer(0.1).minimize(d_loss, var_list=theta_d)
g_step = tf.compat.v1.train.AdamOptimizer(0.1).minimize(g_loss, var_list=theta_g)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for _ in range(3):
        _, d = sess.run([d_step, d_loss], feed_dict={x: xs, z: zs})
        _, g = sess.run([g_step, g_loss], feed_dict={z: zs})
    print(d, g)
"""

TRAIN_AND_EVALUATE = """
import tensorflow as tf
x = tf.compat.v1.placeholder(tf.float32, [None, 2])
y = tf.compat.v1.placeholder(tf.float32, [None, 2])
W = tf.Variable(tf.zeros([2, 2]))
logits = tf.matmul(x, W)
loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1))
accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for _ in range(3):
        _, l, acc = sess.run([train_op, loss, accuracy], feed_dict={x: xs, y: ys})
    print(sess.run(accuracy, feed_dict={x: xs, y: ys}))
"""

REBOUND = """
import tensorflow as tf
x = tf.compat.v1.placeholder(tf.float32, [None, 2])
y_ = tf.compat.v1.placeholder(tf.float32, [None, 1])
W = tf.Variable(tf.zeros([2, 1]))
y = tf.matmul(x, W)
loss = tf.reduce_mean(tf.square(y_ - y))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
ys = []
for i in range(4):
    y = 2 * i
    ys.append([y])
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    sess.run(train_op, feed_dict={x: xs, y_: ys})
"""

LOOP_LOSS = """
import tensorflow as tf
xs, ys = [0.0, 1.0, 2.0], [1.0, 0.5, 0.0]
m = tf.Variable(-0.5)
b = tf.Variable(1.0)
total = 0.0
for x, y in zip(xs, ys):
    total += (y - (m * x + b)) ** 2
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(total)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for _ in range(3):
        sess.run(train_op)
    print(sess.run(m))
"""

CASES = [
    Case(
        "a TF1 optimizer's compute_gradients / apply_gradients(grads_and_vars): compat (held-out round 5)",
        """
import tensorflow as tf
W = tf.Variable(5.0)
cost = tf.reduce_mean(tf.square([1.0, 2.0] * W - [1.0, 2.0]))
optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=0.01)
gvs = optimizer.compute_gradients(cost)
apply_gradients = optimizer.apply_gradients(gvs)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(3):
        print(step, sess.run([cost, gvs]))
        sess.run(apply_gradients)
""",
        # the pairs are fetched by a step of their own, which has no tape to take them from
        fallback="compute_gradients' pairs fetched outside the train step",
    ),
    Case(
        "compute_gradients' pairs fetched with the update: compat (TF1 read the variables before it)",
        """
import tensorflow as tf
W = tf.Variable(5.0)
cost = tf.reduce_mean(tf.square([1.0, 2.0] * W - [1.0, 2.0]))
optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=0.01)
gvs = optimizer.compute_gradients(cost)
apply_gradients = optimizer.apply_gradients(gvs)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(3):
        gvs_val, _ = sess.run([gvs, apply_gradients])
        print(step, gvs_val)
""",
        fallback="compute_gradients' pairs fetched with the update",
    ),
    Case(
        "compute_gradients + a clip over the pairs + apply_gradients: one train step (held-out rounds 5 and 6)",
        """
import tensorflow as tf
x = tf.compat.v1.placeholder(tf.float32, [None, 2])
W = tf.Variable(tf.ones([2, 1]))
cost = tf.reduce_mean(tf.square(tf.matmul(x, W)))
optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=0.01)
gvs = optimizer.compute_gradients(cost)
capped = [(tf.clip_by_norm(g, 1.0), v) for g, v in gvs]
train = optimizer.apply_gradients(capped)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    _, c = sess.run([train, cost], feed_dict={x: xs})
    print(c)
""",
        contains=(
            "with tf.GradientTape() as tape:\n        cost = ",
            "\n    gvs = list(zip(tape.gradient(cost, tape.watched_variables()), tape.watched_variables()))",
            "\n    capped = [(tf.clip_by_norm(g, 1.0), v) for g, v in gvs]\n    optimizer.apply_gradients(capped)",
        ),
        absent=("compat.v1", "Session", "compute_gradients"),
    ),
    Case(
        "get_variable: a tf.Variable with TF1's default (Glorot uniform) or the Keras twin of its initializer",
        """
import tensorflow as tf
w = tf.compat.v1.get_variable('w', [3, 2])
b = tf.compat.v1.get_variable('b', shape=[2], initializer=tf.compat.v1.zeros_initializer)
s = tf.compat.v1.get_variable('s', [], initializer=tf.compat.v1.random_normal_initializer(0.0, 0.5))
out = tf.reduce_sum(tf.matmul(tf.ones([1, 3]), w) + b) * s
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    print(sess.run(out))
""",
        contains=(
            "w = tf.Variable(keras.initializers.GlorotUniform()([3, 2], dtype=tf.float32), name='w')",
            "b = tf.Variable(keras.initializers.Zeros()([2], dtype=tf.float32), name='b')",
            "keras.initializers.RandomNormal(mean=0.0, stddev=0.5)([], dtype=tf.float32)",
        ),
        absent=("compat.v1", "get_variable"),
    ),
    Case(
        "get_variable where variable scopes share by name: compat",
        """
import tensorflow as tf
w = tf.compat.v1.get_variable('w', [2])
with tf.compat.v1.variable_scope('', reuse=True):
    again = tf.compat.v1.get_variable('w', [2])
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    print(sess.run(w))
""",
        fallback="get_variable in a file that shares variables by scope (reuse)",
    ),
    Case(
        "a tf.layers.Dense object (made once, called later) becomes the Keras layer; an unused first Session goes",
        """
import tensorflow as tf
sess = tf.compat.v1.Session()
x = tf.constant([[1.0], [2.0]])
linear = tf.compat.v1.layers.Dense(units=1)
y_pred = linear(x)
loss = tf.reduce_mean(tf.square(y_pred - 1.0))
train = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss)
sess = tf.compat.v1.Session()
sess.run(tf.compat.v1.global_variables_initializer())
for _ in range(3):
    sess.run(train)
print(sess.run(y_pred))
""",
        contains=("linear = keras.layers.Dense(units=1)", "y_pred = linear(x)", "tf.GradientTape()"),
        absent=("compat.v1", "Session", "layers.Dense(units=1)(x)"),
    ),
    Case(
        "a second Session after the first ran something starts fresh in TF1: compat",
        """
import tensorflow as tf
w = tf.Variable(1.0)
step = tf.compat.v1.assign_add(w, 1.0)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    sess.run(step)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    print(sess.run(w))
""",
        fallback="a second Session starts from fresh variables",
    ),
    Case(
        "compute_gradients with a minimize on the same optimizer: compat",
        """
import tensorflow as tf
W = tf.Variable(1.0)
cost = tf.square(W)
optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
gvs = optimizer.compute_gradients(cost)
train = optimizer.minimize(cost)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    sess.run(train)
""",
        fallback="the TF1 optimizer's compute_gradients / apply_gradients other than once each",
    ),
    Case(
        "module-level Session: one train step returning the fetched loss",
        MODULE_STEP,
        contains=("@tf.function\ndef train_step(x, y):", "tf.GradientTape()", "value = train_step(xs, ys).numpy()"),
        absent=("Session", "placeholder", "compat.v1", "global_variables_initializer"),
    ),
    Case(
        "Session in main() started by tf.app.run: nested steps, sys.exit(main(argv))",
        MAIN_STEP,
        contains=(
            "def main(_):\n",
            "    @tf.function\n    def train_step(x, y):",
            "keras.optimizers.Adam(learning_rate=0.1, epsilon=1e-08)",
            "sys.exit(main(sys.argv))",
            "import sys",
        ),
        absent=("Session", "compat.v1", ".run()"),
    ),
    Case(
        "graph at module level, Session under `if __name__ == '__main__':` (the block is kept around the loop)",
        MODULE_STEP.replace(
            "with tf.compat.v1.Session() as sess:", "if __name__ == '__main__':\n  with tf.compat.v1.Session() as sess:"
        ).replace("\n    ", "\n      "),
        contains=(
            "if __name__ == '__main__':\n  @tf.function\n  def train_step(x, y):",
            "  value = train_step(xs, ys).numpy()",
        ),
        absent=("Session", "compat.v1"),
    ),
    Case(
        "graph and Session both under `if __name__ == '__main__':`",
        "import tensorflow as tf\nif __name__ == '__main__':\n"
        + textwrap.indent(MODULE_STEP.replace("import tensorflow as tf\n", ""), "    "),
        contains=("if __name__ == '__main__':\n", "    @tf.function\n    def train_step(x, y):"),
        absent=("Session", "compat.v1"),
    ),
    Case(
        "tf.Graph().as_default() block in main",
        MAIN_STEP.replace("def main(_):\n", "def main(_):\n  with tf.Graph().as_default():\n").replace(
            "\n    ", "\n      "
        ),
        contains=("def train_step(x, y):",),
        absent=("as_default", "Graph()"),
    ),
    Case(
        "graph = tf.Graph() built under `with graph.as_default()` and run by Session(graph=graph)",
        "import tensorflow as tf\ngraph = tf.Graph()\nwith graph.as_default():\n"
        + textwrap.indent(
            MODULE_STEP.replace("import tensorflow as tf\n", "").split("with tf.compat.v1.Session")[0], "    "
        )
        + "with tf.compat.v1.Session(graph=graph) as sess:"
        + MODULE_STEP.split("with tf.compat.v1.Session() as sess:")[1],
        contains=("def train_step(x, y):",),
        absent=("graph", "Session"),
    ),
    Case(
        "graph = tf.Graph(): a member named `graph` elsewhere (`run_info.graph`) is not a use of the name",
        "import tensorflow as tf\nimport types\nrun_info = types.SimpleNamespace(graph='g')\ngraph = tf.Graph()\n"
        "with graph.as_default():\n"
        + textwrap.indent(
            MODULE_STEP.replace("import tensorflow as tf\n", "").split("with tf.compat.v1.Session")[0], "    "
        )
        + "with tf.compat.v1.Session(graph=graph) as sess:"
        + MODULE_STEP.split("with tf.compat.v1.Session() as sess:")[1]
        + "print(run_info.graph)\n",
        contains=("def train_step(x, y):", "print(run_info.graph)"),
        absent=("tf.Graph", "Session"),
    ),
    Case(
        "a tf.Graph() used for more than as_default / Session(graph=)",
        "import tensorflow as tf\ngraph = tf.Graph()\nwith graph.as_default():\n    x = tf.constant(1)\ngraph.finalize()\n"
        "with tf.compat.v1.Session(graph=graph) as sess:\n    print(sess.run(x))\n",
        fallback="a Session with a target or graph argument",
    ),
    Case(
        "a Session kept in a class",
        "import tensorflow as tf\nclass Model:\n    def __init__(self):\n        self.sess = tf.compat.v1.Session()\n",
        fallback="the Session lives in class `Model`",
    ),
    Case(
        "Sessions in two functions",
        "import tensorflow as tf\ndef a():\n    s = tf.compat.v1.Session()\ndef b():\n    s = tf.compat.v1.Session()\n",
        contains=("def a():", "def b():"),
        absent=("Session",),
    ),
    Case(
        "graph at module level, Session in main",
        "import tensorflow as tf\nx = tf.compat.v1.placeholder(tf.float32)\ndef main():\n"
        "    with tf.compat.v1.Session() as sess:\n        print(sess.run(x * 2, {x: 1.0}))\n",
        fallback="`tensorflow.compat.v1.placeholder` at module level while the Session runs in a function",
    ),
    Case(
        "a train op on variables only, variables fetched as a tuple",
        """
import tensorflow as tf
m = tf.Variable(-0.5)
b = tf.Variable(1.0)
error = tf.reduce_sum((ys - (m * xs + b)) ** 2)
step = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=0.001).minimize(error)
with tf.compat.v1.Session() as session:
    session.run(tf.compat.v1.global_variables_initializer())
    for _ in range(10):
        session.run(step)
    slope, intercept = session.run((m, b))
""",
        contains=("def train_step():", "        error = tf.reduce_sum(", "slope, intercept = (m.numpy(), b.numpy())"),
        absent=("Session",),
    ),
    Case(
        "tf.compat.v1.assign_add -> Variable.assign_add, recomputed at every run",
        """
import tensorflow as tf
counter = tf.Variable(0)
increment = tf.compat.v1.assign_add(counter, 1)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for _ in range(3):
        print(sess.run(increment))
""",
        contains=("increment = counter.assign_add(1)", "print(compute_increment().numpy())"),
        absent=("compat.v1",),
    ),
    Case(
        "a tensor of constants is computed once, eagerly; sess.close() goes",
        """
import tensorflow as tf
a = tf.constant([[2, 2]])
product = tf.matmul(a, tf.constant([[3], [3]]))
doubled = product * 2
sess = tf.compat.v1.Session()
print(sess.run(product), sess.run([product, doubled]))
sess.close()
""",
        contains=("product = tf.matmul(", "print(product.numpy(), [product.numpy(), doubled.numpy()])"),
        absent=("close", "Session"),
    ),
    Case(
        "a variable printed itself (TF1 printed its name and shape, TF2 its value)",
        MODULE_STEP.replace("    print(value)", "    print(value, W)"),
        fallback="variable `W` is printed itself",
    ),
    Case(
        "a random tensor is not a constant: each sess.run drew anew, and so does each call of its step",
        "import tensorflow as tf\nc = tf.random.normal([])\nwith tf.compat.v1.Session() as sess:\n    print(sess.run(c))\n",
        contains=("def compute_c():\n    c = tf.random.normal([])\n", "print(compute_c().numpy())"),
    ),
    Case(
        "a tensor printed outside sess.run (TF1 printed its description, TF2 its value)",
        "import tensorflow as tf\nc = tf.constant(3)\nprint(c)\nwith tf.compat.v1.Session() as sess:\n    print(sess.run(c))\n",
        fallback="tensor `c` is used outside sess.run",
    ),
    Case(
        "a feed_dict bound to a name is inlined where it is fed",
        MODULE_STEP.replace(
            "    _, value = sess.run([train_op, loss], feed_dict={x: xs, y: ys})",
            "    for batch in batches:\n        feed = {x: batch[0], y: batch[1]}\n"
            "        _, value = sess.run([train_op, loss], feed_dict=feed)",
        ),
        contains=("value = train_step(batch[0], batch[1]).numpy()",),
        absent=("feed =", "feed_dict"),
    ),
    Case(
        "a named feed_dict whose values are rebound before its sess.run",
        MODULE_STEP.replace(
            "    _, value = sess.run([train_op, loss], feed_dict={x: xs, y: ys})",
            "    feed = {x: xs, y: ys}\n    xs = xs * 2\n    _, value = sess.run([train_op, loss], feed_dict=feed)",
        ),
        fallback="feed_dict `feed` reads names rebound before the sess.run",
    ),
    Case(
        "a named feed_dict read other than as a feed",
        MODULE_STEP.replace(
            "    _, value = sess.run([train_op, loss], feed_dict={x: xs, y: ys})",
            "    feed = {x: xs, y: ys}\n    print(len(feed))\n    _, value = sess.run([train_op, loss], feed_dict=feed)",
        ),
        fallback="feed_dict `feed` is used other than as a feed_dict",
    ),
    Case(
        "summaries: merge_all -> a dict of tensors, FileWriter -> create_file_writer, tags keep the name scope",
        MODULE_STEP.replace(
            "loss = tf.reduce_mean(tf.square(y - pred))",
            "with tf.compat.v1.name_scope('cost'):\n    loss = tf.reduce_mean(tf.square(y - pred))\n"
            "    tf.summary.scalar('loss', loss)\ntf.summary.histogram('weights', W)",
        ).replace(
            "    _, value = sess.run([train_op, loss], feed_dict={x: xs, y: ys})",
            "    merged = tf.compat.v1.summary.merge_all()\n"
            "    writer = tf.compat.v1.summary.FileWriter('logs', sess.graph)\n"
            "    _, value = sess.run([train_op, loss], feed_dict={x: xs, y: ys})\n"
            "    writer.add_summary(sess.run(merged, feed_dict={x: xs, y: ys}), 0)",
        ),
        contains=(
            "writer = tf.summary.create_file_writer('logs')",
            "{'scalar': {'cost/loss': loss}, 'histogram': {'weights': W}}",
            "write_summaries(writer, compute_merged(xs, ys), 0)",
            "with writer.as_default(step=step):",
        ),
        absent=("compat.v1", "name_scope", "sess.graph"),
    ),
    Case(
        "add_summary without a step",
        MODULE_STEP.replace(
            "    _, value = sess.run([train_op, loss], feed_dict={x: xs, y: ys})",
            "    tf.summary.scalar('loss', loss)\n    merged = tf.compat.v1.summary.merge_all()\n"
            "    writer = tf.compat.v1.summary.FileWriter('logs')\n"
            "    writer.add_summary(sess.run(merged, feed_dict={x: xs, y: ys}))",
        ),
        fallback="add_summary without a step",
    ),
    Case(
        "a name scope whose `as` name is read stays (the graph is then inside a block)",
        MODULE_STEP.replace(
            "pred = tf.matmul(x, W)",
            "with tf.compat.v1.name_scope('model') as scope:\n    pred = tf.matmul(x, W, name=scope)",
        ),
        fallback="a graph tensor is defined inside a loop or block",
    ),
    Case(
        "two runs that share the forward pass call one helper",
        MODULE_STEP.replace("pred = tf.matmul(x, W)", "hidden = tf.matmul(x, W)\npred = tf.nn.relu(hidden)")
        .replace(
            "with tf.compat.v1.Session() as sess:",
            "error = tf.reduce_mean(tf.abs(y - pred))\nwith tf.compat.v1.Session() as sess:",
        )
        .replace("    print(value)", "    print(value, sess.run(error, feed_dict={x: xs, y: ys}))"),
        contains=(
            "def forward(x):\n",
            "        pred = forward(x)\n        loss = ",
            "    pred = forward(x)\n    error = ",
        ),
        once=("hidden = tf.matmul(x, W)",),
    ),
    Case(
        "the graph calls a function imported from another module",
        MODULE_STEP.replace("import tensorflow as tf\n", "import tensorflow as tf\nfrom layers import dense\n").replace(
            "pred = tf.matmul(x, W)", "pred = dense(x, W)"
        ),
        fallback="the graph calls `layers.dense`",
    ),
    Case(
        "tf.app.flags -> absl flags, tf.app.run -> absl app.run",
        "import tensorflow as tf\nFLAGS = tf.compat.v1.app.flags.FLAGS\n"
        "tf.compat.v1.app.flags.DEFINE_integer('steps', 3, 'steps')\n"
        + MAIN_STEP.replace("import tensorflow as tf\n", "").replace("range(3)", "range(FLAGS.steps)"),
        contains=(
            "from absl import app",
            "from absl import flags",
            "FLAGS = flags.FLAGS",
            "app.run(main)",
        ),
        absent=("compat.v1",),
    ),
    Case(
        "absl imports go after every `from __future__` import (held-out round 4: burness' MLP)",
        "from __future__ import absolute_import\nfrom __future__ import division\n"
        "import tensorflow as tf\nFLAGS = tf.compat.v1.app.flags.FLAGS\n"
        "tf.compat.v1.app.flags.DEFINE_integer('steps', 3, 'steps')\n"
        + MAIN_STEP.replace("import tensorflow as tf\n", "").replace("range(3)", "range(FLAGS.steps)"),
        contains=(
            "from __future__ import absolute_import\nfrom __future__ import division\nfrom absl import app\n",
            "app.run(main)",
        ),
        absent=("compat.v1",),
    ),
    Case(
        "a data loop after the graph reuses a tensor's name for Python values: the tensor stays the steps' local",
        REBOUND,
        contains=("    y = 2 * i\n", "def train_step(x, y_):", "  y = tf.matmul(x, W)"),
        absent=("compat.v1", "Session"),
    ),
    Case(
        "a data loop unpacks into a tensor's name (`_`, thrown away twice): it is rebound as plainly as `y = ...`",
        REBOUND.replace("y = tf.matmul(x, W)\n", "y, _ = tf.matmul(x, W), tf.reduce_sum(W)\n").replace(
            "    y = 2 * i\n", "    y, _ = 2 * i, None\n"
        ),
        contains=("    y, _ = 2 * i, None\n", "def train_step(x, y_):"),
        absent=("compat.v1", "Session"),
    ),
    Case(
        "two functions, each its own graph and Session (a file of examples): each is rewritten on its own",
        TWO_PROGRAMS,
        contains=(
            "def fit_line():",
            "def count():",
            "    model = Model()",
            "class Model(tf.Module):",
            "keras.layers.BatchNormalization()",
            "training=False)",
        ),
        absent=("compat.v1", "Session", "placeholder"),
    ),
    Case(
        "a model function both Session functions call: one tf.Module class cannot serve two rewrites, so compat",
        TWO_PROGRAMS.replace(
            "        print(sess.run(total))\n",
            "        print(sess.run(total))\n        print(sess.run(scored, feed_dict={z: np.ones((1, 2))}))\n",
        ).replace(
            "    total = tf.Variable(0.0)\n",
            "    total = tf.Variable(0.0)\n    z = tf.compat.v1.placeholder(tf.float32, [None, 2])\n    scored = model(z)\n",
        ),
        fallback="model function `model` is used outside the graph's definitions",
    ),
    Case(
        "tf.layers.batch_normalization(training=...) in training mode: TF1 updated its averages only through UPDATE_OPS",
        TWO_PROGRAMS.replace("batch_normalization(x)", "batch_normalization(x, training=True)"),
        fallback="tf.layers.batch_normalization(training=...)",
    ),
    Case(
        "two players, each minimize() over its own var_list: each step updates that list only; a random op "
        "that reads no graph tensor is drawn anew by every step that uses it, as every sess.run drew it",
        TWO_PLAYERS,
        contains=(
            "    variables = theta_d\n",
            "    variables = theta_g\n",
            "        eps = tf.random.uniform([4, 1])\n",
        ),
        absent=("compat.v1", "Session", "watched_variables", "\neps = "),
    ),
    Case(
        "a random initializer object at module level is no draw: it stays where it is, made once",
        TWO_PLAYERS.replace(
            "W_d = tf.Variable(tf.ones([2, 1]))\n",
            "init = tf.compat.v1.keras.initializers.RandomNormal(stddev=0.1)\nW_d = tf.Variable(init([2, 1]))\n",
        ).replace("init = tf.compat.v1.keras.initializers.RandomNormal", "init = tf.random_normal_initializer"),
        contains=("\ninit = tf.random_normal_initializer(stddev=0.1)\nW_d = tf.Variable(init([2, 1]))\n",),
        absent=("compat.v1", "Session"),
    ),
    Case(
        "a tf.data pipeline shuffled by tf.data.experimental.shuffle_and_repeat is a dataset, not a per-run draw",
        """
import numpy as np
import tensorflow as tf
xs = np.random.rand(64, 2).astype(np.float32)
dataset = tf.data.Dataset.from_tensor_slices(xs).apply(tf.data.experimental.shuffle_and_repeat(64)).batch(8)
iterator = tf.compat.v1.data.make_one_shot_iterator(dataset)
x = iterator.get_next()
W = tf.Variable(tf.ones([2, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(x, W)))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for _ in range(3):
        _, l = sess.run([train_op, loss])
""",
        contains=("iterator = iter(dataset)",),
        absent=("compat.v1", "Session"),
    ),
    Case(
        "minimize(loss, global_step=...) with a step counter that is no tf.Variable of the scope: compat "
        "(a tf.Variable one gets `step.assign_add(1)` after each update, test_migrate_graph_classes.py)",
        TWO_PLAYERS.replace("var_list=theta_g)", "global_step=step_counter)"),
        fallback="minimize(global_step=step_counter) where `step_counter` is no tf.Variable of this scope",
    ),
    Case(
        "a train step that also fetches what an evaluation step computes: the shared forward pass runs once, "
        "under the tape, before the update (TF1 computed loss and accuracy from one pass)",
        TRAIN_AND_EVALUATE,
        contains=("    with tf.GradientTape() as tape:\n        logits, accuracy = forward(x, y)\n        loss = ",),
        once=("logits = tf.matmul(x, W)", "forward(x, y)\n        loss"),
        absent=("compat.v1", "Session"),
    ),
    Case(
        "the rebound name is read after the loop: which value it holds depends on the loop, so compat",
        REBOUND + "print(y)\n",
        fallback="a graph tensor is defined inside a loop or block",
    ),
    Case(
        "the loop reads the tensor's name before rebinding it: compat",
        REBOUND.replace("    y = 2 * i\n", "    print(y)\n    y = 2 * i\n"),
        fallback="a graph tensor is defined inside a loop or block",
    ),
    Case(
        "a loss summed in a Python loop over the data: the start and the loop move under the tape, once",
        LOOP_LOSS,
        contains=(
            "    with tf.GradientTape() as tape:\n        total = 0.0\n        for x, y in zip(xs, ys):\n",
            "            total += (y - (m * x + b)) ** 2\n",
        ),
        once=("total = 0.0",),
        absent=("compat.v1", "Session"),
    ),
    Case(
        "a loop that refines a tensor (`out = out * 2.0`) keeps the tensor it starts from",
        "import tensorflow as tf\nx = tf.compat.v1.placeholder(tf.float32, [None, 2])\nout = x\n"
        "for _ in range(2):\n    out = out * 2.0\ntotal = tf.reduce_sum(out)\n"
        "with tf.compat.v1.Session() as sess:\n    print(sess.run(total, feed_dict={x: xs}))\n",
        contains=("    out = x\n    for _ in range(2):\n        out = out * 2.0\n    total = tf.reduce_sum(out)\n",),
        absent=("compat.v1",),
    ),
    Case(
        "the loop adds to a name that does not start from a number right before it",
        LOOP_LOSS.replace("total = 0.0\n", "total = 0.0\nprint(total)\n"),
        fallback="the loop adds to `total`, which does not start from a number right before it",
    ),
    Case(
        "a graph loop with a branch in it",
        LOOP_LOSS.replace("    total += (y", "    if y:\n        total += (y"),
        fallback="a graph tensor is defined inside a loop or block",
    ),
    Case(
        "a loop over graph tensors that binds nothing is not a graph loop: judged by the other checks",
        MODULE_STEP.replace(
            "with tf.compat.v1.Session()", "for tensor in [loss]:\n    print(tensor)\nwith tf.compat.v1.Session()"
        ),
        fallback="graph tensor `loss` is used outside sess.run / eval",
    ),
    Case(
        "a graph loop over a tensor",
        LOOP_LOSS.replace("zip(xs, ys)", "zip(xs, [b, b])"),
        fallback="a graph tensor is defined inside a loop or block",
    ),
    Case(
        "merge_all()'s result fetched in a list with a number: the dict stays, the number is read",
        MODULE_STEP.replace(
            "train_op = ",
            "tf.compat.v1.summary.scalar('loss', loss)\nmerged = tf.compat.v1.summary.merge_all()\ntrain_op = ",
        ).replace(
            "    print(value)",
            "    writer = tf.compat.v1.summary.FileWriter('logs')\n"
            "    summary, value = sess.run([merged, loss], feed_dict={x: xs, y: ys})\n"
            "    writer.add_summary(summary, 0)",
        ),
        contains=(
            "summary, value = [value if isinstance(value, dict) else value.numpy() for value in compute_merged_loss(xs, ys)]",
            "write_summaries(writer, summary, 0)",
        ),
        absent=("compat.v1",),
    ),
    Case(
        "`with sess.as_default():` opened; Operation.run(), Tensor.eval() and Variable.eval() are sess.run sites",
        MODULE_STEP.replace(
            "with tf.compat.v1.Session() as sess:", "sess = tf.compat.v1.Session()\nwith sess.as_default():"
        )
        .replace(
            "sess.run(tf.compat.v1.global_variables_initializer())", "tf.compat.v1.global_variables_initializer().run()"
        )
        .replace(
            "    _, value = sess.run([train_op, loss], feed_dict={x: xs, y: ys})\n    print(value)",
            "    train_op.run(feed_dict={x: xs, y: ys})\n    print(loss.eval(feed_dict={x: xs, y: ys}), W.eval())",
        ),
        contains=("train_step(xs, ys)\n", "print(compute_loss(xs, ys).numpy(), W.numpy())"),
        absent=("compat.v1", "Session", "as_default", ".eval(", ".run("),
    ),
    Case(
        "variables made by helper functions stay made once, and the Checkpoint holds them as TF1's Saver did",
        MODULE_STEP.replace(
            "W = tf.Variable(tf.zeros([2, 1]))",
            "def make(shape):\n    return tf.Variable(tf.zeros(shape))\n\ndef weight_variable(shape):\n"
            "    return make(shape)\n\nW = weight_variable([2, 1])",
        )
        .replace("with tf.compat.v1.Session()", "saver = tf.compat.v1.train.Saver()\nwith tf.compat.v1.Session()")
        .replace("    print(value)", "    print(value)\n    saver.save(sess, 'model')"),
        contains=("W = weight_variable([2, 1])\n", "tf.train.Checkpoint(W=W, optimizer=optimizer)"),
        once=("weight_variable([2, 1])",),
        absent=("compat.v1",),
    ),
    Case(
        "Saver(all variables, max_to_keep) is the Checkpoint Saver() is; save(global_step=) writes `path-step`",
        MODULE_STEP.replace(
            "with tf.compat.v1.Session()",
            "saver = tf.compat.v1.train.Saver(tf.compat.v1.global_variables(), max_to_keep=3)\n"
            "with tf.compat.v1.Session()",
        ).replace("    print(value)", "    print(value)\n    saver.save(sess, 'model', global_step=7)"),
        contains=(
            "tf.train.Checkpoint(W=W, optimizer=optimizer)",
            "saver.write(\"{}-{}\".format('model', int(7)))",
        ),
        absent=("compat.v1", "max_to_keep"),
    ),
    Case(
        "a Saver over a chosen dict of variables saves a subset: compat",
        MODULE_STEP.replace(
            "with tf.compat.v1.Session()", "saver = tf.compat.v1.train.Saver({'w': W})\nwith tf.compat.v1.Session()"
        ).replace("    print(value)", "    print(value)\n    saver.save(sess, 'model')"),
        fallback="tf.train.Saver with arguments other than all variables and max_to_keep",
    ),
    Case(
        "a model function (makes variables, returns what it computes): a tf.Module made once, called in the steps",
        MODULE_STEP.replace(
            "W = tf.Variable(tf.zeros([2, 1]))\npred = tf.matmul(x, W)",
            "def model(x, n_out):\n    W = tf.Variable(tf.zeros([2, n_out]))\n    b = tf.Variable(tf.zeros([n_out]))\n"
            "    return tf.matmul(x, W) + b\n\npred = model(x, 1)",
        )
        .replace("with tf.compat.v1.Session()", "saver = tf.compat.v1.train.Saver()\nwith tf.compat.v1.Session()")
        .replace("    print(value)", "    print(value)\n    saver.save(sess, 'model')"),
        contains=(
            "class Model(tf.Module):",
            "    def __init__(self, n_out):\n        super().__init__()\n        self.W = tf.Variable(tf.zeros([2, n_out]))",
            "    def __call__(self, x):\n",
            "return tf.matmul(x, self.W) + self.b\n",
            "model = Model(1)\n",
            "        pred = model(x)\n",
            "tf.train.Checkpoint(model=model, optimizer=optimizer)",
        ),
        once=("Model(1)",),
        absent=("compat.v1", "def model("),
    ),
    Case(
        "a model function of tf.layers under variable_scope(reuse=reuse): the reuse=True call shares the instance",
        MODULE_STEP.replace(
            "W = tf.Variable(tf.zeros([2, 1]))\npred = tf.matmul(x, W)",
            "def net(x, units, reuse=None):\n    with tf.compat.v1.variable_scope('net', reuse=reuse):\n"
            "        h = tf.compat.v1.layers.dense(inputs=x, units=units, activation=tf.nn.relu)\n"
            "        return tf.compat.v1.layers.dense(h, 1)\n\n"
            "pred = net(x, 4)\nagain = net(2.0 * x, 4, reuse=True)",
        ).replace("tf.square(y - pred)", "tf.square(y - pred) + tf.square(y - again)"),
        contains=(
            "    def __init__(self, units):\n        super().__init__()\n"
            "        self.dense_1 = keras.layers.Dense(units=units, activation=tf.nn.relu)\n"
            "        self.dense_2 = keras.layers.Dense(units=1)\n",
            "        h = self.dense_1(x)\n        return self.dense_2(h)\n",
            "net = Net(4)\n",
            "pred = net(x)\n",
            "again = net(2.0 * x)\n",
        ),
        once=("Net(4)",),
        absent=("compat.v1", "variable_scope", "reuse"),
    ),
    Case(
        "tf.Variable ignores variable_scope reuse (only get_variable shares): each call makes a new instance",
        MODULE_STEP.replace(
            "W = tf.Variable(tf.zeros([2, 1]))\npred = tf.matmul(x, W)",
            "def net(x, reuse=None):\n    with tf.compat.v1.variable_scope('net', reuse=reuse):\n"
            "        W = tf.Variable(tf.zeros([2, 1]))\n        return tf.matmul(x, W)\n\n"
            "pred = net(x)\nagain = net(x, reuse=True)",
        ).replace("tf.square(y - pred)", "tf.square(y - pred - again)"),
        contains=("net = Net()\n", "net_2 = Net()\n", "again = net_2(x)\n"),
        absent=("compat.v1",),
    ),
    Case(
        "a module-level model function with the Session in main(): the class at module level, the instance in main()",
        MAIN_STEP.replace(
            "import tensorflow as tf\n",
            "import tensorflow as tf\n\ndef model(x):\n    W = tf.Variable(tf.zeros([2, 1]))\n    return tf.matmul(x, W)\n",
        ).replace(
            "    W = tf.Variable(tf.zeros([2, 1]))\n    loss = tf.reduce_mean(tf.square(y - tf.matmul(x, W)))",
            "    loss = tf.reduce_mean(tf.square(y - model(x)))",
        ),
        contains=("\n\nclass Model(tf.Module):\n", "def main(_):\n    model = Model()\n", "tf.square(y - model(x))"),
        absent=("compat.v1", "def model("),
    ),
    Case(
        "a model function branching on a parameter: the branch stays in __call__",
        MODULE_STEP.replace(
            "W = tf.Variable(tf.zeros([2, 1]))\npred = tf.matmul(x, W)",
            "def model(x, deep):\n    W = tf.Variable(tf.zeros([2, 1]))\n    if deep:\n        x = tf.nn.relu(x)\n"
            "    return tf.matmul(x, W)\n\npred = model(x, True)",
        ),
        contains=("class Model(tf.Module)", "    def __call__(self, x, deep):", "        if deep:"),
        absent=("tf.compat.v1",),
    ),
    Case(
        "a model function making a variable in a branch: not a straight line, compat",
        MODULE_STEP.replace(
            "W = tf.Variable(tf.zeros([2, 1]))\npred = tf.matmul(x, W)",
            "def model(x, deep):\n    W = tf.Variable(tf.zeros([2, 1]))\n    if deep:\n"
            "        V = tf.Variable(tf.eye(2))\n        x = tf.matmul(x, V)\n"
            "    return tf.matmul(x, W)\n\npred = model(x, True)",
        ),
        fallback="`model` makes variables in a loop, branch or block",
    ),
    Case(
        "a model function branching on what it computed: not a straight line, compat",
        MODULE_STEP.replace(
            "W = tf.Variable(tf.zeros([2, 1]))\npred = tf.matmul(x, W)",
            "def model(x):\n    W = tf.Variable(tf.zeros([2, 1]))\n    h = tf.matmul(x, W)\n    if h is None:\n"
            "        h = x\n    return h\n\npred = model(x)",
        ),
        fallback="`model` makes variables in a loop, branch or block",
    ),
    Case(
        "a variable shaped by what the model function computed: not made once, compat",
        MODULE_STEP.replace(
            "W = tf.Variable(tf.zeros([2, 1]))\npred = tf.matmul(x, W)",
            "def model(x):\n    h = tf.nn.relu(x)\n    W = tf.Variable(tf.zeros([h.shape[1], 1]))\n"
            "    return tf.matmul(h, W)\n\npred = model(x)",
        ),
        fallback="`model` makes a variable from what it computed",
    ),
    Case(
        "a model function called inside sess.run: compat",
        MODULE_STEP.replace(
            "W = tf.Variable(tf.zeros([2, 1]))\npred = tf.matmul(x, W)",
            "def model(x):\n    W = tf.Variable(tf.zeros([2, 1]))\n    return tf.matmul(x, W)\n\npred = model(x)",
        ).replace("    print(value)", "    print(value, sess.run(model(x), feed_dict={x: xs}))"),
        fallback="sess.run fetches other than a name",
    ),
    Case(
        "RMSProp -> a Keras RMSprop subclass written once, started as TF1 (mean square 1), TF1's epsilon",
        MODULE_STEP.replace("GradientDescentOptimizer(0.1)", "RMSPropOptimizer(0.1, 0.9)"),
        contains=(
            "import keras\n\n\nclass RMSpropTF1(keras.optimizers.RMSprop):",
            'initializer="ones"',
            "optimizer = RMSpropTF1(learning_rate=0.1, rho=0.9, epsilon=1e-10)",
        ),
        once=("class RMSpropTF1",),
        absent=("compat.v1",),
    ),
    Case(
        "RMSProp with a sparse gradient (embedding_lookup): TF1 updates only the rows looked up, Keras all",
        MODULE_STEP.replace("GradientDescentOptimizer(0.1)", "RMSPropOptimizer(0.1)").replace(
            "pred = tf.matmul(x, W)", "pred = tf.matmul(x, tf.nn.embedding_lookup(W, [0, 1]))"
        ),
        fallback="tf.compat.v1.train.RMSPropOptimizer in a file that calls `tensorflow.nn.embedding_lookup`",
    ),
    Case(
        "Momentum with a sparse gradient (tf.gather): compat for the same reason",
        MODULE_STEP.replace("GradientDescentOptimizer(0.1)", "MomentumOptimizer(0.1, 0.9)").replace(
            "pred = tf.matmul(x, W)", "pred = tf.matmul(x, tf.gather(W, [0, 1]))"
        ),
        fallback="tf.compat.v1.train.MomentumOptimizer in a file that calls `tensorflow.gather`",
    ),
    Case(
        "RMSProp with use_locking: no Keras counterpart",
        MODULE_STEP.replace("GradientDescentOptimizer(0.1)", "RMSPropOptimizer(0.1, use_locking=True)"),
        fallback="RMSPropOptimizer(use_locking=...) has no Keras counterpart here",
    ),
    Case(
        "a tf.compat.v1 call with no TF2 rewrite left in the output",
        MODULE_STEP.replace("    print(value)", "    print(value, tf.compat.v1.get_default_graph())"),
        fallback="`tf.compat.v1.get_default_graph` has no native rewrite here",
    ),
    Case(
        "reset_default_graph() before the graph is built: dropped (TF2 has no default graph)",
        MODULE_STEP.replace(
            "import tensorflow as tf\n", "import tensorflow as tf\ntf.compat.v1.reset_default_graph()\n"
        ),
        contains=("import tensorflow as tf\nimport keras\nW = tf.Variable", "@tf.function"),
        absent=("compat.v1", "reset_default_graph"),
    ),
    Case(
        "reset_default_graph() sharing a line with the seed: the seed stays",
        MODULE_STEP.replace(
            "import tensorflow as tf\n",
            "import tensorflow as tf\ntf.compat.v1.reset_default_graph(); tf.compat.v1.set_random_seed(0)\n",
        ),
        contains=("tf.random.set_seed(0)\n",),
        absent=("compat.v1", "reset_default_graph", ";"),
    ),
    Case(
        "reset_default_graph() at the top of main() and at module level: dropped",
        MAIN_STEP.replace(
            "def main(_):\n",
            "tf.compat.v1.reset_default_graph()\n\ndef main(_):\n    tf.compat.v1.reset_default_graph()\n",
        ),
        contains=("def main(_):\n    W = tf.Variable",),
        absent=("compat.v1", "reset_default_graph"),
    ),
    Case(
        "reset_default_graph() after graph state was built: TF1 dropped that state, TF2 code keeps it",
        MODULE_STEP.replace("pred = tf.matmul", "tf.compat.v1.reset_default_graph()\npred = tf.matmul"),
        fallback="tf.compat.v1.reset_default_graph() after graph state was built",
    ),
    Case(
        "a one-shot iterator: its element is the steps' argument, each call pulls one with get_next()",
        ITERATOR_STEP,
        contains=(
            "it = iter(dataset)\n",
            "def train_step(batch):\n    with tf.GradientTape() as tape:\n        x, y = batch\n",
            "value = train_step(it.get_next()).numpy()",
            "[value.numpy() for value in compute_x_y(it.get_next())]",
        ),
        absent=("compat.v1", "make_one_shot_iterator", "tf.cast(batch"),
    ),
    Case(
        "an initializable iterator over placeholders: made where its initializer ran, from the fed values",
        ITERATOR_STEP.replace(
            "dataset = tf.data.Dataset.from_tensor_slices((xs, ys)).repeat().batch(4)\n"
            "it = tf.compat.v1.data.make_one_shot_iterator(dataset)",
            "px = tf.compat.v1.placeholder(tf.float32, [None, 2])\npy = tf.compat.v1.placeholder(tf.float32, [None, 1])\n"
            "dataset = tf.data.Dataset.from_tensor_slices((px, py)).batch(4)\n"
            "it = tf.compat.v1.data.make_initializable_iterator(dataset)",
        ).replace(
            "    print(sess.run([x, y]))\n",
            "    sess.run(it.initializer, feed_dict={px: xs, py: ys})\n",
        ),
        contains=(
            "it = iter(tf.data.Dataset.from_tensor_slices((tf.cast(xs, tf.float32), tf.cast(ys, tf.float32))).batch(4))\n",
            "value = train_step(it.get_next()).numpy()",
        ),
        absent=("compat.v1", "initializer", "px", "dataset ="),
    ),
    Case(
        "a reinitializable iterator (from_structure + make_initializer): a TF2 iterator per initializer run",
        ITERATOR_STEP.replace(
            "dataset = tf.data.Dataset.from_tensor_slices((xs, ys)).repeat().batch(4)\n"
            "it = tf.compat.v1.data.make_one_shot_iterator(dataset)",
            "px = tf.compat.v1.placeholder(tf.float32, [None, 2])\npy = tf.compat.v1.placeholder(tf.float32, [None, 1])\n"
            "train = tf.data.Dataset.from_tensor_slices((px, py)).repeat().batch(4)\n"
            "test = tf.data.Dataset.from_tensor_slices((px, py)).batch(4)\n"
            "it = tf.compat.v1.data.Iterator.from_structure(tf.compat.v1.data.get_output_types(train), "
            "tf.compat.v1.data.get_output_shapes(train))",
        )
        .replace(
            "x, y = it.get_next()\n",
            "x, y = it.get_next()\ntrain_init = it.make_initializer(train)\ntest_init = it.make_initializer(test)\n",
        )
        .replace("    print(sess.run([x, y]))\n", "    sess.run(train_init, feed_dict={px: xs, py: ys})\n")
        .replace(
            "    print(value)", "    sess.run(test_init, feed_dict={px: xs2, py: ys2})\n    print(sess.run(loss))"
        ),
        contains=(
            "it = iter(tf.data.Dataset.from_tensor_slices((tf.cast(xs, tf.float32), tf.cast(ys, tf.float32))).repeat()",
            "it = iter(tf.data.Dataset.from_tensor_slices((tf.cast(xs2, tf.float32), tf.cast(ys2, tf.float32))).batch(4))",
            "print(compute_loss(it.get_next()).numpy())",
        ),
        absent=("compat.v1", "make_initializer", "from_structure", "train_init", "px"),
    ),
    Case(
        "sess.run of an iterator's get_next() itself: the next element, as NumPy values",
        ITERATOR_STEP.replace("    print(sess.run([x, y]))\n", "    print(sess.run(it.get_next()))\n"),
        contains=("print(tf.nest.map_structure(lambda t: t.numpy(), it.get_next()))",),
        absent=("compat.v1",),
    ),
    Case(
        "a variable fetched with a tensor is returned too, and another variable gets its own step",
        MODULE_STEP.replace(
            "W = tf.Variable(tf.zeros([2, 1]))", "W = tf.Variable(tf.zeros([2, 1]))\nb = tf.Variable(0.0)"
        )
        .replace("tf.matmul(x, W)", "tf.matmul(x, W) + b")
        .replace(
            "    print(value)",
            "    print(sess.run([loss, W], feed_dict={x: xs, y: ys}), sess.run([loss, b], feed_dict={x: xs, y: ys}))",
        ),
        contains=("    return loss, W\n", "    return loss, b\n"),
        absent=("compat.v1",),
    ),
    Case(
        "tf.flags (left as written by tf_upgrade_v2, gone from TF 2) -> absl flags, like tf.app.flags",
        MAIN_STEP.replace(
            "def main(_):", "tf.flags.DEFINE_integer('steps', 3, 'steps')\nFLAGS = tf.flags.FLAGS\n\ndef main(_):"
        ),
        contains=(
            "from absl import flags\n",
            "flags.DEFINE_integer('steps', 3, 'steps')\nFLAGS = flags.FLAGS\n",
            "    app.run(main)\n",
        ),
        absent=("compat.v1", "tf.flags"),
    ),
    Case(
        "sess.run of a dict: a dict of the values under the same keys",
        MODULE_STEP.replace(
            "    print(value)", "    print(sess.run({'loss': loss, 'W': W}, feed_dict={x: xs, y: ys}))"
        ),
        contains=(
            "print(dict(zip(('loss', 'W',), [value.numpy() for value in compute_loss_W(xs, ys)])))",
            "    return loss, W\n",
        ),
        absent=("compat.v1",),
    ),
    Case(
        "tf.layers on an element of unknown dtype: TF1's layer took the input's dtype, Keras computes in float32",
        ITERATOR_STEP.replace("tf.matmul(x, W)", "tf.compat.v1.layers.dense(x, 1)"),
        fallback="tf.layers on a dataset element whose dtype (TF1's layer dtype) the script does not state",
    ),
    Case(
        "tf.layers on float64 NumPy draws: Keras layers in float64, the dtype TF1's layers took from the element",
        ITERATOR_STEP.replace(
            "import tensorflow as tf\n",
            "import tensorflow as tf\nxs, ys = np.random.sample((8, 2)), np.random.rand(8, 1)\n",
        ).replace("tf.matmul(x, W)", "tf.compat.v1.layers.dense(x, 1)"),
        contains=('dense_1 = keras.layers.Dense(units=1, dtype="float64")',),
        absent=("compat.v1",),
    ),
    Case(
        "an iterator used other than through get_next() and its initializer: compat",
        ITERATOR_STEP.replace("    print(value)", "    print(value, it)"),
        fallback="`it` (an iterator or its dataset) is used elsewhere",
    ),
    Case(
        "two placeholders made on one line (x, y = placeholder(...), placeholder(...)): two arguments",
        MODULE_STEP.replace(
            "x = tf.compat.v1.placeholder(tf.float32, [None, 2])\ny = tf.compat.v1.placeholder(tf.float32, [None, 1])",
            "x, y = tf.compat.v1.placeholder(tf.float32, [None, 2]), tf.compat.v1.placeholder(tf.float32, [None, 1])",
        ),
        contains=("def train_step(x, y):\n",),
        absent=("compat.v1",),
    ),
    Case(
        "tf.compat.v1.losses.mean_squared_error -> the mean of the squared difference",
        MODULE_STEP.replace(
            "loss = tf.reduce_mean(tf.square(y - pred))",
            "loss = tf.compat.v1.losses.mean_squared_error(y, pred, scope='loss')",
        ),
        contains=("loss = tf.reduce_mean(tf.square(y - pred))",),
        absent=("compat.v1",),
    ),
]

SUMMED = """
import tensorflow as tf
x = tf.compat.v1.placeholder(tf.float32, [None, 2])
W = tf.Variable(tf.zeros([2, 1]))
START
total += tf.nn.l2_loss(W)
loss = tf.reduce_mean(tf.matmul(x, W)) + total
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(3):
        _, value = sess.run([train_op, loss], feed_dict={x: xs})
        print(value)
"""

CASES += [
    Case(
        "a module-level `+=` that builds the graph starts from a number: both move into the step, in order",
        SUMMED.replace("START", "total = 0.0"),
        contains=("        total = 0.0\n        total += tf.nn.l2_loss(W)\n",),
        absent=("compat.v1",),
    ),
    Case(
        "from a constant tensor, with Python lines between the start and the sum",
        SUMMED.replace("START", "total = tf.constant(0.0)\nsteps = 3"),
        contains=("        total = tf.constant(0.0)\n        total += tf.nn.l2_loss(W)\n", "\nsteps = 3\n"),
    ),
    Case(
        "a module-level `+=` whose start is read between (printed, a Python value there): compat",
        SUMMED.replace("START", "total = 0.0\nprint(total)"),
        fallback="the graph adds to `total`, which does not start from a number or a constant tensor",
    ),
    Case(
        "a Python counter's `+=` beside the graph stays Python",
        SUMMED.replace("START", "total = 0.0\ncount = 0\ncount += 1"),
        contains=("\ncount = 0\ncount += 1\n",),
    ),
]

IMAGES = MODULE_STEP.replace(
    "loss = tf.reduce_mean(tf.square(y - pred))",
    "loss = tf.reduce_mean(tf.square(y - pred))\ntf.compat.v1.summary.image('input', tf.reshape(x, [-1, 1, 2, 1]), 2)\n"
    "tf.compat.v1.summary.image('pred', tf.reshape(pred, [-1, 1, 1, 1]))",
).replace(
    "    _, value = sess.run([train_op, loss], feed_dict={x: xs, y: ys})",
    "    merged = tf.compat.v1.summary.merge_all()\n"
    "    writer = tf.compat.v1.summary.FileWriter('logs')\n"
    "    summary, _ = sess.run([merged, train_op], feed_dict={x: xs, y: ys})\n"
    "    writer.add_summary(summary, global_step=0)",
)

CASES += [
    Case(
        "image summaries keep TF1's max_outputs (3 unless given); add_summary's step by keyword (round 9)",
        IMAGES,
        contains=(
            "'image': {'input': tf.reshape(x, [-1, 1, 2, 1])[:2], 'pred': tf.reshape(pred, [-1, 1, 1, 1])[:3]}",
            "tf.summary.image(tag, value, max_outputs=3)",
            "write_summaries(writer, summary, 0)",
        ),
        absent=("compat.v1",),
    ),
    Case(
        "an image summary whose max_outputs is computed stays on compat",
        IMAGES.replace("[-1, 1, 2, 1]), 2)", "[-1, 1, 2, 1]), count)"),
        fallback="tf.summary.image with a max_outputs that is not a number",
    ),
    Case(
        "a variable_scope block around get_variable in a file that reuses nothing is opened (round 9)",
        MODULE_STEP.replace(
            "W = tf.Variable(tf.zeros([2, 1]))",
            "with tf.compat.v1.variable_scope('layer1'):\n"
            "    W = tf.compat.v1.get_variable('W', shape=[2, 1], initializer=tf.compat.v1.zeros_initializer())",
        ),
        contains=("W = tf.Variable(",),
        absent=("compat.v1", "variable_scope"),
    ),
    Case(
        "the same block in a file that shares variables by scope stays on compat",
        MODULE_STEP.replace(
            "W = tf.Variable(tf.zeros([2, 1]))",
            "with tf.compat.v1.variable_scope('layer1', reuse=tf.compat.v1.AUTO_REUSE):\n"
            "    W = tf.compat.v1.get_variable('W', shape=[2, 1], initializer=tf.compat.v1.zeros_initializer())",
        ),
        fallback="`tf.compat.v1.AUTO_REUSE` has no native rewrite here",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_native_case(case: Case) -> None:
    result = rewrite_native(textwrap.dedent(case.source).lstrip("\n"))
    if case.fallback:
        assert not result.converted, result.source
        assert result.reason.startswith(case.fallback), result.reason
        return
    assert result.converted, result.reason
    ast.parse(result.source)
    for text in case.contains:
        assert text in result.source, f"{text!r} not in:\n{result.source}"
    for text in case.once:
        assert result.source.count(text) == 1, result.source
    for text in case.absent:
        assert text not in result.source, f"{text!r} in:\n{result.source}"


def test_random_draws_are_noted_where_numbers_can_differ_from_tf1() -> None:
    """TF1 and TF2 draw different random streams under one seed: the report says so, at the first draw."""
    source = MODULE_STEP.replace("tf.zeros([2, 1])", "tf.random.normal([2, 1], seed=1)")
    result = rewrite_native(textwrap.dedent(source).lstrip("\n"))
    assert result.converted, result.reason
    assert [note.line for note in result.notes if "random numbers" in note.message] == [4]
    assert not rewrite_native(textwrap.dedent(MODULE_STEP).lstrip("\n")).notes
