"""REMOVED_APIS, row by row: a TF1 snippet using the removed name is migrated and then RUN on TF 2.21.

Every snippet goes through the whole command (tf_upgrade_v2, the compat pass, the shim module),
then runs in its own Python process (graph mode is process-wide) and prints what the test checks
against numbers worked out here in numpy or against TF1's names.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from tfpilot.lint.numpy_removed import NUMPY_REMOVED  # noqa: E402
from tfpilot.migrate.command import migrate  # noqa: E402
from tfpilot.migrate.compat import CONTRIB_INITIALIZERS, REMOVED_APIS, SHIM_MODULE  # noqa: E402

pytestmark = pytest.mark.slow

GRAPH = "import numpy as np\nimport tensorflow as tf\n"
SESSION = "sess = tf.Session()\nsess.run(tf.global_variables_initializer())\n"
MNIST_READ = (
    "m = {call}('data', one_hot=True)\nprint(m.train.images.shape, m.train.labels.shape, m.test.num_examples)\n"
)
MNIST_OUT = "(55, 784) (55, 10) 20"

X = np.arange(12, dtype=np.float32).reshape(2, 6) / 10.0
LOGITS = np.array([[[2.0, 0.5, -1.0], [0.1, 0.2, 0.3]], [[1.0, 1.0, 1.0], [-2.0, 3.0, 0.0]]], np.float32)
TARGETS = np.array([[0, 2], [1, 1]])
WEIGHTS = np.array([[1.0, 1.0], [1.0, 0.0]], np.float32)


def crossent_reference() -> np.ndarray:
    shifted = LOGITS - LOGITS.max(-1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -np.take_along_axis(log_softmax, TARGETS[..., None], -1)[..., 0]


def legacy_losses_reference() -> tuple[list[float], float]:
    """legacy_seq2seq's per-example loss (weighted, averaged over timesteps) and its batch mean."""
    by_example = (crossent_reference() * WEIGHTS).sum(1) / (WEIGHTS.sum(1) + 1e-12)
    return [round(float(v), 4) for v in by_example], round(float(by_example.sum() / len(by_example)), 4)


LEGACY_SEQ2SEQ = (
    GRAPH + "from tensorflow.contrib import legacy_seq2seq\n"
    "class Cell:\n    def __call__(self, x, state):\n"
    "        w = tf.get_variable('w', initializer=2.0)\n        out = x * w + state\n        return out, out\n"
    "outs, last = legacy_seq2seq.rnn_decoder([tf.constant(v) for v in (1.0, 2.0, 3.0)], tf.constant(0.0), Cell(), scope='seq')\n"
    f"L = np.array({LOGITS.tolist()!r}, np.float32)\nT = np.array({TARGETS.tolist()!r})\nW = np.array({WEIGHTS.tolist()!r}, np.float32)\n"
    "logits = [tf.constant(L[:, t]) for t in range(2)]\ntargets = [tf.constant(T[:, t]) for t in range(2)]\n"
    "weights = [tf.constant(W[:, t]) for t in range(2)]\n"
    "by_example = legacy_seq2seq.sequence_loss_by_example(logits, targets, weights)\n"
    "loss = legacy_seq2seq.sequence_loss(logits, targets, weights)\n"
    + SESSION
    + "print([v.name for v in tf.global_variables()], [float(v) for v in sess.run(outs)])\n"
    "print([round(float(v), 4) for v in sess.run(by_example)], round(float(sess.run(loss)), 4))\n"
)

VOCABULARY = (
    "import numpy as np\nfrom tensorflow.contrib import learn\n"
    "vp = learn.preprocessing.VocabularyProcessor(4)\n"
    "x = np.array(list(vp.fit_transform(['The cat sat', \"the dog's ball is red\", 'cat'])))\n"
    "print(x.tolist(), len(vp.vocabulary_))\nvp.save('vocab')\n"
    "print(list(learn.preprocessing.VocabularyProcessor.restore('vocab').transform(['red cat bird']))[0].tolist())\n"
    "trimmed = learn.preprocessing.VocabularyProcessor(3, min_frequency=1)\n"
    "print(list(trimmed.fit_transform(['a b a', 'b c', 'a b c']))[2].tolist())\n"
)


PRE_1_0_MATH = (
    GRAPH + SESSION + "print(sess.run(tf.mul(2.0, 3.0)), sess.run(tf.sub(2.0, 3.0)), sess.run(tf.neg(2.0)), "
    "sess.run(tf.pack([1, 2])).tolist(), sess.run(tf.unpack(tf.constant([3, 4]))[1]), "
    "sess.run(tf.select(tf.constant([True, False]), [1, 2], [3, 4])).tolist())\n"
)
PRE_1_0_MATH_OUT = "6.0 -1.0 -2.0 [1, 2] 4 [1, 4]"
# contrib.framework's global step and checkpoint readers, in one program: a step counted, saved, read back
CONTRIB_FRAMEWORK = (
    GRAPH + "step = tf.contrib.framework.get_or_create_global_step()\n"
    "same = tf.contrib.framework.get_global_step()\n"
    "w = tf.Variable(2.0, name='w')\nwarm = tf.Variable(0.0, name='warm')\n"
    "train = tf.train.GradientDescentOptimizer(0.25).minimize(tf.square(w), global_step=step)\n"
    + SESSION
    + "for _ in range(3):\n    sess.run(train)\n"
    "path = tf.train.Saver().save(sess, './fw_ckpt')\n"
    "print(sess.run(same), sorted(n for n, _ in tf.contrib.framework.list_variables(path)), "
    "round(float(tf.contrib.framework.load_checkpoint(path).get_tensor('w')), 4))\n"
    "with tf.Graph().as_default():\n"
    "    made = tf.contrib.framework.create_global_step()\n"
    "    w2 = tf.get_variable('w', shape=[], initializer=tf.zeros_initializer())\n"
    "    tf.contrib.framework.init_from_checkpoint(path, {'w': 'w'})\n"
    "    with tf.Session() as s2:\n"
    "        s2.run(tf.global_variables_initializer())\n"
    "        print(made.op.name, round(float(s2.run(w2)), 4))\n"
)
CONTRIB_FRAMEWORK_OUT = "3 ['global_step', 'w', 'warm'] 0.25\nglobal_step 0.25"
PRE_1_0_SUMMARIES = (
    GRAPH + "import os\n"
    "scalar = tf.scalar_summary('a', tf.constant(1.0))\n"
    "parts = [scalar, tf.histogram_summary('h', tf.constant([1.0, 2.0])), "
    "tf.image_summary('i', tf.zeros([1, 2, 2, 1])), tf.audio_summary('s', tf.zeros([1, 8]), 8000)]\n"
    "merged = tf.merge_summary(parts)\nevery = tf.merge_all_summaries()\n"
    "w = tf.train.SummaryWriter('logs')\n" + SESSION + "w.add_summary(sess.run(merged), 0)\nw.close()\n"
    "print(*(isinstance(v, bytes) for v in sess.run([scalar, parts[1], parts[2], parts[3]])[:3]), "
    "isinstance(sess.run(every), bytes), len(os.listdir('logs')) > 0)\n"
)


# A linear-chain CRF small enough to enumerate: 2 sequences (lengths 3 and 2), 3 tags
CRF_SCORES = np.array(
    [[[0.5, -1.0, 2.0], [1.5, 0.2, -0.3], [0.0, 1.0, 0.4]], [[-0.2, 0.3, 0.9], [1.1, -0.5, 0.0], [9.0, 9.0, 9.0]]],
    np.float32,
)
CRF_TAGS = np.array([[2, 0, 1], [1, 0, 0]])
CRF_LENGTHS = np.array([3, 2])
CRF_TRANSITIONS = np.array([[0.1, -0.4, 0.6], [0.3, 0.0, -0.2], [-0.7, 0.5, 0.2]], np.float32)


def crf_reference() -> tuple[list[float], list[list[int]]]:
    """Log-likelihood of each tag sequence by enumerating every path (log Z by brute force), and
    the best path of each sequence: the definition contrib.crf computes by dynamic programming."""
    import itertools

    def score(scores: np.ndarray, path: tuple[int, ...]) -> float:
        unary = sum(float(scores[t, tag]) for t, tag in enumerate(path))
        return unary + sum(float(CRF_TRANSITIONS[a, b]) for a, b in zip(path, path[1:], strict=False))

    likelihoods, best = [], []
    for scores, tags, length in zip(CRF_SCORES, CRF_TAGS, CRF_LENGTHS, strict=True):
        paths = list(itertools.product(range(3), repeat=int(length)))
        totals = [score(scores, path) for path in paths]
        log_z = float(np.log(np.sum(np.exp(totals))))
        likelihoods.append(round(score(scores, tuple(tags[:length])) - log_z, 4))
        best.append(list(paths[int(np.argmax(totals))]))
    return likelihoods, best


def sequence_loss_reference() -> float:
    shifted = LOGITS - LOGITS.max(-1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    crossent = -np.take_along_axis(log_softmax, TARGETS[..., None], -1)[..., 0]
    return float((crossent * WEIGHTS).sum() / WEIGHTS.sum())


# removed name -> (TF1 snippet, command-line arguments, expected stdout)
SNIPPETS: dict[str, tuple[str, tuple[str, ...], str]] = {
    # TF 1.3's tf.contrib.data (TF 1.4 moved it to tf.data)
    "tensorflow.contrib.data.Dataset": (
        "import tensorflow as tf\nfrom tensorflow.contrib.data import Dataset\n"
        "ds = Dataset.range(4).map(lambda v: v * 3, num_threads=2, output_buffer_size=4).batch(2)\n"
        "batch = ds.make_one_shot_iterator().get_next()\n"
        "with tf.Session() as sess:\n    print(sess.run(batch).tolist(), sess.run(batch).tolist())\n",
        (),
        "[0, 3] [6, 9]",
    ),
    "tensorflow.contrib.data.Iterator": (
        "import tensorflow as tf\nfrom tensorflow.contrib.data import Iterator\n"
        "train, val = tf.data.Dataset.range(3), tf.data.Dataset.range(10, 12)\n"
        "it = Iterator.from_structure(train.output_types, train.output_shapes)\n"
        "nxt = it.get_next()\n"
        "with tf.Session() as sess:\n    sess.run(it.make_initializer(val))\n    print(sess.run(nxt), sess.run(nxt))\n",
        (),
        "10 11",
    ),
    "tensorflow.contrib.data.TextLineDataset": (
        "import tensorflow as tf\nopen('lines.txt', 'w').write('a\\nbb\\n')\n"
        "line = tf.contrib.data.TextLineDataset('lines.txt').make_one_shot_iterator().get_next()\n"
        "with tf.Session() as sess:\n    print(sess.run(line), sess.run(line))\n",
        (),
        "b'a' b'bb'",
    ),
    "tensorflow.contrib.data.TFRecordDataset": (
        "import tensorflow as tf\nwith tf.python_io.TFRecordWriter('r.tfrecord') as w:\n    w.write(b'xy')\n"
        "record = tf.contrib.data.TFRecordDataset(['r.tfrecord']).make_one_shot_iterator().get_next()\n"
        "with tf.Session() as sess:\n    print(sess.run(record))\n",
        (),
        "b'xy'",
    ),
    "tensorflow.contrib.data.FixedLengthRecordDataset": (
        "import tensorflow as tf\nopen('fixed.bin', 'wb').write(b'abcdef')\n"
        "ds = tf.contrib.data.FixedLengthRecordDataset(['fixed.bin'], record_bytes=3)\n"
        "record = ds.make_one_shot_iterator().get_next()\n"
        "with tf.Session() as sess:\n    print(sess.run(record), sess.run(record))\n",
        (),
        "b'abc' b'def'",
    ),
    "tensorflow.contrib.tensorboard.plugins.projector": (
        "import os\nimport tensorflow as tf\nfrom tensorflow.contrib.tensorboard.plugins import projector\n"
        "config = projector.ProjectorConfig()\nconfig.embeddings.add().tensor_name = 'emb'\n"
        "writer = tf.summary.FileWriter('logs')\nprojector.visualize_embeddings(writer, config)\n"
        "print(open(os.path.join('logs', 'projector_config.pbtxt')).read().split())\n",
        (),
        "['embeddings', '{', 'tensor_name:', '\"emb\"', '}']",
    ),
    "tensorflow.flags": (
        "import tensorflow as tf\ntf.flags.DEFINE_integer('steps', 3, 'steps')\nFLAGS = tf.flags.FLAGS\n"
        "def main(_):\n    print('steps', FLAGS.steps)\nif __name__ == '__main__':\n    tf.app.run()\n",
        ("--steps", "5"),
        "steps 5",
    ),
    "tensorflow.app.flags": (
        "import tensorflow as tf\nflags = tf.app.flags\nflags.DEFINE_string('name', 'a', 'name')\n"
        "def main(_):\n    print('name', flags.FLAGS.name)\nif __name__ == '__main__':\n    tf.app.run(main)\n",
        ("--name", "b"),
        "name b",
    ),
    "tensorflow.logging": (
        "import tensorflow as tf\ntf.logging.set_verbosity(tf.logging.INFO)\ntf.logging.info('hello %d', 3)\n"
        "print(tf.logging.get_verbosity() == tf.logging.INFO)\n",
        (),
        "True",
    ),
    "numpy.lib.pad": (
        "import numpy as np\nprint(np.lib.pad(np.ones((1, 1)), [[1, 0], [0, 1]], 'constant').tolist())\n",
        (),
        "[[0.0, 0.0], [1.0, 0.0]]",
    ),
    "tensorflow.app": (
        "import tensorflow as tf\ndef main(argv):\n    print('args', argv[1:])\ntf.app.run(main=main)\n",
        ("x",),
        "args ['x']",
    ),
    **{
        f"numpy.{alias}": (
            f"import numpy as np\nprint(np.{alias} is {builtin}, np.array([1], dtype=np.{alias}).dtype.kind)\n",
            (),
            f"True {np.array([1], dtype=builtin).dtype.kind}",
        )
        for alias, builtin in [
            ("int", "int"),
            ("float", "float"),
            ("bool", "bool"),
            ("object", "object"),
            ("str", "str"),
            ("long", "int"),
            ("unicode", "str"),
            ("complex", "complex"),
        ]
    },
    # NumPy 2.0 / 2.4's removed aliases: the migrated name is the same object the replacement names
    **{
        f"numpy.{row.name}": (
            f"import numpy as np\nprint(np.{row.name} is {row.replacement.replace('numpy.', 'np.')})\n",
            (),
            "True",
        )
        for row in NUMPY_REMOVED.values()
        if row.rename and row.name not in {"int", "float", "object", "str", "unicode", "complex"}
    },
    ".output_types": (
        "import tensorflow as tf\nds = tf.data.Dataset.from_tensor_slices(([1.0, 2.0], [3, 4]))\n"
        "print(ds.output_types)\nit = tf.data.make_one_shot_iterator(ds.batch(2))\nprint(it.output_types)\n",
        (),
        "(tf.float32, tf.int32)\n(tf.float32, tf.int32)",
    ),
    ".output_shapes": (
        "import tensorflow as tf\nds = tf.data.Dataset.from_tensor_slices([[1.0, 2.0]]).batch(4)\n"
        "print(ds.output_shapes)\n",
        (),
        "(None, 2)",
    ),
    ".output_classes": (
        "import tensorflow as tf\nds = tf.data.Dataset.range(3)\nprint(ds.output_classes.__name__)\n",
        (),
        "Tensor",
    ),
    "tensorflow.contrib.seq2seq.sequence_loss": (
        GRAPH + f"logits = tf.constant(np.array({LOGITS.tolist()}, np.float32))\n"
        f"loss = tf.contrib.seq2seq.sequence_loss(logits, tf.constant({TARGETS.tolist()}), "
        f"tf.constant({WEIGHTS.tolist()}))\n" + SESSION + "print(round(float(sess.run(loss)), 5))\n",
        (),
        str(round(sequence_loss_reference(), 5)),
    ),
    "tensorflow.contrib.learn.datasets.load_dataset": (
        "import numpy as np\nimport tensorflow as tf\nm = tf.contrib.learn.datasets.load_dataset('mnist')\n"
        "print(m.train.images.shape, np.asarray(m.train.labels, dtype=np.int32).shape, m.test.num_examples)\n",
        (),
        "(55, 784) (55,) 20",
    ),
    "tensorflow.contrib.learn.datasets.mnist": (
        "import tensorflow as tf\n" + MNIST_READ.format(call="tf.contrib.learn.datasets.mnist.read_data_sets"),
        (),
        MNIST_OUT,
    ),
    "tensorflow.contrib.learn.python.learn.datasets.mnist": (
        "from tensorflow.contrib.learn.python.learn.datasets.mnist import read_data_sets\n"
        + MNIST_READ.format(call="read_data_sets"),
        (),
        MNIST_OUT,
    ),
    "tensorflow.examples.tutorials.mnist.input_data": (
        "from tensorflow.examples.tutorials.mnist import input_data\n"
        + MNIST_READ.format(call="input_data.read_data_sets"),
        (),
        MNIST_OUT,
    ),
    "tensorflow.contrib.layers.fully_connected": (
        GRAPH + f"x = tf.constant(np.array({X.tolist()}, np.float32))\n"
        "y = tf.contrib.layers.fully_connected(x, 3)\nw, b = tf.trainable_variables()\n"
        + SESSION
        + "y, w, b = sess.run([y, w, b])\n"
        "print(sorted(v.name for v in tf.trainable_variables()), y.shape, np.allclose(y, np.maximum(x.eval(session=sess) @ w + b, 0)))\n",
        (),
        "['fully_connected/biases:0', 'fully_connected/weights:0'] (2, 3) True",
    ),
    "tensorflow.contrib.layers.conv2d": (
        GRAPH + "x = tf.ones([1, 5, 5, 2])\ny = tf.contrib.layers.conv2d(x, 4, 3, activation_fn=None)\n"
        "w, b = tf.trainable_variables()\nref = tf.nn.conv2d(x, w, [1, 1, 1, 1], 'SAME') + b\n"
        + SESSION
        + "y, ref = sess.run([y, ref])\n"
        "print(sorted(v.name for v in tf.trainable_variables()), y.shape, np.allclose(y, ref))\n",
        (),
        "['Conv/biases:0', 'Conv/weights:0'] (1, 5, 5, 4) True",
    ),
    "tensorflow.contrib.layers.max_pool2d": (
        GRAPH + "x = tf.reshape(tf.range(16.0), [1, 4, 4, 1])\n"
        "print(tf.Session().run(tf.contrib.layers.max_pool2d(x, 2)).ravel().tolist())\n",
        (),
        "[5.0, 7.0, 13.0, 15.0]",
    ),
    "tensorflow.contrib.layers.avg_pool2d": (
        GRAPH + "x = tf.reshape(tf.range(16.0), [1, 4, 4, 1])\n"
        "print(tf.Session().run(tf.contrib.layers.avg_pool2d(x, 2)).ravel().tolist())\n",
        (),
        "[2.5, 4.5, 10.5, 12.5]",
    ),
    "tensorflow.contrib.layers.l1_regularizer": (
        GRAPH + "r = tf.contrib.layers.l1_regularizer(0.5)(tf.constant([1.0, -3.0]))\nprint(tf.Session().run(r))\n",
        (),
        "2.0",
    ),
    "tensorflow.contrib.layers.l2_regularizer": (
        GRAPH + "r = tf.contrib.layers.l2_regularizer(0.5)(tf.constant([1.0, -3.0]))\nprint(tf.Session().run(r))\n",
        (),
        "2.5",
    ),
    "tensorflow.contrib.layers.l1_l2_regularizer": (
        GRAPH + "r = tf.contrib.layers.l1_l2_regularizer(0.5, 0.5)(tf.constant([1.0, -3.0]))\n"
        "print(tf.Session().run(r))\n",
        (),
        "4.5",
    ),
    "tensorflow.contrib.layers.sum_regularizer": (
        GRAPH + "r = tf.contrib.layers.sum_regularizer([tf.contrib.layers.l1_regularizer(0.5), "
        "tf.contrib.layers.l2_regularizer(0.5)])(tf.constant([1.0, -3.0]))\nprint(tf.Session().run(r))\n",
        (),
        "4.5",
    ),
    "tensorflow.contrib.layers.apply_regularization": (
        GRAPH + "w = tf.Variable([1.0, -3.0])\n"
        "r = tf.contrib.layers.apply_regularization(tf.contrib.layers.l1_regularizer(0.5), [w])\n"
        "s = tf.Session()\ns.run(tf.global_variables_initializer())\n"
        "print(s.run(r), len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)))\n",
        (),
        "2.0 1",
    ),
    "tensorflow.contrib.layers.batch_norm": (
        GRAPH + "x = tf.constant(np.array([[1.0, 2.0], [3.0, 6.0]], np.float32))\n"
        "y = tf.contrib.layers.batch_norm(x, center=True, scale=True, is_training=True, updates_collections=None)\n"
        "names = sorted(v.name for v in tf.global_variables())\n" + SESSION + "out = sess.run(y)\n"
        "mean = sess.run([v for v in tf.global_variables() if 'moving_mean' in v.name][0])\n"
        "print(names)\nprint(np.round(out.astype(float), 3).tolist(), np.round(mean.astype(float), 4).tolist())\n",
        (),
        # batch statistics: mean (2, 4), variance (1, 4); the moving mean moved 0.1% of the way (decay 0.999)
        "['BatchNorm/beta:0', 'BatchNorm/gamma:0', 'BatchNorm/moving_mean:0', 'BatchNorm/moving_variance:0']\n"
        f"{np.round(np.array([[-1, -1], [1, 1]]) * (1 / np.sqrt(1 + 0.001)), 3).tolist()} [0.002, 0.004]",
    ),
    "tensorflow.contrib.layers.layer_norm": (
        # through contrib's internal module, as MAML imports it
        GRAPH.replace(
            "import tensorflow as tf\n",
            "import tensorflow as tf\nfrom tensorflow.contrib.layers.python import layers as tf_layers\n",
        )
        + "x = tf.constant(np.array([[1.0, 3.0], [2.0, 6.0]], np.float32))\n"
        "y = tf_layers.layer_norm(x, activation_fn=tf.nn.relu, scope='ln')\n"
        "names = sorted(v.name for v in tf.global_variables())\n" + SESSION + "out = sess.run(y)\n"
        "print(names, np.round(out.astype(float), 3).tolist())\n",
        (),
        # each row normalised over its own two values: (-1, 1), then relu
        "['ln/beta:0', 'ln/gamma:0'] [[0.0, 1.0], [0.0, 1.0]]",
    ),
    "tensorflow.contrib.layers.dropout": (
        GRAPH + "x = tf.ones([1000])\ntrain = tf.contrib.layers.dropout(x, keep_prob=0.8)\n"
        "test = tf.contrib.layers.dropout(x, keep_prob=0.8, is_training=False)\n"
        "sess = tf.Session()\nkept = sess.run(train)\n"
        "print(sorted(set(np.round(kept, 4).tolist())), 700 < np.count_nonzero(kept) < 900, sess.run(test).sum())\n",
        (),
        "[0.0, 1.25] True 1000.0",
    ),
    "tensorflow.contrib.layers.flatten": (
        GRAPH + "print(tf.contrib.layers.flatten(tf.zeros([2, 3, 4])).shape.as_list())\n",
        (),
        "[2, 12]",
    ),
    "tensorflow.layers": (
        GRAPH + "h = tf.layers.dense(tf.zeros([2, 6]), 3, name='fc')\n"
        "print(h.shape.as_list(), sorted(v.name for v in tf.trainable_variables()))\n",
        (),
        "[2, 3] ['fc/bias:0', 'fc/kernel:0']",
    ),
    "tensorflow.compat.v1.layers": (
        GRAPH + "x = tf.compat.v1.placeholder(tf.float32, [None, 8, 8, 1])\n"
        "h = tf.compat.v1.layers.max_pooling2d(tf.compat.v1.layers.conv2d(x, 2, 3), 2, 2)\n"
        "print(h.shape.as_list(), sorted(v.name for v in tf.compat.v1.trainable_variables()))\n",
        (),
        "[None, 3, 3, 2] ['conv2d/bias:0', 'conv2d/kernel:0']",
    ),
    "tensorflow.contrib.rnn": (
        GRAPH + "from tensorflow.contrib import rnn\nx = tf.zeros([2, 5, 3])\n"
        "out, state = tf.nn.dynamic_rnn(rnn.BasicLSTMCell(4), x, dtype=tf.float32)\n"
        + SESSION
        + "print(sess.run(out).shape, sorted(v.name for v in tf.trainable_variables()))\n",
        (),
        "(2, 5, 4) ['rnn/basic_lstm_cell/bias:0', 'rnn/basic_lstm_cell/kernel:0']",
    ),
    # TF 0.x renames: one program for the math rows and one for the summary rows (each row's run
    # is the same program, run once: see `ran`)
    **{
        f"tensorflow.{old}": (PRE_1_0_MATH, (), PRE_1_0_MATH_OUT)
        for old in ("mul", "sub", "neg", "pack", "unpack", "select")
    },
    **{
        f"tensorflow.contrib.framework.{name}": (CONTRIB_FRAMEWORK, (), CONTRIB_FRAMEWORK_OUT)
        for name in (
            "get_or_create_global_step",
            "get_global_step",
            "create_global_step",
            "list_variables",
            "load_checkpoint",
            "init_from_checkpoint",
        )
    },
    **{
        f"tensorflow.{old}": (PRE_1_0_SUMMARIES, (), "True True True True True")
        for old in (
            "scalar_summary",
            "histogram_summary",
            "image_summary",
            "audio_summary",
            "merge_summary",
            "merge_all_summaries",
            "train.SummaryWriter",
        )
    },
    "tensorflow.contrib.legacy_seq2seq": (
        LEGACY_SEQ2SEQ,
        (),
        f"['seq/w:0'] [2.0, 6.0, 12.0]\n{legacy_losses_reference()[0]} {legacy_losses_reference()[1]}",
    ),
    "tensorflow.contrib.learn.preprocessing": (
        VOCABULARY,
        (),
        # ids by first appearance, 0 for <UNK> and padding, cut at 4; "dog's" is one token; with
        # min_frequency=1 the words seen once (c: twice, kept) go and ids follow the counts
        "[[1, 2, 3, 0], [4, 5, 6, 7], [2, 0, 0, 0]] 9\n[8, 2, 0, 0]\n[1, 2, 3]",
    ),
    "tensorflow.contrib.slim": (
        GRAPH + "import tensorflow.contrib.slim as slim\nx = tf.ones([2, 6, 6, 1])\n"
        "h = slim.flatten(slim.max_pool2d(slim.conv2d(x, 4, [3, 3], scope='conv1'), [2, 2]))\n"
        "out = slim.dropout(h, 0.5, is_training=False)\n"
        + SESSION
        + "print(sess.run(out).shape, sorted(v.name for v in tf.trainable_variables()))\n"
        # slim's variable table (infoGAN prints it): 3x3x1x4 weights + 4 biases, float32
        + "print(slim.model_analyzer.analyze_vars(tf.trainable_variables(), print_info=True))\n",
        (),
        "(2, 36) ['conv1/biases:0', 'conv1/weights:0']\n---------\nVariables: name (type shape) [size]\n---------\n"
        "conv1/weights:0 (float32 3x3x1x4) [36, bytes: 144]\nconv1/biases:0 (float32 4) [4, bytes: 16]\n"
        "Total size of variables: 40\nTotal bytes of variables: 160\n(40, 160)",
    ),
    # contrib took (predictions, labels), tf.metrics takes (labels, predictions): precision 2/3 here,
    # 1.0 with the two swapped
    "tensorflow.contrib.metrics": (
        GRAPH + "labels = tf.constant([0, 1, 1, 0])\nscores = tf.constant([0.1, 0.9, 0.8, 0.3])\n"
        "predicted = tf.cast(scores > 0.25, tf.int32)\n"
        "auc = tf.contrib.metrics.streaming_auc(scores, labels)\n"
        "values, updates = tf.contrib.metrics.aggregate_metric_map({'auc': auc, "
        "'acc': tf.contrib.metrics.streaming_accuracy(predicted, labels), "
        "'precision': tf.contrib.metrics.streaming_precision(predicted, labels)})\n"
        "sess = tf.Session()\nsess.run(tf.local_variables_initializer())\nsess.run(list(updates.values()))\n"
        "print(*[round(float(sess.run(values[k])), 3) for k in ('auc', 'acc', 'precision')])\n",
        (),
        "1.0 0.75 0.667",
    ),
    # ids by line number, unknown words in the OOV bucket TF1's fingerprint64 hash picks, back to words
    "tensorflow.contrib.crf": (
        GRAPH + "from tensorflow.contrib import crf\n"
        f"scores = tf.constant(np.array({CRF_SCORES.tolist()}, np.float32))\n"
        f"transitions = tf.constant(np.array({CRF_TRANSITIONS.tolist()}, np.float32))\n"
        f"ll, _ = crf.crf_log_likelihood(scores, tf.constant({CRF_TAGS.tolist()}), tf.constant({CRF_LENGTHS.tolist()}), "
        "transitions)\nsess = tf.Session()\nvalues, table = sess.run([ll, transitions])\n"
        "paths = [crf.viterbi_decode(s[:n], table)[0] for s, n in zip(sess.run(scores), "
        f"{CRF_LENGTHS.tolist()})]\n"
        "print([round(float(v), 4) for v in values], [[int(t) for t in p] for p in paths])\n",
        (),
        " ".join(str(part) for part in crf_reference()),
    ),
    "tensorflow.contrib.layers.linear": (
        GRAPH
        + "from tensorflow.contrib import layers\nx = tf.ones([2, 3])\ny = layers.linear(x, 4)\n"
        + SESSION
        + "print(sess.run(y).shape, [v.name for v in tf.trainable_variables()])\n",
        (),
        "(2, 4) ['fully_connected/weights:0', 'fully_connected/biases:0']",
    ),
    "tensorflow.contrib.layers.bias_add": (
        GRAPH
        + "x = tf.ones([2, 3])\ny = tf.contrib.layers.bias_add(x, activation_fn=tf.nn.relu)\n"
        + SESSION
        + "print(sess.run(y).tolist(), [v.name for v in tf.trainable_variables()])\n",
        (),
        "[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]] ['BiasAdd/biases:0']",
    ),
    "tensorflow.contrib.layers.xavier_initializer": (
        GRAPH + "from tensorflow.contrib import layers\n"
        "w = tf.get_variable('w', [200, 300], initializer=layers.xavier_initializer())\n"
        + SESSION
        + "v = sess.run(w)\nprint(abs(v).max() <= (6.0 / 500) ** 0.5, round(float(v.std()) / (2.0 / 500) ** 0.5, 1))\n",
        (),
        "True 1.0",
    ),
    # contrib's truncated normal has variance 1.3 factor / n (VarianceScaling's, which tf_upgrade_v2 writes, has
    # factor / n / 0.8796^2, 0.3% narrower): its sample std over a million draws is within 0.15% of contrib's
    "tensorflow.contrib.layers.variance_scaling_initializer": (
        GRAPH
        + "w = tf.get_variable('w', [1000, 1000], initializer=tf.contrib.layers.variance_scaling_initializer())\n"
        + SESSION
        + "v = sess.run(w)\nprint(abs(float(v.std()) / ((2.6 / 1000) ** 0.5 * 0.8796256610342398) - 1) < 0.0015)\n",
        (),
        "True",
    ),
    "tensorflow.contrib.layers.xavier_initializer_conv2d": (
        GRAPH
        + "w = tf.get_variable('w', [3, 3, 16, 32], initializer=tf.contrib.layers.xavier_initializer_conv2d())\n"
        + SESSION
        + "v = sess.run(w)\nprint(abs(v).max() <= (6.0 / 432) ** 0.5, round(float(v.std()) / (2.0 / 432) ** 0.5, 1))\n",
        (),
        "True 1.0",
    ),
    "tensorflow.contrib.framework.get_variables": (
        GRAPH + "with tf.variable_scope('enc'):\n    a = tf.get_variable('a', [1])\n    b = tf.get_variable('b', [1])\n"
        "c = tf.get_variable('c', [1])\n"
        "print([v.name for v in tf.contrib.framework.get_variables('enc')], "
        "[v.name for v in tf.contrib.framework.get_variables(suffix='b')])\n",
        (),
        "['enc/a:0', 'enc/b:0'] ['enc/b:0']",
    ),
    "tensorflow.contrib.lookup": (
        GRAPH + "import os, tempfile\npath = os.path.join(tempfile.mkdtemp(), 'words.txt')\n"
        "open(path, 'w').write('the\\ncat\\nsat\\n')\n"
        "words = tf.contrib.lookup.index_table_from_file(path, num_oov_buckets=1)\n"
        "strict = tf.contrib.lookup.index_table_from_file(path)\n"
        "back = tf.contrib.lookup.index_to_string_table_from_file(path)\n"
        "ids = words.lookup(tf.constant(['cat', 'dog', 'the']))\n"
        "sess = tf.Session()\nsess.run(tf.tables_initializer())\n"
        "print(sess.run(ids).tolist(), sess.run(strict.lookup(tf.constant(['sat', 'dog']))).tolist(), "
        "[w.decode() for w in sess.run(back.lookup(tf.constant([2, 0], tf.int64)))])\n",
        (),
        "[1, 3, 0] [2, -1] ['sat', 'the']",
    ),
    "tensorflow.nn.rnn_cell": (
        GRAPH
        + "x = tf.zeros([2, 5, 3])\nout, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(4), x, dtype=tf.float32)\n"
        + SESSION
        + "print(sess.run(state).shape)\n",
        (),
        "(2, 4)",
    ),
    "tensorflow.compat.v1.nn.rnn_cell": (
        GRAPH + "x = tf.zeros([2, 5, 3])\ncell = tf.compat.v1.nn.rnn_cell.BasicRNNCell(4)\n"
        "out, state = tf.compat.v1.nn.dynamic_rnn(cell, x, dtype=tf.float32)\n"
        + SESSION
        + "print(sess.run(out).shape)\n",
        (),
        "(2, 5, 4)",
    ),
    "tensorflow.estimator": (
        GRAPH + "def model_fn(features, labels, mode):\n"
        "    w = tf.get_variable('w', [], initializer=tf.zeros_initializer())\n"
        "    loss = tf.reduce_mean(tf.square(w * features['x'] - labels))\n"
        "    opt = tf.train.GradientDescentOptimizer(0.1)\n"
        "    train_op = opt.minimize(loss, global_step=tf.train.get_global_step())\n"
        "    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, predictions=w * features['x'])\n"
        "x = np.array([1.0, 2.0, 3.0], np.float32)\n"
        "fn = tf.estimator.inputs.numpy_input_fn({'x': x}, 2 * x, batch_size=3, num_epochs=None, shuffle=False)\n"
        "est = tf.estimator.Estimator(model_fn, model_dir='estimator_row')\n"
        "est.train(fn, steps=50)\n"
        "print(round(float(est.get_variable_value('w')), 3), est.get_variable_value('global_step'))\n",
        (),
        "2.0 50",
    ),
    "tensorflow.compat.v1.estimator": (
        GRAPH + "column = tf.feature_column.numeric_column('x')\n"
        "est = tf.compat.v1.estimator.LinearRegressor([column], model_dir='estimator_v1_row')\n"
        "x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)\n"
        "fn = tf.compat.v1.estimator.inputs.numpy_input_fn({'x': x}, x, batch_size=4, num_epochs=None, "
        "shuffle=False)\n"
        "est.train(fn, steps=20)\n"
        "print(sorted(est.evaluate(fn, steps=1)))\n",
        (),
        "['average_loss', 'global_step', 'label/mean', 'loss', 'prediction/mean']",
    ),
    "tensorflow.contrib.training": (
        GRAPH + "hp = tf.contrib.training.HParams(lr=0.1, layers=[64, 32], use_bn=False, name='a')\n"
        "hp.parse('lr=0.5,layers=[8,4],use_bn=true')\nhp.add_hparam('extra', 3)\n"
        "print(hp.lr, hp.layers, hp.use_bn, hp.extra, sorted(hp.values()), 'lr' in hp)\n",
        (),
        "0.5 [8, 4] True 3 ['extra', 'layers', 'lr', 'name', 'use_bn'] True",
    ),
    # a quarter turn counter-clockwise is np.rot90; a translation by dx=1 moves every column right
    "tensorflow.contrib.image": (
        GRAPH + "img = np.arange(9, dtype=np.float32).reshape(3, 3)\n"
        "r = tf.contrib.image.rotate(tf.constant(img), np.pi / 2)\n"
        "t = tf.contrib.image.translate(tf.constant(img[None, :, :, None]), [1.0, 0.0])\n"
        "sess = tf.Session()\nprint(sess.run(r).tolist(), sess.run(t)[0, :, :, 0].tolist())\n",
        (),
        f"{np.rot90(np.arange(9, dtype=np.float32).reshape(3, 3)).tolist()} "
        "[[0.0, 0.0, 1.0], [0.0, 3.0, 4.0], [0.0, 6.0, 7.0]]",
    ),
    # contrib's ReLU by default: a kernel of -1 leaves nothing above 0
    "tensorflow.contrib.layers.conv2d_transpose": (
        GRAPH + "x = tf.ones([1, 2, 2, 1])\n"
        "y = tf.contrib.layers.conv2d_transpose(x, 3, [3, 3], stride=2, weights_initializer=tf.constant_initializer(-1.0))\n"
        + SESSION
        + "out = sess.run(y)\nprint(out.shape, float(out.max()), [v.name for v in tf.trainable_variables()])\n",
        (),
        "(1, 4, 4, 3) 0.0 ['Conv2d_transpose/kernel:0', 'Conv2d_transpose/bias:0']",
    ),
    "tensorflow.contrib.layers.convolution2d": (
        GRAPH + "x = tf.ones([1, 4, 4, 2])\n"
        "y = tf.contrib.layers.convolution2d(x, 3, [3, 3], padding='VALID', weights_initializer=tf.ones_initializer())\n"
        + SESSION
        + "out = sess.run(y)\nprint(out.shape, sorted(set(out.ravel().tolist())), "
        "[v.name for v in tf.trainable_variables()])\n",
        (),
        "(1, 2, 2, 3) [18.0] ['Conv/weights:0', 'Conv/biases:0']",
    ),
    "tensorflow.contrib.layers.one_hot_encoding": (
        GRAPH
        + "sess = tf.Session()\nprint(sess.run(tf.contrib.layers.one_hot_encoding(tf.constant([0, 2]), 3)).tolist())\n",
        (),
        "[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]",
    ),
    "tensorflow.contrib.layers.embed_sequence": (
        GRAPH + "table = np.arange(8, dtype=np.float32).reshape(4, 2)\n"
        "e = tf.contrib.layers.embed_sequence(tf.constant([[0, 3]]), 4, 2, initializer=tf.constant_initializer(table))\n"
        + SESSION
        + "print(sess.run(e).tolist(), [v.name for v in tf.trainable_variables()])\n",
        (),
        "[[[0.0, 1.0], [6.0, 7.0]]] ['EmbedSequence/embeddings:0']",
    ),
    "tensorflow.contrib.signal": (
        GRAPH + "sess = tf.Session()\nprint(sess.run(tf.contrib.signal.frame(tf.range(6), 2, 2)).tolist())\n",
        (),
        "[[0, 1], [2, 3], [4, 5]]",
    ),
    # the standard normal's log density at 0 is -log(2 pi) / 2
    "tensorflow.contrib.distributions": (
        GRAPH + "d = tf.contrib.distributions.Normal(loc=0.0, scale=1.0)\n"
        "b = tf.contrib.distributions.Bernoulli(probs=0.25)\nsess = tf.Session()\n"
        "print(round(float(sess.run(d.log_prob(0.0))), 4), float(sess.run(b.mean())))\n",
        (),
        f"{round(-0.5 * np.log(2 * np.pi), 4)} 0.25",
    ),
    "tensorflow.contrib.util.make_tensor_proto": (
        GRAPH + "print(tf.contrib.util.make_tensor_proto([1, 2, 3]).tensor_shape.dim[0].size)\n",
        (),
        "3",
    ),
    "tensorflow.contrib.util.constant_value": (
        GRAPH + "print(tf.contrib.util.constant_value(tf.constant([3, 4])).tolist())\n",
        (),
        "[3, 4]",
    ),
    "tensorflow.contrib.lite": (
        GRAPH
        + "print(tf.contrib.lite.TFLiteConverter.__name__, callable(tf.contrib.lite.TFLiteConverter.from_session))\n",
        (),
        "TFLiteConverter True",
    ),
    # Luong attention over a memory masked to its lengths, an attention layer, TrainingHelper + BasicDecoder +
    # dynamic_decode; the program checks its own output against the same equations written out in NumPy
    "tensorflow.contrib.seq2seq": (
        GRAPH + "from tensorflow.contrib import seq2seq\n"
        "rng = np.random.RandomState(0)\nM = rng.rand(2, 3, 4).astype(np.float32)\n"
        "X = rng.rand(2, 2, 5).astype(np.float32)\n"
        "mech = seq2seq.LuongAttention(4, tf.constant(M), memory_sequence_length=[3, 2])\n"
        "cell = seq2seq.AttentionWrapper(tf.nn.rnn_cell.BasicRNNCell(4), mech, attention_layer_size=3)\n"
        "helper = seq2seq.TrainingHelper(tf.constant(X), [2, 1])\n"
        "decoder = seq2seq.BasicDecoder(cell, helper, cell.zero_state(2, tf.float32))\n"
        "outputs, state, lengths = seq2seq.dynamic_decode(decoder)\n"
        + SESSION
        + "out, n, w = sess.run([outputs.rnn_output, lengths, {v.name: v for v in tf.global_variables()}])\n"
        "Mm = M * (np.arange(3)[None, :, None] < np.array([3, 2])[:, None, None])\n"
        "keys = Mm @ w['memory_layer/kernel:0']\n"
        "h = np.zeros((2, 4), np.float32)\nattention = np.zeros((2, 3), np.float32)\nexpected = []\n"
        "for t in range(2):\n"
        "    cell_in = np.concatenate([X[:, t], attention, h], 1)\n"
        "    h = np.tanh(cell_in @ w['decoder/attention_wrapper/basic_rnn_cell/kernel:0'] "
        "+ w['decoder/attention_wrapper/basic_rnn_cell/bias:0'])\n"
        "    score = np.einsum('bu,btu->bt', h, keys)\n"
        "    score = np.where(np.arange(3)[None, :] < np.array([3, 2])[:, None], score, -np.inf)\n"
        "    align = np.exp(score - score.max(1, keepdims=True))\n    align /= align.sum(1, keepdims=True)\n"
        "    context = np.einsum('bt,btu->bu', align, Mm)\n"
        "    attention = np.concatenate([h, context], 1) @ w['decoder/attention_wrapper/attention_layer/kernel:0']\n"
        "    expected.append(attention)\n"
        "print(out.shape, n.tolist(), np.abs(out - np.stack(expected, 1)).max() < 1e-5, sorted(w))\n",
        (),
        "(2, 2, 3) [2, 1] True ['decoder/attention_wrapper/attention_layer/kernel:0', "
        "'decoder/attention_wrapper/basic_rnn_cell/bias:0', 'decoder/attention_wrapper/basic_rnn_cell/kernel:0', "
        "'memory_layer/kernel:0']",
    ),
    "tensorflow.contrib.data": (
        GRAPH + "from tensorflow.contrib import data as tf_data\n"
        "ds = tf_data.Dataset.zip((tf_data.Dataset.range(3), tf_data.Dataset.range(3).map(lambda x: x * 2)))\n"
        "item = tf.data.make_one_shot_iterator(ds).get_next()\nsess = tf.Session()\n"
        "print([tuple(int(v) for v in sess.run(item)) for _ in range(3)])\n",
        (),
        "[(0, 0), (1, 2), (2, 4)]",
    ),
    "tensorflow.contrib.framework.arg_scope": (
        GRAPH + "x = tf.ones([1, 4, 4, 1])\n"
        "with tf.contrib.framework.arg_scope([tf.contrib.layers.conv2d], num_outputs=2, activation_fn=None, "
        "weights_initializer=tf.ones_initializer()):\n"
        "    y = tf.contrib.layers.conv2d(x, kernel_size=[1, 1])\n"
        + SESSION
        + "print(sess.run(y).shape, float(sess.run(y).max()))\n",
        (),
        "(1, 4, 4, 2) 1.0",
    ),
    # contrib.losses took (logits, labels): a plain rename to tf.losses would swap them
    "tensorflow.contrib.losses": (
        GRAPH + "logits = tf.constant([[2.0, 0.0]])\nlabels = tf.constant([[1.0, 0.0]])\n"
        "loss = tf.contrib.losses.softmax_cross_entropy(logits, labels)\nsess = tf.Session()\n"
        "print(round(float(sess.run(loss)), 4))\n",
        (),
        f"{round(float(np.log(1 + np.exp(-2.0))), 4)}",
    ),
    "tensorflow.contrib.keras": (
        GRAPH + "print(tf.contrib.keras.layers.Dense(3).units)\n",
        (),
        "3",
    ),
    # SciPy 1.1's behaviour: a float image is rescaled from its own range to 0-255 when saved; imresize
    # returns uint8, an int size is a percentage; flatten reads PIL's float luminance
    **{
        f"scipy.misc.{name}": (
            "import numpy as np\nimport scipy.misc\nfrom scipy.misc import imresize\n"
            "img = (np.arange(48, dtype=np.float32).reshape(4, 4, 3) / 47.0) * 2 - 1\n"
            "scipy.misc.imsave('scaled.png', img)\nback = scipy.misc.imread('scaled.png')\n"
            "print(back.shape, back.dtype, int(back.min()), int(back.max()), "
            "scipy.misc.imread('scaled.png', flatten=True).dtype)\n"
            "print(imresize(back, 50).shape, imresize(back, (2, 3)).shape, imresize(back, 0.5).dtype, "
            "scipy.misc.bytescale(np.array([0.0, 0.5, 1.0])).tolist(), "
            "np.asarray(scipy.misc.fromimage(scipy.misc.toimage(np.eye(2)))).tolist())\n",
            (),
            "(4, 4, 3) uint8 0 255 float32\n(2, 2, 3) (2, 3, 3) uint8 [0, 128, 255] [[255, 0], [0, 255]]",
        )
        for name in ("imread", "imsave", "imresize", "toimage", "fromimage", "bytescale")
    },
}


def test_every_row_has_a_snippet() -> None:
    # the rows for pre_upgrade's renamed contrib initializers are the same helpers as their own rows
    marked = {f"tensorflow.contrib.layers.{name}" for name in CONTRIB_INITIALIZERS.values()}
    assert sorted(SNIPPETS) == sorted(api.removed for api in REMOVED_APIS if api.removed not in marked)


def file_name(removed: str) -> str:
    return "row_" + removed.strip(".").replace(".", "_") + ".py"


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("removed-apis")
    source = root / "tf1"
    source.mkdir()
    for removed, (snippet, _, _) in SNIPPETS.items():
        (source / file_name(removed)).write_text(snippet, encoding="utf-8")
    data = root / "run" / "data"
    data.mkdir(parents=True)
    rng = np.random.default_rng(0)
    np.savez(
        data / "mnist.npz",
        x_train=rng.integers(0, 256, (5055, 28, 28), dtype=np.uint8),
        y_train=rng.integers(0, 10, 5055, dtype=np.uint8),
        x_test=rng.integers(0, 256, (20, 28, 28), dtype=np.uint8),
        y_test=rng.integers(0, 10, 20, dtype=np.uint8),
    )
    (root / "run" / "MNIST-data").mkdir()
    (root / "run" / "MNIST-data" / "mnist.npz").write_bytes((data / "mnist.npz").read_bytes())
    report = migrate(source, root / "tf2")
    assert report.will_run == report.files, [s for s in report.statuses if not s.will_run]
    return root


# (migrated program text, arguments) -> its run: rows that share one program run it once
_RUNS: dict[tuple[str, tuple[str, ...]], subprocess.CompletedProcess[str]] = {}


def ran(script: Path, arguments: tuple[str, ...], cwd: Path) -> subprocess.CompletedProcess[str]:
    key = (script.read_text(encoding="utf-8"), arguments)
    if key not in _RUNS:
        _RUNS[key] = subprocess.run(
            [sys.executable, str(script), *arguments],
            cwd=cwd,
            env=dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""),
            capture_output=True,
            text=True,
            timeout=240,
        )
    return _RUNS[key]


@pytest.mark.parametrize("removed", sorted(SNIPPETS))
def test_migrated_snippet_runs(migrated: Path, removed: str) -> None:
    _, arguments, expected = SNIPPETS[removed]
    script = migrated / "tf2" / file_name(removed)
    text = script.read_text(encoding="utf-8")
    done = ran(script, arguments, migrated / "run")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-len(expected.splitlines()) :] == expected.splitlines()
    if "_tf1_" in text:
        assert f"from {SHIM_MODULE} import" in text and "class _tf1_" not in text
