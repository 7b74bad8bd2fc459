"""Honest outcomes of `tfpilot doctor SCRIPT.py` (issue 15 part 6), as real subprocesses with real TF.

A crashing script is an error finding at its last user frame, a non-zero exit whatever --fail-on says,
and the script's output saved beside the findings; a script that never trains is "no training step
observed", not a clean bill of health.
"""

from __future__ import annotations

import pytest

from conftest import run_tfpilot
from tfpilot.findings import read_findings

pytestmark = pytest.mark.slow

CRASH = """import tensorflow as tf

w = tf.Variable(tf.zeros([4, 1]))


@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
    w.assign_sub(0.01 * tape.gradient(loss, w))
    return loss


for step in range(8):
    train_step(tf.ones([8, 4]))
print("trained eight steps")
train_step(tf.ones([8, 5]))
"""

NO_STEP = """import tensorflow as tf

print("elements", sum(int(x) for x in tf.data.Dataset.range(10).map(lambda i: i * 2)))
"""


def test_crash_is_an_error_at_the_user_frame(tmp_path):
    script = tmp_path / "crashes.py"
    script.write_text(CRASH)
    output = tmp_path / "out"
    result = run_tfpilot(["doctor", script, "-o", output, "--fail-on", "never"], cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    findings = read_findings(output / "findings.json")
    crash = [f for f in findings if f.code == "DOC-SCRIPT-CRASH"]
    assert len(crash) == 1
    assert crash[0].severity.value == "error"
    # The deepest user frame is the matmul inside the traced step, where the shapes clash.
    assert crash[0].location.endswith("crashes.py:9")
    saved = (output / "script_output.txt").read_text()
    assert "trained eight steps" in saved
    assert "Traceback" in saved
    assert not any(f.code == "DOC-NO-STEP" for f in findings)


def test_no_training_step_is_reported(tmp_path):
    script = tmp_path / "no_step.py"
    script.write_text(NO_STEP)
    output = tmp_path / "out"
    result = run_tfpilot(["doctor", script, "-o", output, "--fail-on", "never"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    codes = [f.code for f in read_findings(output / "findings.json")]
    assert codes.count("DOC-NO-STEP") == 1
    assert "DOC-SCRIPT-CRASH" not in codes
    assert "elements 90" in (output / "script_output.txt").read_text()
