"""End to end through the `tfpilot` command line, each command in a fresh process.

One run of the bundled example (module-scoped) is shared by the tests that inspect its run
directory; the resume test trains a smaller config twice (uninterrupted, and killed + resumed).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import run_tfpilot

pytestmark = pytest.mark.slow

SAVED_MODEL_CLI = Path(sys.executable).parent / "saved_model_cli"


def one_error_line(stderr: str) -> str:
    """The CLI's contract for input errors: exactly one `error:` line and no traceback."""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


def scalar_and_histogram_tags(directory: Path) -> tuple[set[str], set[str]]:
    import tensorflow as tf

    scalars, histograms = set(), set()
    for path in directory.glob("events.out.tfevents.*"):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                plugin = value.metadata.plugin_data.plugin_name
                (scalars if plugin == "scalars" else histograms if plugin == "histograms" else set()).add(value.tag)
    return scalars, histograms


# ------------------------------------------------------------------------------- bad input


BAD_CONFIGS = {
    "wrong_type": ("train:\n  epochs: lots\n", "`train.epochs`", ":5:"),
    "unknown_key": ("train:\n  epoch: 3\n", "`train.epoch`", ":5:"),
    "impossible": ("train:\n  batch_size: 0\n", "`train.batch_size`", ":5:"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_exits_2_with_one_line(tmp_path: Path, case: str) -> None:
    (tmp_path / "images").mkdir()
    body, key, line = BAD_CONFIGS[case]
    config = tmp_path / "bad.yaml"
    config.write_text(f"name: bad\ndata:\n  path: images\n{body}")
    result = run_tfpilot(["train", config], cwd=tmp_path)
    assert result.returncode == 2, result
    message = one_error_line(result.stderr)
    assert key in message and f"{config}{line}" in message, message
    assert not (tmp_path / "runs").exists()  # nothing was started


def test_missing_data_path_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("name: bad\ndata:\n  kind: image_folder\n  path: nowhere\n")
    for command in (["train", config], ["config", "show", config]):
        result = run_tfpilot(command, cwd=tmp_path)
        assert result.returncode == 2, result
        message = one_error_line(result.stderr)
        assert "`data.path`" in message and f"{config}:4:" in message and "does not exist" in message


def test_missing_config_file_and_not_a_run_dir(tmp_path: Path) -> None:
    result = run_tfpilot(["train", tmp_path / "absent.yaml"], cwd=tmp_path)
    assert result.returncode == 2 and "does not exist" in one_error_line(result.stderr)
    result = run_tfpilot(["evaluate", tmp_path], cwd=tmp_path)
    assert result.returncode == 2 and "not a tfpilot run directory" in one_error_line(result.stderr)


def test_config_schema_is_json(tmp_path: Path) -> None:
    result = run_tfpilot(["config", "schema"], cwd=tmp_path)
    assert result.returncode == 0, result
    schema = json.loads(result.stdout)
    assert schema["title"] == "RunConfig" and "TrainConfig" in schema["$defs"]


def test_config_show_fills_defaults(tmp_path: Path) -> None:
    import yaml

    (tmp_path / "images").mkdir()
    config = tmp_path / "ok.yaml"
    config.write_text("name: ok\ndata: {path: images}\ntrain: {epochs: 2}\n")
    result = run_tfpilot(["config", "show", config], cwd=tmp_path)
    assert result.returncode == 0, result
    shown = yaml.safe_load(result.stdout)
    assert shown["train"]["epochs"] == 2 and shown["train"]["batch_size"] == 64
    assert shown["data"]["path"] == str((tmp_path / "images").resolve())


# ------------------------------------------------------------------------- bundled example


@pytest.fixture(scope="module")
def bundled_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("bundled")
    result = run_tfpilot(["run"], cwd=cwd, timeout=600)
    assert result.returncode == 0, result
    run = cwd / "runs" / "digits"
    assert run.is_dir(), result
    return run


def test_bundled_run_directory_contract(bundled_run: Path) -> None:
    import yaml

    config = yaml.safe_load((bundled_run / "config.yaml").read_text())
    assert config["name"] == "digits" and config["train"]["epochs"] == 40 and config["data"]["kind"] == "image_folder"
    for split in ("train", "validation"):
        assert list((bundled_run / "logs" / split).glob("events.out.tfevents.*")), split
    scalars, histograms = scalar_and_histogram_tags(bundled_run / "logs" / "train")
    assert {"loss", "accuracy", "learning_rate", "grad_norm"} <= scalars
    assert any(tag.startswith("weights/") for tag in histograms)
    assert any(tag.startswith("gradients/") for tag in histograms)
    validation_scalars, _ = scalar_and_histogram_tags(bundled_run / "logs" / "validation")
    assert {"loss", "accuracy"} <= validation_scalars
    assert (bundled_run / "checkpoints" / "checkpoint").is_file()
    assert list((bundled_run / "checkpoints").glob("ckpt-*.index"))
    assert (bundled_run / "model" / "1" / "saved_model.pb").is_file()
    assert not [p for p in (bundled_run / "model").iterdir() if p.name.startswith(".")]  # no partial export left
    metrics = json.loads((bundled_run / "metrics.json").read_text())
    assert {"train", "validation", "test"} <= set(metrics)
    assert metrics["test"]["accuracy"] >= 0.95, metrics["test"]
    assert metrics["train"]["examples"] + metrics["validation"]["examples"] + metrics["test"]["examples"] == 1797
    assert json.loads((bundled_run / "findings.json").read_text()) is not None
    assert json.loads((bundled_run / "preprocessing.json").read_text())["kind"] == "image"


def test_serving_default_signature(bundled_run: Path) -> None:
    import tensorflow as tf

    loaded = tf.saved_model.load(str(bundled_run / "model" / "1"))
    signature = loaded.signatures["serving_default"]
    (_, inputs) = signature.structured_input_signature
    assert {name: (spec.dtype, spec.shape.as_list()) for name, spec in inputs.items()} == {
        "image": (tf.uint8, [None, 8, 8, 1])
    }
    assert set(signature.structured_outputs) == {"probabilities", "class_id", "class_name"}


def test_saved_model_cli_predicts_like_the_in_process_model(bundled_run: Path, tmp_path: Path) -> None:
    """The C++ session loader (what TF Serving uses) on raw uint8 images == tfpilot's own evaluation."""
    from tfpilot.workflow import evaluate_run, load_trained

    trained = load_trained(bundled_run)
    rows = list(trained.pipeline.raw("test"))
    images = np.stack([features["image"].numpy() for features, _ in rows])
    assert images.dtype == np.uint8 and images.shape == (270, 8, 8, 1)
    features, labels = trained.pipeline.arrays("test")
    expected = np.argmax(trained.model.predict(features, verbose=0), axis=-1)
    # A literal of all 270 images would approach Linux's 128 KiB limit for one argument.
    count = 128
    out = tmp_path / "out"
    completed = subprocess.run(
        [
            str(SAVED_MODEL_CLI),
            "run",
            "--dir",
            str(bundled_run / "model" / "1"),
            "--tag_set",
            "serve",
            "--signature_def",
            "serving_default",
            "--input_exprs",
            f"image={images[:count].tolist()!r}",
            "--outdir",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    class_id = np.load(out / "class_id.npy")
    probabilities = np.load(out / "probabilities.npy")
    np.testing.assert_array_equal(class_id, expected[:count])
    np.testing.assert_allclose(probabilities.sum(axis=-1), 1.0, atol=1e-5)
    class_names = np.load(out / "class_name.npy", allow_pickle=True)
    assert [name.decode() for name in class_names] == [trained.pipeline.class_names[i] for i in expected[:count]]
    # And the in-process evaluation agrees with metrics.json written by the run.
    metrics = json.loads((bundled_run / "metrics.json").read_text())["test"]
    evaluated = evaluate_run(trained, split="test")
    assert evaluated["accuracy"] == pytest.approx(float(np.mean(expected == labels)))
    assert evaluated["accuracy"] == pytest.approx(metrics["accuracy"], abs=1e-6)
    assert evaluated["loss"] == pytest.approx(metrics["loss"], rel=1e-4)


def test_evaluate_and_export_in_fresh_processes(bundled_run: Path) -> None:
    metrics = json.loads((bundled_run / "metrics.json").read_text())["test"]
    result = run_tfpilot(["evaluate", bundled_run], cwd=bundled_run.parent.parent)
    assert result.returncode == 0, result
    assert f"{metrics['accuracy']:.4g}" in result.stdout and "270" in result.stdout, result

    result = run_tfpilot(["evaluate", bundled_run, "--split", "bogus"], cwd=bundled_run.parent.parent)
    assert result.returncode == 2 and "--split" in one_error_line(result.stderr)

    result = run_tfpilot(["export", bundled_run], cwd=bundled_run.parent.parent)
    assert result.returncode == 0, result
    assert "SavedModel version 2" in result.stdout and "verified" in result.stdout, result
    assert sorted(p.name for p in (bundled_run / "model").iterdir()) == ["1", "2"]

    from tfpilot.export import run_with_session_loader

    images = np.random.default_rng(0).integers(0, 256, size=(7, 8, 8, 1), dtype=np.uint8)
    first = run_with_session_loader(bundled_run / "model" / "1", {"image": images})
    second = run_with_session_loader(bundled_run / "model" / "2", {"image": images})
    np.testing.assert_allclose(first["probabilities"], second["probabilities"], atol=1e-6)


# ------------------------------------------------------------------------------ resume


def resume_config(tmp_path: Path, digits_folder: Path, name: str) -> Path:
    config = tmp_path / f"{name}.yaml"
    config.write_text(
        f"name: {name}\nruns_dir: {tmp_path / 'runs'}\n"
        f"data: {{kind: image_folder, path: {digits_folder}, shuffle_buffer: 2000}}\n"
        "model: {name: mlp, hidden_units: [64], dropout: 0.0}\n"
        "train: {epochs: 6, batch_size: 64, early_stopping: null, checkpoint_every_steps: 7, max_checkpoints: 50,\n"
        "        optimizer: {learning_rate: 0.003}}\n"
    )
    return config


def start_train(config: Path, cwd: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tfpilot.cli.main", "train", str(config), *extra],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "COLUMNS": "200"},
    )


def test_sigkill_then_resume_matches_uninterrupted(tmp_path: Path, digits_folder: Path) -> None:
    baseline = start_train(resume_config(tmp_path, digits_folder, "whole"), tmp_path)  # runs alongside
    config = resume_config(tmp_path, digits_folder, "killed")
    checkpoints = tmp_path / "runs" / "killed" / "checkpoints"
    process = start_train(config, tmp_path)
    deadline = time.monotonic() + 240
    # The manager writes the `checkpoint` index last: from then on a resume has something to load.
    while not (checkpoints / "checkpoint").exists():
        assert process.poll() is None, f"training ended before its first checkpoint: {process.communicate()}"
        assert time.monotonic() < deadline, "no checkpoint within 240 s"
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert not (tmp_path / "runs" / "killed" / "metrics.json").exists()  # it really died mid-run

    resumed = run_tfpilot(["train", config, "--resume"], cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed
    assert "resuming at epoch" in resumed.stdout, resumed
    stdout, stderr = baseline.communicate(timeout=300)
    assert baseline.returncode == 0, stderr[-3000:]

    killed = json.loads((tmp_path / "runs" / "killed" / "metrics.json").read_text())["test"]
    whole = json.loads((tmp_path / "runs" / "whole" / "metrics.json").read_text())["test"]
    assert whole["accuracy"] >= 0.9
    assert killed["accuracy"] == pytest.approx(whole["accuracy"], abs=0.02)
    assert killed["loss"] == pytest.approx(whole["loss"], abs=0.05)
    history = json.loads((tmp_path / "runs" / "killed" / "history.json").read_text())["epochs"]
    assert [row["epoch"] for row in history] == list(range(6))  # no epoch lost or repeated


def test_resume_without_checkpoints_exits_2(tmp_path: Path, digits_folder: Path) -> None:
    config = resume_config(tmp_path, digits_folder, "fresh")
    result = run_tfpilot(["train", config, "--resume"], cwd=tmp_path)
    assert result.returncode == 2, result
    message = one_error_line(result.stderr)
    assert "--resume" in message and "no checkpoint" in message
