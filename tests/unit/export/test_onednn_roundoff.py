"""oneDNN's round-off note: TensorFlow's own start-up line is the premise, the parity rows decide the note."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tfpilot.export.roundoff import ROUNDOFF_CODE, onednn_roundoff_finding

_PROBE = (
    "import tensorflow as tf\n"
    "from tfpilot._tf_private import onednn_enabled\n"
    "tf.reduce_sum(tf.ones([3])).numpy()\n"
    "print('ENABLED', onednn_enabled())\n"
)


def _probe(value: str | None) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "0"  # TensorFlow's own line is what the fence must agree with
    if value is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = value
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


@pytest.mark.parametrize("value", [None, "0"])
def test_the_fence_agrees_with_tensorflows_own_start_up_line(value):
    stdout, stderr = _probe(value)
    said_on = "oneDNN custom operations are on" in stderr
    assert f"ENABLED {said_on}" in stdout, (stdout, stderr[-500:])
    if value == "0":
        assert not said_on  # the documented switch turns them off, and the fence says so


ROWS = [
    {"format": "saved_model", "path": "m/1", "max_abs_diff": 0.0},
    {"format": "tflite", "path": "exports/model.tflite", "max_abs_diff": 3e-7},
    {"format": "tflite-int8", "path": "exports/model_int8.tflite", "max_abs_diff": 0.02},
]


def test_a_float_export_that_differs_gets_an_info_note_only_while_onednn_is_on():
    note = onednn_roundoff_finding(ROWS, onednn=True)
    assert note is not None and note.code == ROUNDOFF_CODE and note.severity.value == "info"
    # Quantized variants differ by design: only the float32 one is named.
    assert note.evidence["max_abs_diff"] == {"tflite": 3e-7}
    assert "TF_ENABLE_ONEDNN_OPTS=0" in note.fix
    assert onednn_roundoff_finding(ROWS, onednn=False) is None
    assert onednn_roundoff_finding(ROWS, onednn=None) is None
    identical = [dict(row, max_abs_diff=0.0) if row["format"] == "tflite" else row for row in ROWS]
    assert onednn_roundoff_finding(identical, onednn=True) is None


def test_a_float_export_that_also_failed_parity_makes_the_note_a_warning():
    note = onednn_roundoff_finding(ROWS, onednn=True, failed_formats=["tflite"])
    assert note is not None and note.severity.value == "warning"
    assert note.evidence["failed_formats"] == ["tflite"] and "failed the parity thresholds" in note.message
    # A failed int8 file is no reason to warn about float round-off.
    assert onednn_roundoff_finding(ROWS, onednn=True, failed_formats=["tflite-int8"]).severity.value == "info"
