"""MirroredStrategy on 2 logical CPU devices == single-device training on the same global batch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np


def test_mirrored_two_logical_cpus_matches_single_device(tmp_path: Path) -> None:
    out = tmp_path / "weights.npz"
    script = Path(__file__).with_name("_mirrored_check.py")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("TF_CONFIG", None)
    completed = subprocess.run(
        [sys.executable, str(script), str(out), str(tmp_path / "runs")],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    data = np.load(out)
    assert list(data["replicas"]) == [1, 2]
    names = sorted(k for k in data.files if k.startswith("single_"))
    assert names
    for name in names:
        single, mirrored = data[name], data[name.replace("single_", "mirrored_")]
        # Weights moved away from their init (the comparison is not trivially true) ...
        assert np.max(np.abs(single)) > 0
        # ... and both runs agree to float32 rounding of a 2-way gradient sum.
        np.testing.assert_allclose(mirrored, single, atol=1e-5, rtol=0)
