"""Streamed TFRecord shards under 2 local MultiWorkerMirrored workers: each worker reads its own
training shards (sharding by file), both step the same number of full global batches and end
with identical weights, and the run says how the epoch was defined."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import checkpoint_weights, write_blobs_csv

pytestmark = pytest.mark.slow


def test_two_workers_train_on_their_own_streamed_shards(tmp_path: Path) -> None:
    from tfpilot.config.schema import DataConfig
    from tfpilot.data import load_source
    from tfpilot.data.tfrecord import write_tfrecords

    write_blobs_csv(tmp_path / "data.csv")
    section = write_tfrecords(
        load_source(DataConfig(kind="csv", path=tmp_path / "data.csv")), tmp_path / "shards", num_shards=8
    )
    section["path"] = "shards"
    section["tfrecord"]["stream"] = True
    section["shuffle_buffer"] = 64
    config = {
        "name": "stream",
        "data": section,
        "model": {"name": "mlp", "hidden_units": [8], "dropout": 0.0},
        "train": {"epochs": 2, "batch_size": 16, "strategy": "multi_worker", "steps_per_execution": 2},
        "export": {"enabled": False},
    }
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config))
    command = [sys.executable, "-m", "tfpilot.cli.main", "launch", "--workers", "2", "--timeout", "240"]
    command += ["--worker-dir", "workers", "--", "tfpilot", "train", "run.yaml"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    chief = checkpoint_weights(tmp_path / "runs" / "stream" / "checkpoints")
    other = checkpoint_weights(tmp_path / "workers" / "worker-1" / "checkpoints")
    assert chief and set(chief) == set(other)
    for name in chief:
        np.testing.assert_array_equal(chief[name], other[name], err_msg=name)
    # 8 shards of 30 rows: 1 test shard, 1 validation shard, 6 training shards (180 rows, 3 per worker):
    # an epoch is 180 // 16 = 11 full global batches on every worker.
    history = json.loads((tmp_path / "runs" / "stream" / "history.json").read_text())["epochs"]
    assert [row["step"] for row in history] == [11, 22]
    findings = json.loads((tmp_path / "runs" / "stream" / "findings.json").read_text())
    codes = [f["code"] for f in (findings["findings"] if isinstance(findings, dict) else findings)]
    assert "TRAIN-SHARDED-BY-FILE" in codes
    metrics = json.loads((tmp_path / "runs" / "stream" / "metrics.json").read_text())
    assert metrics["test"]["examples"] == 30
