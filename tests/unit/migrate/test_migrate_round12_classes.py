"""Classes from migrate's held-out round 12 (after its figure; tuning material now).

- TF 1.3's tf.contrib.data (kratzert's AlexNet fine-tuning): `from tensorflow.contrib.data import Dataset, Iterator`
  and `ds.map(f, num_threads=N, output_buffer_size=M)`, which TF 1.4 moved to tf.data and split into
  num_parallel_calls and prefetch; tf_upgrade_v2 renames only the later contrib.data names;
- a shape dimension computed with Python 3's `/` (`input_channels/groups`): TF 1's Dimension took the whole float,
  TF 2's raises TypeError, so the migrated shape uses `//`.
Both run the migrated program on TF 2.21 in both modes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tensorflow as tf
from test_migrate_heldout3_classes import run
from test_migrate_heldout7_classes import _migrate

CONTRIB_DATA = (
    "import tensorflow as tf\n"
    "from tensorflow.contrib.data import Dataset, Iterator\n"
    "\n"
    "data = Dataset.from_tensor_slices(tf.constant([1.0, 2.0, 3.0, 4.0]))\n"
    "data = data.map(lambda v: v * 2, num_threads=2,\n"
    "                output_buffer_size=10)\n"
    "data = data.batch(2)\n"
    "iterator = Iterator.from_structure(data.output_types, data.output_shapes)\n"
    "init = iterator.make_initializer(data)\n"
    "batch = iterator.get_next()\n"
    "with tf.Session() as sess:\n"
    "    sess.run(init)\n"
    "    print(sess.run(tf.reduce_sum(batch)) + sess.run(tf.reduce_sum(batch)))\n"
)


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_tf_1_3_contrib_data_becomes_tf_data_and_its_map_arguments_become_parallel_calls_and_prefetch(
    tmp_path: Path, mode: str
) -> None:
    report, migrated = _migrate(tmp_path, "datagenerator.py", CONTRIB_DATA, mode)
    assert report.will_run == report.files, report.statuses
    text = migrated.read_text()
    assert "contrib" not in text and "num_threads" not in text and "output_buffer_size" not in text
    assert "num_parallel_calls=2).prefetch(10)" in text
    assert run(migrated) == "20.0"
    assert any("num_parallel_calls" in item.message for item in report.rewritten), report.rewritten


SHAPE = (
    "import tensorflow as tf\n"
    "\n"
    "channels, groups = 6, 2\n"
    "weights = tf.get_variable('weights', shape=[3, 3, channels/groups, 4])\n"
    "inputs = tf.placeholder(tf.float32, [None, channels/groups])\n"
    "scale = tf.ones([2, channels/groups])\n"
    "with tf.Session() as sess:\n"
    "    sess.run(tf.global_variables_initializer())\n"
    "    print(weights.shape.as_list()[2] + inputs.shape.as_list()[1] + sess.run(tf.reduce_sum(scale)))\n"
)


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_a_shape_divided_with_python_3s_slash_gets_floor_division_where_tf_2_refuses_a_float(
    tmp_path: Path, mode: str
) -> None:
    with pytest.raises(TypeError, match="Dimension value must be integer"):
        tf.TensorShape([3, 6 / 2])  # TF 1 took the whole float; TF 2.21 does not
    report, migrated = _migrate(tmp_path, "alexnet.py", SHAPE, mode)
    text = migrated.read_text()
    assert "shape=[3, 3, channels // groups, 4]" in text and "[None, channels // groups]" in text
    assert "tf.ones([2, channels/groups])" in text  # tf.ones takes the float: left as written
    assert run(migrated) == "12.0"


PRIVATE_MODULE = (
    "import tensorflow as tf\n"
    "from tensorflow.python.ops import tensor_array_ops, control_flow_ops\n"
    "\n"
    "ta = tensor_array_ops.TensorArray(dtype=tf.float32, size=3, dynamic_size=False)\n"
    "def body(i, ta):\n"
    "    return i + 1, ta.write(i, tf.cast(i, tf.float32) * 2.0)\n"
    "_, ta = control_flow_ops.while_loop(\n"
    "    cond=lambda i, _: i < 3, body=body, loop_vars=(tf.constant(0), ta))\n"
    "with tf.Session() as sess:\n"
    "    print(sess.run(tf.reduce_sum(ta.stack())))\n"
)


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_a_member_gone_from_a_private_tensorflow_module_gets_its_public_tf1_name(tmp_path: Path, mode: str) -> None:
    """SeqGAN's `control_flow_ops.while_loop`: TF 2.21's control_flow_ops has no while_loop (it moved to another
    private module); tf.compat.v1.while_loop is the same function. Members that are still there stay."""
    from tensorflow.python.ops import control_flow_ops, tensor_array_ops

    assert not hasattr(control_flow_ops, "while_loop") and hasattr(tensor_array_ops, "TensorArray")
    report, migrated = _migrate(tmp_path, "generator.py", PRIVATE_MODULE, mode)
    assert report.will_run == report.files, report.statuses
    text = migrated.read_text()
    assert "tf.compat.v1.while_loop(" in text and "tensor_array_ops.TensorArray(" in text
    assert run(migrated) == "6.0"


SLIM = (
    "import numpy as np\n"
    "import tensorflow as tf\n"
    "import tensorflow.contrib.slim as slim\n"
    "\n"
    "tf.set_random_seed(0)\n"
    "x = tf.placeholder(tf.float32, [None, 8, 8, 1])\n"
    "y = tf.placeholder(tf.float32, [None, 3])\n"
    "is_training = tf.placeholder(tf.bool)\n"
    "with slim.arg_scope([slim.conv2d, slim.fully_connected],\n"
    "                    normalizer_fn=slim.batch_norm,\n"
    "                    normalizer_params={'is_training': is_training, 'decay': 0.95}):"
    "\n"
    "    net = slim.conv2d(x, 4, [3, 3], scope='conv1')"
    "\n"
    "    net = slim.max_pool2d(net, [2, 2], scope='pool1')"
    "\n"
    "    net = slim.flatten(net, scope='flatten')"
    "\n"
    "    logits = slim.fully_connected(net, 3, activation_fn=None, normalizer_fn=None, scope='fco')"
    "\n"
    "loss = slim.losses.softmax_cross_entropy(logits, y)\n"
    "train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)\n"
    "names = sorted(v.name for v in tf.global_variables())\n"
    "rng = np.random.RandomState(0)\n"
    "xs, ys = rng.rand(16, 8, 8, 1), np.eye(3)[rng.randint(0, 3, 16)]\n"
    "with tf.Session() as sess:\n"
    "    sess.run(tf.global_variables_initializer())\n"
    "    first = sess.run(loss, {x: xs, y: ys, is_training: True})\n"
    "    for _ in range(20):\n"
    "        sess.run(train, {x: xs, y: ys, is_training: True})\n"
    "    print(len(names), 'conv1/BatchNorm/moving_mean:0' in names, 'fco/biases:0' in names, sess.run(loss, {x: xs, y: ys, is_training: True}) < first)"
    "\n"
)


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_slim_arg_scope_sets_the_layer_defaults_and_slim_losses_take_the_logits_first(
    tmp_path: Path, mode: str
) -> None:
    """hwalsuklee's slim MNIST CNN: `with slim.arg_scope([slim.conv2d, slim.fully_connected], normalizer_fn=
    slim.batch_norm, ...)` and TF 0.12's `slim.losses.softmax_cross_entropy(logits, labels)`. Under the scope conv1 gets
    a BatchNorm and no biases (TF1 slim's 6 variables); a call's own normalizer_fn=None wins; the loss falls."""
    report, migrated = _migrate(tmp_path, "slimnet.py", SLIM, mode)
    assert report.will_run == report.files, report.statuses
    assert run(migrated) == "6 True True True"
