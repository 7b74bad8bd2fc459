"""Classes found on held-out migrate round 16 (after its figure was taken; now tuning material).

- ikhlestov's DenseNet and HasnainRaz's FC-DenseNet draw their weights with `tf.contrib.layers.
  variance_scaling_initializer()`: tf_upgrade_v2 writes Keras' VarianceScaling for it, whose truncated normal
  is 0.3% narrower than contrib's, and programs seeded to the bit drifted (7% by the second epoch). The rows
  of contrib's initializers run in test_migrate_removed_apis.py; here, the migrated call and the report.
- The DenseNet's data providers import matplotlib under `if __name__ == "__main__":`, a sanity check that runs
  only when someone runs the module itself; the report said the files would not run, and they did.
"""

from __future__ import annotations

from pathlib import Path

from tfpilot.migrate import migrate


def test_contribs_initializers_stay_contribs_and_the_report_names_them_as_written(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "net.py").write_text(
        "import tensorflow as tf\n\n"
        "w = tf.get_variable('w', [3, 3, 4, 8], initializer=tf.contrib.layers.variance_scaling_initializer())\n"
        "v = tf.get_variable('v', [8, 2], initializer=tf.contrib.layers.xavier_initializer(uniform=False))\n"
        "u = tf.variance_scaling_initializer(scale=2.0)\n"
    )
    report = migrate(source, tmp_path / "out")
    migrated = (tmp_path / "out" / "net.py").read_text()
    assert "_tf1_contrib.variance_scaling_initializer()" in migrated
    assert "_tf1_contrib.xavier_initializer(uniform=False)" in migrated
    assert "VarianceScaling" not in migrated.split("w = ")[1].split("u = ")[0]
    assert "tfpilot_contrib_" not in migrated
    # TF1's core initializer is not contrib's: it keeps tf_upgrade_v2's rewrite
    assert "_tf1_contrib" not in migrated.split("u = ")[1]
    text = (tmp_path / "out" / "MIGRATION_REPORT.md").read_text()
    assert "tfpilot_contrib_" not in text and "contrib's initializer kept as contrib's" in text
    assert report.statuses and all(status.will_run for status in report.statuses)


def test_a_missing_package_under_the_main_guard_of_a_module_src_imports_does_not_stop_the_program(
    tmp_path: Path,
) -> None:
    source = tmp_path / "src"
    (source / "providers").mkdir(parents=True)
    (source / "providers" / "__init__.py").write_text("")
    check = 'if __name__ == "__main__":\n    import no_such_plotting_package\n    no_such_plotting_package.show()\n'
    (source / "providers" / "cifar.py").write_text("import numpy as np\n\n\ndef load():\n    return 1\n\n\n" + check)
    (source / "providers" / "utils.py").write_text("from .cifar import load\n")
    (source / "train.py").write_text("from providers.utils import load\n\nprint(load())\n")
    # a script run on its own stops at the same import
    (source / "plot.py").write_text("import numpy as np\n\n" + check)
    report = migrate(source, tmp_path / "out")
    will_run = {status.path: status.will_run for status in report.statuses}
    assert will_run["providers/cifar.py"] and will_run["train.py"]
    assert not will_run["plot.py"]


def test_resize_images_keeps_tf1s_sampling_in_a_graph_file(tmp_path: Path) -> None:
    """tf_upgrade_v2 writes TF2's tf.image.resize for tf.image.resize_images; TF2's samples at half-pixel centers.
    TF1 resized a 1x2 ramp [0, 1] to width 4 as [0, 0.5, 1, 1]; TF2 gives [0, 0.25, 0.75, 1]."""
    import subprocess
    import sys

    source = tmp_path / "src"
    source.mkdir()
    (source / "resize.py").write_text(
        "import numpy as np\nimport tensorflow as tf\n\n"
        "x = tf.placeholder(tf.float32, [1, 1, 2, 1])\n"
        "y = tf.image.resize_images(x, [1, 4])\n"
        "with tf.Session() as sess:\n"
        "    print(sess.run(y, {x: np.array([0.0, 1.0]).reshape(1, 1, 2, 1)}).ravel().tolist())\n"
    )
    migrate(source, tmp_path / "out")
    migrated = (tmp_path / "out" / "resize.py").read_text()
    assert "tf.compat.v1.image.resize(" in migrated
    ran = subprocess.run(
        [sys.executable, "resize.py"], cwd=tmp_path / "out", capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip().splitlines()[-1] == "[0.0, 0.5, 1.0, 1.0]"


def test_an_optional_package_imported_under_try_except_importerror_does_not_stop_the_file(tmp_path: Path) -> None:
    from tfpilot.migrate.readiness import check_runs

    source = (
        "import tensorflow as tf\n"
        "try:\n    import no_such_image_package\nexcept ImportError:\n    no_such_image_package = None\n"
        "try:\n    from no_such_plot_package import show\nexcept (ImportError, KeyError):\n    show = print\n"
        "try:\n    import no_such_other_package\nexcept KeyError:\n    pass\n"
    )
    lines = {b.line for b in check_runs(source)}
    assert 3 not in lines and 7 not in lines
    assert 11 in lines  # a handler for something else: the import still stops the file
