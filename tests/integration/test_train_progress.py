"""`tfpilot train` with stdout a pipe (CI, nohup, a container log) prints plain progress lines
while it runs, not only when it exits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import write_blobs_csv


def test_plain_epoch_lines_arrive_while_training_runs(tmp_path: Path) -> None:
    write_blobs_csv(tmp_path / "data.csv")
    (tmp_path / "run.yaml").write_text(
        "name: progress\n"
        "data: {kind: csv, path: data.csv}\n"
        "model: {name: mlp, hidden_units: [8]}\n"
        "train: {epochs: 500, batch_size: 16, early_stopping: null, histogram_every_epochs: 0, summary_every_steps: 10}\n"
        "export: {enabled: false}\n"
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("PYTHONUNBUFFERED", None)
    env.pop("TF_CONFIG", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "tfpilot.cli.main", "train", "run.yaml"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    lines = []
    try:
        for line in process.stdout:
            lines.append(line)
            if line.startswith("epoch 2/500 done"):
                break
        # The line was read while training was still going: stop it (preemption -> checkpoint, exit 42).
        process.send_signal(signal.SIGTERM)
        rest = process.stdout.read()
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert any(line.startswith("epoch 1/500 step 10 loss ") for line in lines), lines
    assert [line.split(" done")[0] for line in lines if " done " in line] == ["epoch 1/500", "epoch 2/500"]
    # 500 epochs cannot have finished: the SIGTERM found the run in progress.
    assert process.returncode == 42, rest[-2000:]
    assert "\x1b[" not in "".join(lines)  # no terminal control codes in a log
