"""Custom objects of a tfpilot.fit run load in a new process: the run records the modules that
define them and `tfpilot export` / `tfpilot evaluate` import them (or `--import MODULE`); a
missing one is a one-line error that names it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from conftest import run_tfpilot

LAYERS = """
import keras


@keras.saving.register_keras_serializable(package="shop")
class Doubled(keras.layers.Layer):
    def call(self, inputs):
        return inputs * 2.0


@keras.saving.register_keras_serializable(package="shop")
def scaled_mse(y_true, y_pred):
    return keras.ops.mean(keras.ops.square(y_true - y_pred)) * 0.5


class Halved(keras.layers.Layer):  # never registered, as most keras-io examples' layers
    def call(self, inputs):
        return inputs * 0.5
"""

TRAIN = """
import numpy as np, keras, tfpilot
{import_line}
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((3,)), Doubled(), Halved(), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss=scaled_mse)
x = np.random.default_rng(0).random((40, 3))  # float64, as numpy gives it
tfpilot.fit(model, x, x.sum(axis=1), batch_size=8, epochs=1, validation_data=(x[:16], x[:16].sum(axis=1)),
            name="shop", runs_dir="runs")
"""


def _train(directory, *, in_script: bool) -> None:
    import_line = LAYERS if in_script else "from shop_layers import Doubled, Halved, scaled_mse"
    script = directory / "train.py"
    script.write_text(textwrap.dedent(TRAIN.format(import_line=import_line)))
    completed = subprocess.run(
        [sys.executable, str(script)],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=300,
        env={"TF_CPP_MIN_LOG_LEVEL": "2", "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
    )
    assert completed.returncode == 0, completed.stderr[-2000:]


@pytest.mark.slow
def test_recorded_modules_are_imported_by_export_and_evaluate_in_a_new_process(tmp_path):
    (tmp_path / "shop_layers.py").write_text(LAYERS)
    _train(tmp_path, in_script=False)
    spec = (tmp_path / "runs" / "shop" / "fit" / "spec.json").read_text()
    assert '"shop_layers"' in spec
    # The unnamed Input of a Sequential model serves as `inputs`, and float64 rows as float32.
    assert '"key": "inputs"' in spec and '"float32"' in spec
    exported = run_tfpilot(["export", "runs/shop"], cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "runs" / "shop" / "model" / "1" / "saved_model.pb").is_file()
    evaluated = run_tfpilot(["evaluate", "runs/shop"], cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr

    # Elsewhere, without the module on the path: one line naming the module and what to do.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    failed = run_tfpilot(["export", str(tmp_path / "runs" / "shop")], cwd=elsewhere)
    assert failed.returncode == 2
    line = failed.stderr.strip().splitlines()[-1]
    # ... and where the training process found it (named, never imported from there by itself)
    assert "shop_layers" in line and f"PYTHONPATH={tmp_path.resolve()}" in line


@pytest.mark.slow
def test_an_object_defined_in_the_training_script_is_named_with_the_fix(tmp_path):
    _train(tmp_path, in_script=True)
    failed = run_tfpilot(["export", "runs/shop"], cwd=tmp_path)
    assert failed.returncode == 2
    line = failed.stderr.strip().splitlines()[-1]
    assert ("Doubled" in line or "Halved" in line) and "--import" in line and "__main__" in line
    # Moved into a module, `--import` makes it known.
    (tmp_path / "moved.py").write_text(LAYERS)
    exported = run_tfpilot(["export", "runs/shop", "--import", "moved"], cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
