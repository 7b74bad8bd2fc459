"""MirroredStrategy on 2 logical CPU devices == single-device training on the same global batch,
with the default train config on data that is not a multiple of the global batch."""

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
        timeout=400,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    data = np.load(out)
    for steps_per_execution in (1, 3):
        single, mirrored = f"default_{steps_per_execution}", f"mirrored_{steps_per_execution}"
        assert int(data[f"{single}_replicas"]) == 1 and int(data[f"{mirrored}_replicas"]) == 2
        # 140 training examples, batch 24: 6 steps per epoch (the short last batch is trained on), 2 epochs.
        assert int(data[f"{single}_global_step"]) == int(data[f"{mirrored}_global_step"]) == 12
        names = sorted(k for k in data.files if k.startswith(f"{single}_weight_"))
        assert names
        for name in names:
            one, two = data[name], data[name.replace(single, mirrored)]
            # Weights moved away from their init (the comparison is not trivially true) ...
            assert np.max(np.abs(one)) > 0
            # ... and both runs agree to float32 rounding of a 2-way gradient sum.
            np.testing.assert_allclose(two, one, atol=1e-5, rtol=0, err_msg=name)
        # Same epoch metrics (loss, accuracy, val_loss, val_accuracy, grad_norm) within 1e-5.
        np.testing.assert_allclose(data[f"{mirrored}_history"], data[f"{single}_history"], atol=1e-5, rtol=0)
