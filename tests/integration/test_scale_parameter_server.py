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
