"""`tfpilot launch`: 2 local MultiWorkerMirrored workers end with identical weights; SIGTERM
makes them checkpoint and exit, and rerunning with --resume finishes the run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import checkpoint_weights, write_blobs_csv

pytestmark = pytest.mark.slow


def write_run(tmp_path: Path, *, epochs: int, steps_per_execution: int, strategy: str = "multi_worker") -> Path:
    """The default train config, only epochs and sizes lowered (histograms every epoch, early
    stopping on val_loss with restore_best). 240 rows split 168/36/36: 168 is not a multiple of
    the global batch of 16, so the last batch of every epoch is short (8 rows, 4 per worker)."""
    write_blobs_csv(tmp_path / "data.csv")
    config = tmp_path / "run.yaml"
    config.write_text(
        "name: mw\n"
        "data: {kind: csv, path: data.csv, shuffle_buffer: 64}\n"
        "model: {name: mlp, hidden_units: [8], dropout: 0.0}\n"
        f"train: {{epochs: {epochs}, batch_size: 16, strategy: {strategy}, steps_per_execution: {steps_per_execution}}}\n"
        "export: {enabled: false}\n"
    )
    return config


def launch_command(config: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tfpilot.cli.main",
        "launch",
        "--workers",
        "2",
        "--timeout",
        "240",
        "--worker-dir",
        "workers",
        "--",
        "tfpilot",
        "train",
        str(config.name),
        *extra,
    ]


def history_rows(path: Path) -> np.ndarray:
    rows = json.loads(path.read_text())["epochs"]
    return np.array([[row[k] for k in ("step", "loss", "accuracy", "val_loss", "val_accuracy")] for row in rows])


def test_two_workers_end_with_identical_weights_and_one_worker_metrics(tmp_path: Path) -> None:
    config = write_run(tmp_path, epochs=2, steps_per_execution=2)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(launch_command(config), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "[worker 0]" in done.stdout and "[worker 1]" in done.stdout
    chief = checkpoint_weights(tmp_path / "runs" / "mw" / "checkpoints")
    other = checkpoint_weights(tmp_path / "workers" / "worker-1" / "checkpoints")
    assert chief and set(chief) == set(other)
    for name in chief:
        np.testing.assert_array_equal(chief[name], other[name], err_msg=name)
    assert json.loads((tmp_path / "runs" / "mw" / "metrics.json").read_text())["test"]["examples"] == 36
    # Both workers logged the same epochs (all-reduced metrics): ceil(168 / 16) = 11 steps each.
    two_workers = history_rows(tmp_path / "runs" / "mw" / "history.json")
    np.testing.assert_array_equal(two_workers, history_rows(tmp_path / "workers" / "worker-1" / "history.json"))
    assert list(two_workers[:, 0]) == [11, 22]
    # One process on the same global batches: same metrics to float32 rounding of a 2-way sum
    # (stated tolerance 1e-4 absolute on losses and accuracies after 22 Adam steps).
    single_dir = tmp_path / "single"
    single_dir.mkdir()
    (single_dir / "data.csv").write_text((tmp_path / "data.csv").read_text())
    single = write_run(single_dir, epochs=2, steps_per_execution=2, strategy="default")
    one = subprocess.run(
        [sys.executable, "-m", "tfpilot.cli.main", "train", str(single.name)],
        cwd=single_dir,
        env={k: v for k, v in env.items() if k != "TF_CONFIG"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert one.returncode == 0, one.stdout[-3000:] + one.stderr[-3000:]
    np.testing.assert_allclose(two_workers, history_rows(single_dir / "runs" / "mw" / "history.json"), atol=1e-4)


def test_sigterm_checkpoints_and_resume_finishes(tmp_path: Path) -> None:
    epochs = 40
    config = write_run(tmp_path, epochs=epochs, steps_per_execution=1)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    log = (tmp_path / "launch.log").open("w")
    process = subprocess.Popen(
        launch_command(config), cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, text=True
    )
    # Progress output is buffered when not on a terminal, so watch the run directory instead:
    # the chief rewrites history.json at the end of every epoch.
    history_path = tmp_path / "runs" / "mw" / "history.json"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if history_path.exists() and len(json.loads(history_path.read_text())["epochs"]) >= 2:
            break
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=180)
    log.close()
    output = (tmp_path / "launch.log").read_text()
    assert process.returncode == 42, output[-3000:]
    assert "rerun" in output and "--resume" in output
    history = json.loads((tmp_path / "runs" / "mw" / "history.json").read_text())["epochs"]
    assert 2 <= len(history) < epochs

    # Finish two more epochs rather than all 40: the point is that the rerun resumes and ends
    # cleanly, and each multi-worker epoch costs seconds of collectives on 2 cores.
    done_epochs = len(history)
    epochs = done_epochs + 2
    write_run(tmp_path, epochs=epochs, steps_per_execution=1)
    resumed = subprocess.run(
        launch_command(config, "--resume"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    first_epoch = re.search(r"\[worker 0\] epoch (\d+)/", resumed.stdout)
    assert first_epoch and int(first_epoch[1]) > done_epochs, "the rerun started from scratch instead of resuming"
    history = json.loads((tmp_path / "runs" / "mw" / "history.json").read_text())["epochs"]
    assert [h["epoch"] for h in history] == list(range(epochs))
