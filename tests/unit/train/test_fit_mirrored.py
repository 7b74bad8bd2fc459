"""tfpilot.fit on a model built under MirroredStrategy trains as model.fit does (the step runs
under the model's strategy), and says that its NaN guard is off there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np


def test_a_mirrored_model_trains_as_under_model_fit_and_the_guard_is_named_off(tmp_path):
    out = tmp_path / "histories.json"
    script = Path(__file__).with_name("_fit_mirrored_check.py")
    completed = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(out.read_text())
    assert "FIT-GUARD-OFF" in result["codes"]
    for key, values in result["theirs"].items():
        np.testing.assert_allclose([row[key] for row in result["ours"]], values, rtol=1e-5, err_msg=key)
