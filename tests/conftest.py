"""Shared, area-neutral fixtures. Area-specific fixtures live next to the area's tests."""

from __future__ import annotations

import os

# Set before anything imports TensorFlow so its C++ logging stays quiet in every test process.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The step tuner's choices are kept across runs (train/step_cache.py); a test tunes afresh unless it
# points TFPILOT_STEP_CACHE at a directory of its own (test_step_cache.py does), subprocesses included.
os.environ.setdefault("TFPILOT_STEP_CACHE", "off")

import dataclasses
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def digits_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled 8x8 digits as PNG class folders (0..9), written once per test session.

    Read-only for tests: copy it if a test needs to change files.
    """
    from tfpilot.data.digits import prepare_digits

    return prepare_digits(tmp_path_factory.mktemp("digits") / "digits")


@dataclasses.dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str
    args: list[str]

    def __str__(self) -> str:  # shown by pytest when an assertion on the result fails
        return f"tfpilot {' '.join(self.args)} -> {self.returncode}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"


def run_tfpilot(
    args: Sequence[str | os.PathLike],
    *,
    cwd: str | os.PathLike,
    timeout: float = 300,
    env: dict[str, str] | None = None,
) -> CliResult:
    """Run `python -m tfpilot.cli.main ARGS` in a fresh process (the same code path as `tfpilot`)."""
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "COLUMNS": "200", **(env or {})}
    command = [sys.executable, "-m", "tfpilot.cli.main", *map(str, args)]
    completed = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout)
    return CliResult(completed.returncode, completed.stdout, completed.stderr, [str(a) for a in args])


@pytest.fixture
def tfpilot_cli() -> Callable[..., CliResult]:
    """`tfpilot_cli(["config", "schema"], cwd=tmp_path)` -> CliResult(returncode, stdout, stderr)."""
    return run_tfpilot


def write_blobs_csv(path: Path, *, rows: int = 240) -> Path:
    """Three separable Gaussian blobs in 4 numeric columns: tiny data for cluster tests."""
    import numpy as np

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, rows)
    centers = rng.normal(0, 2, (3, 4))
    features = centers[labels] + rng.normal(0, 1, (rows, 4))
    lines = ["a,b,c,d,label"] + [
        ",".join(f"{v:.4f}" for v in row) + f",{label}" for row, label in zip(features, labels, strict=False)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def wait_until_serving(process: subprocess.Popen) -> str:
    """Read a `tfpilot serve` process's stdout until its `serving` line; return what it printed.

    The server prints the ports it bound (`REST  http://127.0.0.1:N/...`, `gRPC  127.0.0.1:N`)
    before that line, so tests bind port 0 and read the real port here instead of racing for one.
    """
    lines: list[str] = []
    while not any(line.startswith("serving") for line in lines):
        line = process.stdout.readline() if process.stdout else ""
        assert line, f"server exited: {process.stderr.read() if process.stderr else ''}"
        lines.append(line.strip())
    return "\n".join(lines)


SERVE_ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}


def start_serve(args: Sequence[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    """`tfpilot serve ARGS...` as a child with piped text output (read it with wait_until_serving)."""
    return subprocess.Popen(
        [sys.executable, "-m", "tfpilot.cli.main", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or SERVE_ENV,
    )


def rest_url(output: str, *, scheme: str = "http") -> str:
    """The REST base URL a server printed before its `serving` line."""
    import re

    match = re.search(rf"REST  ({scheme}://127\.0\.0\.1:\d+)", output)
    assert match, output
    return match[1]


def checkpoint_weights(directory: Path) -> dict[str, Any]:
    """The model weights in the latest checkpoint of `directory`, by checkpoint key."""
    import tensorflow as tf

    path = tf.train.latest_checkpoint(str(directory))
    assert path is not None, f"no checkpoint in {directory}"
    reader = tf.train.load_checkpoint(path)
    # The model's weights are stored under the first path that reaches them (optimizer or model).
    names = [n for n, _ in tf.train.list_variables(path) if n.startswith("model/") or "_trainable_variables/" in n]
    return {name: reader.get_tensor(name) for name in names}


def half_plus_two_server_options(root: Path, *, name: str = "half", **overrides: Any):
    """ServerOptions serving TF Serving's half_plus_two (version 1, written under `root/name`) on
    free ports with the file-system poll off; `overrides` replace any of those options."""
    from tfpilot.serve import ServedModel, ServerOptions, demo_models

    demo_models.write_half_plus_two(root / name, 1)
    settings: dict[str, Any] = {"rest_port": 0, "grpc_port": 0, "file_system_poll_wait_seconds": 0, **overrides}
    return ServerOptions(models=[ServedModel(name=name, base_path=root / name)], **settings)
