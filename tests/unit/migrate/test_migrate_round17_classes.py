"""Classes found on held-out migrate round 17 (after its figure was taken; now tuning material).

- PointNet's `tf.nn.dropout(inputs, keep_prob, noise_shape)`: tf_upgrade_v2 made the keep probability
  `rate=1 - (keep_prob)` and left noise_shape positional, where TF 2's `rate` is ("Got multiple values for
  argument 'rate'"). TF 1's positional arguments are named before tf_upgrade_v2 reads the call.
- Udacity's batch-norm lesson feeds `training=` a bool placeholder: the migrated layer computed the batch
  moments inside its cond, TF 1's outside (then selected), and the seeded lesson's accuracies drifted by up to
  8 test examples in 10000. The moments are outside the cond now, as in TF 1.
- jiamings' WGAN calls `tf.contrib.layers.apply_regularization`, which the contrib table lacked (its
  row, with sum_regularizer and l1_l2_regularizer, runs in test_migrate_removed_apis.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tfpilot.migrate import migrate

tf = pytest.importorskip("tensorflow")


def test_tf1_positional_dropout_keeps_its_noise_shape_and_keep_probability(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "net.py").write_text(
        "import tensorflow as tf\n"
        "x = tf.ones([4, 6])\n"
        "keep = tf.placeholder(tf.float32)\n"
        "y = tf.nn.dropout(x, keep, [4, 1])\n"
        "with tf.Session() as sess:\n"
        "    print(sess.run(y, feed_dict={keep: 1.0}).sum(), sess.run(y, feed_dict={keep: 0.5}).std(axis=1).max())\n"
    )
    migrate(source, tmp_path / "out")
    migrated = (tmp_path / "out" / "net.py").read_text()
    assert "noise_shape=[4, 1]" in migrated and "rate=1 - (keep)" in migrated
    done = subprocess.run(
        [sys.executable, "net.py"], cwd=tmp_path / "out", capture_output=True, text=True, timeout=240, check=True
    )
    total, spread = done.stdout.split()
    assert float(total) == 24.0  # keep_prob 1.0 keeps everything
    assert float(spread) == 0.0  # one mask draw per row (noise_shape [4, 1]): each row all kept or all dropped


def test_batch_norm_with_a_training_placeholder_takes_its_moments_outside_the_cond() -> None:
    from tfpilot.migrate.shims.layers import _tf1_layers

    graph = tf.Graph()
    with graph.as_default():
        inputs = tf.compat.v1.placeholder(tf.float32, [None, 3])
        training = tf.compat.v1.placeholder(tf.bool, [])
        _tf1_layers.batch_normalization(inputs, training=training)
        moments = [op for op in graph.get_operations() if "/moments/" in op.name]
        assert moments
        # inside a cond, v1 control flow gives an op a control-flow context; cond_v2 puts it in a branch graph
        assert all(op._control_flow_context is None for op in moments)  # noqa: SLF001 - the only way to ask


_NEGATED = (
    "import tensorflow as tf\n"
    "x = tf.placeholder(tf.float32, [None])\n"
    "d_loss = -tf.reduce_mean(-tf.reduce_mean(x + 1.0))\n"
    "g_loss = -tf.reduce_sum(-tf.reduce_mean(x))\n"
    "with tf.Session() as sess:\n"
    "    print(*sess.run([d_loss, g_loss], feed_dict={x: [0.0, 2.0]}))\n"
)


def test_premise_tf_2_21s_graph_optimizer_drops_a_negation_of_a_scalar_under_a_reduction() -> None:
    """The helper building round 17 found it (and dropped a GAN whose printed loss came out negative): in a
    compat.v1 Session, `-tf.reduce_mean(-s)` of a scalar `s` evaluates to `-s`. If a TensorFlow upgrade fixes
    it, this test fails: the rewrite below is then harmless but no longer needed."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None])
        fetched = -tf.reduce_mean(-tf.reduce_mean(x + 1.0))
        with tf.compat.v1.Session(graph=graph) as session:
            assert session.run(fetched, {x: [0.0, 2.0]}) == -2.0  # the right value is +2.0


def test_a_negated_reduction_of_a_negation_computes_its_value_after_migration(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "gan.py").write_text(_NEGATED)
    report = migrate(source, tmp_path / "out")
    migrated = (tmp_path / "out" / "gan.py").read_text()
    assert "d_loss = tf.reduce_mean(tf.reduce_mean(x + 1.0))" in migrated
    assert "g_loss = tf.reduce_sum(tf.reduce_mean(x))" in migrated
    done = subprocess.run(
        [sys.executable, "gan.py"], cwd=tmp_path / "out", capture_output=True, text=True, timeout=240, check=True
    )
    assert [float(v) for v in done.stdout.split()] == [2.0, 1.0]
    assert "drops one of the two negations" in (tmp_path / "out" / "MIGRATION_REPORT.md").read_text()
    assert report.statuses
