"""Watch end to end: train, export, serve, detect drift on shifted traffic only, gate and push.

A baseline is served by a real `tfpilot serve` process; the test sends the test split as it is
and then inverted, and `tfpilot monitor drift` must flag only the inverted window. A worse
candidate fails `tfpilot validate` and `tfpilot push` refuses it; a better one is blessed,
pushed into the served base path and picked up by the running server.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from conftest import run_tfpilot

pytestmark = pytest.mark.slow
MODEL = "digits"


def _train(
    tmp_path: Path, digits_folder: Path, *, name: str, hidden: list[int], epochs: int, learning_rate: float
) -> Path:
    from tfpilot.config import config_from_dict
    from tfpilot.monitor import compute_reference_stats, write_reference_stats
    from tfpilot.rundir import RunDir
    from tfpilot.workflow import TrainedRun, export_run, train_run

    config = config_from_dict(
        {
            "name": name,
            "runs_dir": str(tmp_path / "runs"),
            "data": {"kind": "image_folder", "path": str(digits_folder), "shuffle_buffer": 2000},
            "model": {"name": "mlp", "hidden_units": hidden, "dropout": 0.0},
            "train": {
                "epochs": epochs,
                "batch_size": 64,
                "optimizer": {"learning_rate": learning_rate},
                "early_stopping": None,
                "histogram_every_epochs": 0,
                "seed": 1,
            },
            "export": {"formats": ["saved_model"], "warmup_requests": 0},
        }
    )
    trainer, _ = train_run(config)
    trained = TrainedRun(config=config, run=RunDir.at(config.run_path), pipeline=trainer.pipeline, model=trainer.model)
    export_run(trained)
    # The lead wires this into `tfpilot run`; here it is called the same way.
    write_reference_stats(compute_reference_stats(trainer.pipeline), trained.run.reference_stats_path)
    return trained.run.root


def _rest_url(process: subprocess.Popen) -> str:
    """The server binds port 0 and prints the port it got: no free-port race with other tests."""
    seen = []
    while True:
        line = process.stdout.readline() if process.stdout else ""
        assert line, "server exited before printing its REST address:\n" + "".join(seen)
        seen.append(line)
        match = re.search(r"REST  (http://127\.0\.0\.1:\d+)", line)
        if match:
            return match.group(1)


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _predict(url: str, images: np.ndarray) -> dict:
    body = json.dumps({"inputs": {"image": images.astype(int).tolist()}}).encode()
    request = urllib.request.Request(
        f"{url}/v1/models/{MODEL}:predict", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _wait_for_version(url: str, version: int, process: subprocess.Popen, *, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read() if process.stdout else "server exited"
        try:
            statuses = _get(f"{url}/v1/models/{MODEL}")["model_version_status"]
            if any(int(s["version"]) == version and s["state"] == "AVAILABLE" for s in statuses):
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"version {version} of `{MODEL}` did not become AVAILABLE within {timeout}s")


def _wait_for_logged(log: Path, count: int, *, timeout: float = 60.0) -> None:
    """The request log writes in a background thread: poll until `count` requests are on disk."""
    import sqlite3

    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        if log.exists():
            with sqlite3.connect(log) as connection:
                seen = connection.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
            if seen >= count:
                return
        time.sleep(0.1)
    raise AssertionError(f"{seen} of {count} requests reached the request log within {timeout}s")


def _wait_for_served_drift(url: str, value: float, *, timeout: float = 60.0) -> None:
    """The server recomputes drift on its own schedule: poll its gauge until it reads `value`."""
    deadline = time.monotonic() + timeout
    seen = _served_drift(url)
    while seen != value and time.monotonic() < deadline:
        time.sleep(0.2)
        seen = _served_drift(url)
    assert seen == value, f"tfpilot_drift_detected stayed {seen}, expected {value}"


def _served_drift(url: str) -> float:
    """The server's `tfpilot_drift_detected{feature="image"}` gauge from its Prometheus endpoint."""
    text = urllib.request.urlopen(f"{url}/monitoring/prometheus/metrics", timeout=30).read().decode()
    match = re.search(r'^tfpilot_drift_detected\{feature="image"\}\s+([0-9.eE+-]+)$', text, re.MULTILINE)
    assert match, text[-2000:]
    return float(match[1])


def _test_images(run: Path) -> np.ndarray:
    from tfpilot.config import load_config
    from tfpilot.data import Preprocessor, build_pipeline

    config = load_config(run / "config.yaml")
    pipeline = build_pipeline(config.data, batch_size=64, preprocessor=Preprocessor.load(run / "preprocessing.json"))
    return np.stack([features["image"].numpy() for features, _ in pipeline.raw("test")])


def test_train_serve_drift_validate_push(tmp_path, digits_folder):
    baseline = _train(tmp_path, digits_folder, name="baseline", hidden=[32], epochs=4, learning_rate=0.003)
    worse = _train(tmp_path, digits_folder, name="worse", hidden=[4], epochs=1, learning_rate=1e-4)
    better = _train(tmp_path, digits_folder, name="better", hidden=[64], epochs=12, learning_rate=0.003)

    served = tmp_path / "serving"
    shutil.copytree(baseline / "model" / "1", served / "1")  # the first deployment
    log = tmp_path / "requests.db"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tfpilot.cli.main",
            "serve",
            "--model_name",
            MODEL,
            "--model_base_path",
            str(served),
            "--rest_api_port",
            "auto",
            "--port",
            "-1",
            "--request_log",
            str(log),
            "--file_system_poll_wait_seconds",
            "0.5",
            "--reference_stats",
            str(baseline),
            "--drift_window",
            "200",
        ],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = _rest_url(server)
        _wait_for_version(url, 1, server)
        # Shuffled: the split is ordered by class folder, and a class-sorted slice is a real shift in the class mix.
        images = np.random.default_rng(0).permutation(_test_images(baseline))
        for start in range(0, 200, 20):
            assert len(_predict(url, images[start : start + 20])["outputs"]["class_id"]) == 20
        _wait_for_logged(log, 10)
        calm = run_tfpilot(
            ["monitor", "drift", "--reference", baseline, "--requests", log, "--window", "200"], cwd=tmp_path
        )
        assert calm.returncode == 0, calm
        assert json.loads((baseline / "drift.json").read_text())["drifted"] is False
        assert _served_drift(url) == 0.0  # the server's own sliding window agrees

        inverted = 255 - images
        for start in range(0, 200, 20):
            _predict(url, inverted[start : start + 20])
        _wait_for_logged(log, 20)
        shifted = run_tfpilot(
            ["monitor", "drift", "--reference", baseline, "--requests", log, "--window", "200"], cwd=tmp_path
        )
        assert shifted.returncode == 1, shifted
        report = json.loads((baseline / "drift.json").read_text())
        assert "image" in report["drifted_features"] and report["num_examples"] == 200
        assert "MON-DRIFT-FEATURE" in shifted.stdout
        _wait_for_served_drift(url, 1.0)

        gate = ["--baseline", served, "--threshold", "accuracy>=0.85", "--threshold", "accuracy change>=0"]
        rejected = run_tfpilot(["validate", "--candidate", worse, *gate], cwd=tmp_path)
        assert rejected.returncode == 1, rejected
        assert json.loads((worse / "blessing.json").read_text())["blessed"] is False
        refused = run_tfpilot(["push", worse, "--to", served], cwd=tmp_path)
        assert refused.returncode == 1 and "not blessed" in refused.stderr, refused
        assert sorted(p.name for p in served.iterdir()) == ["1"]

        blessed = run_tfpilot(["validate", "--candidate", better, *gate], cwd=tmp_path)
        assert blessed.returncode == 0, blessed
        record = json.loads((better / "blessing.json").read_text())
        assert (
            record["blessed"]
            and record["candidate"]["metrics"]["accuracy"] >= record["baseline"]["metrics"]["accuracy"]
        )
        pushed = run_tfpilot(["push", better, "--to", served], cwd=tmp_path)
        assert pushed.returncode == 0, pushed
        _wait_for_version(url, 2, server)
        answer = _predict(url, images[:50])
        accuracy_check = np.asarray(answer["outputs"]["class_id"])
        assert accuracy_check.shape == (50,)

        report_run = run_tfpilot(["report", baseline], cwd=tmp_path)
        assert report_run.returncode == 0, report_run
        assert '<section id="drift">' in (baseline / "report.html").read_text()
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
