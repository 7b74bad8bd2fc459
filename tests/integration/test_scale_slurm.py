"""`train.strategy: auto` under Slurm: two local processes with the environment `srun -n 2` sets
(and no TF_CONFIG) form one MultiWorkerMirrored cluster through SlurmClusterResolver."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import checkpoint_weights, write_blobs_csv

pytestmark = pytest.mark.slow


def consecutive_free_ports(count: int) -> int:
    """A base port whose next `count` ports are all free now (SlurmClusterResolver gives task i base + i)."""
    for base in range(20000, 60000, 97):
        sockets: list[socket.socket] = []
        try:
            for port in range(base, base + count):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sockets.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise AssertionError("no run of free ports found")


def slurm_env(rank: int, *, tasks: int, port_base: int, worker_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG" and not k.startswith("SLURM_")}
    env.update(
        TF_CPP_MIN_LOG_LEVEL="2",
        SLURM_PROCID=str(rank),
        SLURM_STEP_NUM_TASKS=str(tasks),
        SLURM_STEP_NODELIST="localhost",
        SLURM_STEP_TASKS_PER_NODE=str(tasks),
        TFPILOT_SLURM_PORT_BASE=str(port_base),
        TFPILOT_WORKER_DIR=str(worker_dir),
        CUDA_VISIBLE_DEVICES="",
    )
    return env


def test_two_slurm_tasks_train_as_one_multi_worker_cluster(tmp_path: Path) -> None:
    write_blobs_csv(tmp_path / "data.csv")
    (tmp_path / "run.yaml").write_text(
        "name: slurm\n"
        "data: {kind: csv, path: data.csv, shuffle_buffer: 64}\n"
        "model: {name: mlp, hidden_units: [8], dropout: 0.0}\n"
        "train: {epochs: 2, batch_size: 16, strategy: auto}\n"
        "export: {enabled: false}\n"
    )
    base = consecutive_free_ports(2)
    command = [sys.executable, "-m", "tfpilot.cli.main", "train", "run.yaml"]
    workers = [
        subprocess.Popen(
            command,
            cwd=tmp_path,
            env=slurm_env(rank, tasks=2, port_base=base, worker_dir=tmp_path / f"worker-{rank}"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(2)
    ]
    outputs = [w.communicate(timeout=400)[0] for w in workers]
    for rank, (worker, output) in enumerate(zip(workers, outputs, strict=True)):
        assert worker.returncode == 0, f"task {rank}:\n{output[-3000:]}"

    # Rank 0 is the chief: it wrote the run directory; rank 1 wrote only to its own directory.
    chief = json.loads((tmp_path / "runs/slurm/metrics.json").read_text())
    assert chief, "the chief wrote no metrics"
    assert not (tmp_path / "worker-0").exists()
    assert (tmp_path / "worker-1").exists()
    # One cluster, not two single-process runs (each would be its own chief and write runs/slurm):
    # the strategy synchronised the 2 workers, so both ended with the same weights.
    ours, theirs = (
        checkpoint_weights(tmp_path / "runs/slurm/checkpoints"),
        checkpoint_weights(tmp_path / "worker-1/checkpoints"),
    )
    assert ours and ours.keys() == theirs.keys()
    for name in ours:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-5, atol=1e-6, err_msg=name)
