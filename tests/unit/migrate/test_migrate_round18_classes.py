"""Classes found on held-out migrate round 18 (after its figure was taken; now tuning material).

- A conditional DCGAN's `tf.layers.batch_normalization(x, training=is_train)` on 4-D input: TF 1 took its
  fused kernel there (`fused=None` meant fused for 4-D input with the channels on axis 1 or 3), whose
  variance output carries Bessel's correction into the moving variance; the migrated layer took the
  non-fused path, so every isTrain=False evaluation normalised with another moving variance.
- Two seeded MNIST scripts drifted from their TF 1 results: the migrated `read_data_sets` asked
  `tf.compat.v1.get_seed` for the seed it gives NumPy, and in TF 2 every such call advances the counter
  that gives later random ops their op seeds (three DataSets: every initial weight changed); and it scaled
  pixels by a division where TF 1 multiplied by 1/255 (some pixels one float32 step apart).
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")


@pytest.mark.parametrize("axis", [3, 1], ids=["NHWC", "NCHW"])
def test_tf_layers_batch_norm_on_4d_input_takes_tf1s_fused_path(axis: int) -> None:
    from tfpilot.migrate.shims.layers import _tf1_layers

    values = np.random.RandomState(0).rand(6, 3, 4, 5).astype(np.float32) * 3.0
    graph = tf.Graph()
    with graph.as_default():
        inputs = tf.constant(values)
        training = tf.compat.v1.placeholder(tf.bool, [])
        out = _tf1_layers.batch_normalization(inputs, axis=axis, momentum=0.9, epsilon=1e-3, training=training)
        updates = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
        variables = {v.name: v for v in tf.compat.v1.global_variables()}
    reduce = tuple(i for i in range(4) if i != axis)
    mean, biased = values.mean(axis=reduce), values.var(axis=reduce)
    n = values.size // values.shape[axis]
    shape = [1, 1, 1, 1]
    shape[axis] = values.shape[axis]
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(tf.compat.v1.global_variables_initializer())
        got, _ = session.run([out, updates], {training: True})
        # the batch's biased variance normalises; its variance with Bessel's correction feeds the moving one
        expected = (values - mean.reshape(shape)) / np.sqrt(biased.reshape(shape) + 1e-3)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        weights = session.run(variables)
        np.testing.assert_allclose(weights["batch_normalization/moving_mean:0"], 0.1 * mean, rtol=1e-5)
        np.testing.assert_allclose(
            weights["batch_normalization/moving_variance:0"], 0.9 + 0.1 * biased * n / (n - 1), rtol=1e-5
        )
        # training=False: the moving statistics normalise, and the updates (momentum 1.0 there) move nothing
        got, _ = session.run([out, updates], {training: False})
        after = session.run(variables)
    for name in ("batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"):
        np.testing.assert_array_equal(after[name], weights[name])
    moving_mean = weights["batch_normalization/moving_mean:0"].reshape(shape)
    moving_variance = weights["batch_normalization/moving_variance:0"].reshape(shape)
    np.testing.assert_allclose(got, (values - moving_mean) / np.sqrt(moving_variance + 1e-3), rtol=1e-4, atol=1e-4)


@pytest.fixture
def mnist_npz(tmp_path, monkeypatch):
    monkeypatch.delenv("TFPILOT_MNIST", raising=False)
    rng = np.random.RandomState(2)
    np.savez(
        tmp_path / "mnist.npz",
        x_train=rng.randint(0, 256, (5100, 28, 28)).astype(np.uint8),
        y_train=rng.randint(0, 10, 5100).astype(np.uint8),
        x_test=rng.randint(0, 256, (30, 28, 28)).astype(np.uint8),
        y_test=rng.randint(0, 10, 30).astype(np.uint8),
    )
    return tmp_path


def test_reading_mnist_leaves_the_op_seeds_of_a_seeded_graph_alone(mnist_npz) -> None:
    from tfpilot.migrate.shims.mnist import _tf1_mnist

    def first_weights(read: bool) -> np.ndarray:
        with tf.Graph().as_default() as graph:
            tf.compat.v1.set_random_seed(0)
            if read:
                _tf1_mnist.read_data_sets(str(mnist_npz), one_hot=True)
            weights = tf.compat.v1.random_normal([4])
            with tf.compat.v1.Session(graph=graph) as session:
                return session.run(weights)

    np.testing.assert_array_equal(first_weights(read=True), first_weights(read=False))


def test_mnist_pixels_are_scaled_with_tf1s_arithmetic(mnist_npz) -> None:
    from tfpilot.migrate.shims.mnist import _tf1_mnist

    data = _tf1_mnist.read_data_sets(str(mnist_npz), validation_size=0)
    raw = np.load(mnist_npz / "mnist.npz")["x_train"].reshape(5100, -1).astype(np.float32)
    tf1 = np.multiply(raw, 1.0 / 255.0)
    assert not np.array_equal(tf1, raw / 255.0)  # premise: the two roundings differ on some pixels
    np.testing.assert_array_equal(data.train.images, tf1)
