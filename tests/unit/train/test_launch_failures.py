"""`tfpilot launch` fails fast and names the worker and the last thing it was doing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tfpilot.errors import TrainError
from tfpilot.train.launch import launch_workers

# Each worker reports a step and then blocks forever (as a worker stuck in a collective does).
# In "die" mode worker 0 exits with an error once worker 1 has reported (worker 1 touches a
# marker file after printing), so the survivor's last line is known when the launcher reacts.
_WORKER = """
import json, os, sys, threading, pathlib
index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
mode, marker = sys.argv[1], pathlib.Path(sys.argv[2])
print(f"epoch 1/2 step {index + 3}", flush=True)
if index == 1:
    marker.touch()
if index == 0 and mode == "die":
    while not marker.exists():
        threading.Event().wait(0.01)
    sys.exit(3)
threading.Event().wait()
"""


def _command(mode: str, tmp_path: Path) -> list[str]:
    return [sys.executable, "-c", _WORKER, mode, str(tmp_path / "worker-1-reported")]


def test_a_dead_worker_stops_the_others_and_names_what_they_were_doing(tmp_path: Path) -> None:
    with pytest.raises(TrainError) as error:
        launch_workers(_command("die", tmp_path), num_workers=2, timeout=120, echo=lambda line: None, poll_seconds=0.05)
    message = str(error.value)
    assert "worker 0 exited with code 3" in message
    assert "epoch 1/2 step 3" in message  # worker 0's own last line
    assert "worker 1: `epoch 1/2 step 4`" in message  # where the survivor was waiting


def test_a_hung_run_names_every_running_worker_and_its_last_line(tmp_path: Path) -> None:
    with pytest.raises(TrainError) as error:
        launch_workers(_command("hang", tmp_path), num_workers=2, timeout=8, echo=lambda line: None, poll_seconds=0.05)
    message = str(error.value)
    assert "workers [0, 1] still running after --timeout 8s" in message
    assert "worker 0: `epoch 1/2 step 3`" in message and "worker 1: `epoch 1/2 step 4`" in message
