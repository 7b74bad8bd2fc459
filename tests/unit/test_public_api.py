"""Snapshot of the public API, so additions and removals show up in review.

Only the stable Foundation packages are snapshotted (train/ and export/ grow while other areas
land). To accept an intended change, regenerate the snapshot and commit it:

    TFPILOT_UPDATE_API_SNAPSHOT=1 .venv/bin/pytest tests/unit/test_public_api.py
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import pytest

SNAPSHOT = Path(__file__).with_name("api_snapshot.json")
MODULES = ["tfpilot", "tfpilot.config", "tfpilot.data", "tfpilot.models"]
UPDATE_HINT = f"if the change is intended, run `TFPILOT_UPDATE_API_SNAPSHOT=1 .venv/bin/pytest {Path(__file__).name}` and commit {SNAPSHOT.name}"


def current_api() -> dict[str, list[str]]:
    return {name: sorted(importlib.import_module(name).__all__) for name in MODULES}


def test_public_api_matches_snapshot() -> None:
    api = current_api()
    if os.environ.get("TFPILOT_UPDATE_API_SNAPSHOT") == "1":
        SNAPSHOT.write_text(json.dumps(api, indent=2, sort_keys=True) + "\n")
    if not SNAPSHOT.exists():
        pytest.fail(f"{SNAPSHOT} is missing; {UPDATE_HINT}")
    expected = json.loads(SNAPSHOT.read_text())
    for module in MODULES:
        added = sorted(set(api[module]) - set(expected.get(module, [])))
        removed = sorted(set(expected.get(module, [])) - set(api[module]))
        assert not added and not removed, f"{module}: added {added}, removed {removed}; {UPDATE_HINT}"


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_name_resolves(module_name: str) -> None:
    module = importlib.import_module(module_name)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"{module_name}.__all__ lists names that do not exist: {missing}"


def test_import_tfpilot_does_not_import_tensorflow() -> None:
    import subprocess
    import sys

    code = "import sys, tfpilot, tfpilot.config, tfpilot.errors, tfpilot.findings; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
