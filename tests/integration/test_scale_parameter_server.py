"""`tfpilot launch --workers 2 --ps 1`: asynchronous ParameterServerStrategy training through the
ClusterCoordinator loop (1 ps + 2 worker servers + the chief), on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import write_blobs_csv

pytestmark = pytest.mark.slow


def write_run(tmp_path: Path, *, epochs: int) -> Path:
    write_blobs_csv(tmp_path / "data.csv")
    config = tmp_path / "run.yaml"
    config.write_text(
        "name: ps\n"
        "data: {kind: csv, path: data.csv, shuffle_buffer: 64}\n"
        "model: {name: mlp, hidden_units: [8]}\n"
        # The default train config (early stopping, histograms every epoch), only sizes lowered and a
        # larger learning rate so 2 epochs visibly learn; 168 training rows are not a multiple of 16.
        f"train: {{epochs: {epochs}, batch_size: 16, strategy: parameter_server, optimizer: {{learning_rate: 0.02}}}}\n"
        "export: {enabled: false}\n"
    )
    return config


def test_parameter_server_cluster_trains_and_writes_metrics(tmp_path: Path) -> None:
    config = write_run(tmp_path, epochs=2)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    command = [
        sys.executable,
        "-m",
        "tfpilot.cli.main",
        "launch",
        "--workers",
        "2",
        "--ps",
        "1",
        "--timeout",
        "120",
        "--",
        "tfpilot",
        "train",
        config.name,
    ]
    started = time.monotonic()
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # Every task of the cluster came up: the servers announce themselves, the chief trains.
    for label in ("[ps 0]", "[worker 0]", "[worker 1]", "[chief] epoch 2/2"):
        assert label in done.stdout, label
    run = tmp_path / "runs" / "ps"
    history = json.loads((run / "history.json").read_text())["epochs"]
    assert [h["epoch"] for h in history] == [0, 1]
    # 168 training examples / batch 16 = 11 scheduled steps per epoch, all applied.
    assert [h["step"] for h in history] == [11, 22]
    assert history[1]["loss"] < history[0]["loss"]
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["test"]["examples"] == 36 and metrics["train"]["loss"] < 1.0
    assert (run / "checkpoints" / "final").is_dir()
    assert time.monotonic() - started < 120


def test_parameter_server_strategy_outside_a_cluster_is_a_clear_error(tmp_path: Path) -> None:
    config = write_run(tmp_path, epochs=1)
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    done = subprocess.run(
        [sys.executable, "-m", "tfpilot.cli.main", "train", config.name],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "tfpilot launch --workers N --ps M" in done.stdout + done.stderr


def test_parameter_server_runs_the_same_loop_as_every_strategy(tmp_path: Path) -> None:
    """The coordinator runner under the Trainer's one loop: a regression task (the shared head and
    loss), step logs every summary_every_steps, gradient histograms and mid-epoch checkpoints,
    which the parameter-server loop of its own did not have."""
    import numpy as np

    rng = np.random.default_rng(3)
    features = rng.normal(0, 1, (240, 3))
    target = features @ np.array([2.0, -1.0, 0.5]) + 10.0 + rng.normal(0, 0.1, 240)
    lines = ["x1,x2,x3,y"] + [",".join(f"{v:.5f}" for v in (*row, t)) for row, t in zip(features, target, strict=True)]
    (tmp_path / "data.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "run.yaml").write_text(
        "name: psreg\n"
        "data: {kind: csv, path: data.csv, shuffle_buffer: 64, csv: {label_column: y}}\n"
        "model: {name: mlp, hidden_units: [16]}\n"
        "train: {epochs: 3, batch_size: 16, strategy: parameter_server, summary_every_steps: 4,\n"
        "        checkpoint_every_steps: 5, early_stopping: null, optimizer: {learning_rate: 0.02}}\n"
        "export: {enabled: false}\n"
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    command = [sys.executable, "-m", "tfpilot.cli.main", "launch", "--workers", "2", "--ps", "1"]
    command += ["--timeout", "120", "--", "tfpilot", "train", "run.yaml"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = tmp_path / "runs" / "psreg"
    history = json.loads((run / "history.json").read_text())["epochs"]
    # 168 training rows / batch 16 = 11 asynchronous steps per epoch; regression metrics by name.
    assert [h["step"] for h in history] == [11, 22, 33]
    assert {"loss", "mae", "rmse", "val_mae", "grad_norm"} <= set(history[0])
    assert history[-1]["val_mae"] < history[0]["val_mae"]
    # Step logs between joins: steps 4 and 8 of the first epoch (calls end at those boundaries).
    assert "[chief] epoch 1/3 step 4 loss" in done.stdout and "[chief] epoch 1/3 step 8 loss" in done.stdout
    events = b"".join(path.read_bytes() for path in (run / "logs" / "train").glob("events.*"))
    assert b"gradients/" in events and b"weights/" in events  # histograms, computed in the chief
    metrics = json.loads((run / "metrics.json").read_text())
    assert "rmse" in metrics["test"] and metrics["test"]["examples"] == 36
