"""`.pre-commit-hooks.yaml` works in a real pre-commit run on a scratch repository.

pre-commit's `try-repo` clones this checkout (uncommitted changes included) the way a project's
`.pre-commit-config.yaml` would, and runs the `tfpilot-lint-system` hook on the scratch repo's
files with the tfpilot of this environment. (The `tfpilot-lint` hook differs only in that
pre-commit pip-installs tfpilot, and TensorFlow with it, into an environment of its own first:
minutes of download that a test on a CI machine should not spend.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _pre_commit(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PRE_COMMIT_HOME"] = str(home)
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t")
    env["GIT_COMMITTER_EMAIL"] = "t@example.com"
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "tfpilot-lint-system", "--all-files"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )


def test_pre_commit_hook_reports_warnings_and_passes_clean_code(tmp_path):
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, "init", "-q")
    train = repo / "train.py"
    train.write_text(
        "import keras\n\n"
        "model = keras.Sequential([keras.layers.Dense(1)])\n"
        'model.save("exported_model")\n'
        # an info-only note (a generator source) is hidden by the hook's --min-severity warning
        "import tensorflow as tf\n"
        "rows = tf.data.Dataset.from_generator(lambda: iter([1.0]), output_types=tf.float32)\n"
    )
    # a notebook is a file the hook lints too (pre-commit's `jupyter` type)
    notebook = repo / "explore.ipynb"
    cell = {"cell_type": "code", "source": ["!pip install -q numpy\n", "import numpy as np\n", "best = np.Inf"]}
    notebook.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    _git(repo, "add", ".")
    failed = _pre_commit(repo, tmp_path / "cache")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "train.py:4:1: TFP403" in failed.stdout
    assert "explore.ipynb:3:8: TFP514" in failed.stdout and "[code cell 1, line 3]" in failed.stdout
    assert "TFP305" not in failed.stdout

    train.write_text(train.read_text().replace('"exported_model"', '"exported_model.keras"'))
    notebook.write_text(notebook.read_text().replace("np.Inf", "np.inf"))
    _git(repo, "add", ".")
    passed = _pre_commit(repo, tmp_path / "cache")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "tfpilot lint (installed tfpilot)" in passed.stdout and "Passed" in passed.stdout
