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

from conftest import write_blobs_csv

pytestmark = pytest.mark.slow


def write_run(tmp_path: Path, *, epochs: int) -> Path:
    write_blobs_csv(tmp_path / "data.csv")
    config = tmp_path / "run.yaml"
    config.write_text(
        "name: mw\n"
        "data: {kind: csv, path: data.csv, shuffle_buffer: 64}\n"
        "model: {name: mlp, hidden_units: [8], dropout: 0.1}\n"
        f"train: {{epochs: {epochs}, batch_size: 16, strategy: multi_worker, early_stopping: null,"
        " histogram_every_epochs: 0, steps_per_execution: 2}\n"
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


def checkpoint_weights(directory: Path) -> dict[str, np.ndarray]:
    import tensorflow as tf

    path = tf.train.latest_checkpoint(str(directory))
    assert path is not None, f"no checkpoint in {directory}"
    reader = tf.train.load_checkpoint(path)
    # The model's weights are stored under the first path that reaches them (optimizer or model).
    names = [n for n, _ in tf.train.list_variables(path) if n.startswith("model/") or "_trainable_variables/" in n]
    return {name: reader.get_tensor(name) for name in names}


def test_two_workers_end_with_identical_weights(tmp_path: Path) -> None:
    config = write_run(tmp_path, epochs=2)
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


def test_sigterm_checkpoints_and_resume_finishes(tmp_path: Path) -> None:
    epochs = 40
    config = write_run(tmp_path, epochs=epochs)
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
    write_run(tmp_path, epochs=epochs)
    resumed = subprocess.run(
        launch_command(config, "--resume"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    first_epoch = re.search(r"\[worker 0\] epoch (\d+)/", resumed.stdout)
    assert first_epoch and int(first_epoch[1]) > done_epochs, "the rerun started from scratch instead of resuming"
    history = json.loads((tmp_path / "runs" / "mw" / "history.json").read_text())["epochs"]
    assert [h["epoch"] for h in history] == list(range(epochs))
