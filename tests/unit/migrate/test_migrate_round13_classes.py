"""Classes from migrate's held-out round 13 (after its figure; tuning material now).

- A `model/` folder without `__init__.py` that the entry script imports as a package (`from model.rnn_lm
  import ...`, a namespace package; dongjun-Lee's language model and text classifiers, exelban's CIFAR-10):
  the shim module went into `model/`, where `from tf1_compat_shims import ...` inside it cannot find it
  when `train.py` runs. It now goes above the outermost package, as for a folder with `__init__.py`.
- `contrib.layers.layer_norm` (MAML, through contrib's internal `layers.python` module): a shim row,
  tested in test_migrate_removed_apis.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfpilot.migrate import migrate


def _last_line(folder: Path, script: str) -> str:
    """Run the migrated script from its folder, as a person would; its last printed line."""
    done = subprocess.run(
        [sys.executable, script],
        cwd=folder,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


MODEL = (
    "import tensorflow as tf\n"
    "\n"
    "\n"
    "def build(x):\n"
    "    return tf.layers.dense(x, 2, kernel_initializer=tf.ones_initializer())\n"
)
TRAIN = (
    "import numpy as np\n"
    "import tensorflow as tf\n"
    "from model.dense_net import build\n"
    "\n"
    "x = tf.placeholder(tf.float32, [None, 3])\n"
    "y = build(x)\n"
    "with tf.Session() as sess:\n"
    "    sess.run(tf.global_variables_initializer())\n"
    "    print(sess.run(y, feed_dict={x: np.ones((1, 3))}).tolist())\n"
)


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_the_shim_module_of_a_namespace_package_goes_where_the_entry_script_imports_from(
    tmp_path: Path, mode: str
) -> None:
    source = tmp_path / "tf1"
    (source / "model").mkdir(parents=True)
    (source / "model" / "dense_net.py").write_text(MODEL)
    (source / "train.py").write_text(TRAIN)
    report = migrate(source, tmp_path / "tf2", mode=mode)
    assert report.will_run == report.files, report.statuses
    assert (tmp_path / "tf2" / "tf1_compat_shims.py").is_file()
    assert not (tmp_path / "tf2" / "model" / "tf1_compat_shims.py").exists()
    assert _last_line(tmp_path / "tf2", "train.py") == "[[3.0, 3.0]]"


ALIASED_CONTRIB = (
    "import numpy as np\n"
    "import tensorflow as tf\n"
    "import tensorflow.contrib as tf_contrib\n"
    "\n"
    "reg = tf_contrib.layers.l2_regularizer(0.5)\n"
    "w = tf.get_variable('w', initializer=tf.constant([1.0, -3.0]), regularizer=reg)\n"
    "with tf.Session() as sess:\n"
    "    sess.run(tf.global_variables_initializer())\n"
    "    print(sess.run(tf.losses.get_regularization_loss()))\n"
)


@pytest.mark.parametrize("mode", ["compat", "native"])
def test_contrib_imported_under_an_alias_is_migrated_as_tf_contrib(tmp_path: Path, mode: str) -> None:
    """taki0112's ResNet: `import tensorflow.contrib as tf_contrib`, then `tf_contrib.layers.l2_regularizer`
    - a name neither tf_upgrade_v2 nor the contrib table knew, so the import stayed and failed."""
    source = tmp_path / "tf1"
    source.mkdir()
    (source / "ops.py").write_text(ALIASED_CONTRIB)
    report = migrate(source, tmp_path / "tf2", mode=mode)
    assert report.will_run == report.files, report.statuses
    text = (tmp_path / "tf2" / "ops.py").read_text()
    assert "contrib" not in text.replace("_tf1_contrib", "").replace("tf1_compat_shims", ""), text
    assert _last_line(tmp_path / "tf2", "ops.py") == "2.5"  # 0.5 * (1 + 9) / 2


OPS = "import tensorflow as tf\n\n\ndef double(x):\n    return x * 2.0\n"
STAR_TRAIN = (
    "import numpy as np\n"
    "from ops import *\n"
    "\n"
    "x = tf.placeholder(tf.float32, [None])\n"
    "total = tf.reduce_sum(double(x))\n"
    "tf.summary.scalar('total', total)\n"
    "merged = tf.summary.merge_all()\n"
    "with tf.Session() as sess:\n"
    "    summary, value = sess.run([merged, total], feed_dict={x: np.ones(3)})\n"
    "    print(type(summary).__name__, value)\n"
)


def test_tf_from_a_star_import_of_a_project_module_is_tensorflow(tmp_path: Path) -> None:
    """taki0112's ResNet.py gets `tf` from `from ops import *`: it was not seen as a graph file, so
    `tf.summary.scalar` stayed on the TF2 API and merge() failed on what it returned."""
    source = tmp_path / "tf1"
    source.mkdir()
    (source / "ops.py").write_text(OPS)
    (source / "train.py").write_text(STAR_TRAIN)
    report = migrate(source, tmp_path / "tf2", mode="compat")
    assert report.will_run == report.files, report.statuses
    text = (tmp_path / "tf2" / "train.py").read_text()
    assert "from ops import *\ntf.compat.v1.disable_v2_behavior()" in text
    assert "tf.compat.v1.summary.scalar('total', total)" in text
    assert _last_line(tmp_path / "tf2", "train.py") == "bytes 6.0"
