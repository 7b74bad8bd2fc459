"""Classes from held-out round 9 (after its figure was recorded): contrib's xavier initializer, which
tf_upgrade_v2 turns into Keras 3's VarianceScaling (unseeded by tf.set_random_seed), and a graph loss
summed with module-level `+=` in native mode (test_native_cases.py has its table rows). Written for tfpilot."""

from __future__ import annotations

from pathlib import Path

from test_migrate_heldout3_classes import run
from test_migrate_heldout7_classes import _migrate

XAVIER = (
    "import tensorflow as tf\n"
    "tf.set_random_seed(777)\n"
    "w = tf.get_variable('w', shape=[64, 32], initializer=tf.contrib.layers.xavier_initializer())\n"
    "v = tf.get_variable('v', shape=[32], initializer=tf.contrib.layers.xavier_initializer(uniform=False))\n"
    "with tf.Session() as sess:\n"
    "    sess.run(tf.global_variables_initializer())\n"
    "    a, b = sess.run([w, v])\n"
    "    print('%.6f %.6f %.4f' % (a.sum(), b.sum(), abs(a).max() * (96 / 6.0) ** 0.5))\n"
)


def test_xavier_weights_follow_the_graph_seed_as_in_tf1(tmp_path: Path) -> None:
    report, migrated = _migrate(tmp_path, "train.py", XAVIER)
    text = migrated.read_text()
    # contrib's own initializer (round 16: Keras' VarianceScaling, which tf_upgrade_v2 writes, draws another
    # normal and ignores the graph seed), seeded by the graph's seed as contrib's was
    assert "_tf1_contrib.xavier_initializer(" in text and "keras.initializers" not in text
    assert any("contrib's initializer kept as contrib's" in item.message for item in report.rewritten), report.rewritten
    first, second = run(migrated), run(migrated)
    assert first == second  # the same weights on every run, under the script's seed
    # TF1's uniform xavier: |w| <= sqrt(6 / (fan_in + fan_out)), the bound reached to within a few percent
    assert 0.95 <= float(first.split()[2]) <= 1.0
