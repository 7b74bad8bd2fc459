"""ProfileHook inside tfpilot's own trainer (train_run in-process), with xprof's own step breakdown.

The compiled step loops over get_next_as_optional in a tf.while_loop; xprof groups such loops by
iteration and ignores the step markers unless the summary normalises them (xplane.py), so this
test fails if the breakdown silently falls back to wall-clock capture times.
"""

import json

import pytest

from tfpilot.config import config_from_dict
from tfpilot.diagnose import ProfileHook, analyze_run
from tfpilot.findings import read_findings
from tfpilot.rundir import RunDir

pytestmark = pytest.mark.slow


def test_profile_hook_in_train_run_gets_xprof_steps(tmp_path, digits_folder):
    from tfpilot.workflow import train_run

    config = config_from_dict({
        "name": "hooked", "runs_dir": str(tmp_path / "runs"),
        "data": {"kind": "image_folder", "path": str(digits_folder)},
        "model": {"name": "mlp", "hidden_units": [32], "dropout": 0.0},
        "train": {"epochs": 1, "batch_size": 64, "early_stopping": None, "histogram_every_epochs": 0, "steps_per_epoch": 10},
    })
    run = RunDir.at(config.run_path)
    hook = ProfileHook.from_spec(run.profile_dir, "3:8")
    train_run(config, hooks=[hook])

    summary = hook.summary
    assert summary is not None and summary.hardware_type == "CPU_ONLY"
    assert summary.capture["steps"] == [3, 4, 5, 6, 7]
    # xprof's rows (named after the markers), not the capture fallback.
    assert [row["step"] for row in summary.steps.per_step] == [f"train {n}" for n in range(3, 8)]
    assert all("source" not in row for row in summary.steps.per_step)
    for row in summary.steps.per_step:
        parts = row["input_ms"] + row["compute_ms"] + row["other_ms"]
        assert parts == pytest.approx(row["step_ms"], rel=0.02)
        assert row["compute_ms"] > 0
    # The marker encloses the whole compiled call, so xprof's step is the Python-measured call time.
    assert summary.steps.step_ms == pytest.approx(sum(summary.capture["step_times_ms"]) / 5, rel=0.1)
    assert any(op.type == "MatMul" or op.type == "_FusedMatMul" for op in summary.top_ops)
    saved = json.loads((run.profile_dir / "summary.json").read_text())
    assert saved["steps"]["steps"] == 5 and saved["schema_version"] == 1

    # train_run records the hook's findings once; re-analysing the run directory reproduces them.
    recorded = [f.code for f in read_findings(run.findings_path) if f.code.startswith("DOC-")]
    assert recorded == [f.code for f in hook.findings]
    assert [f.code for f in analyze_run(run.root)] == [f.code for f in hook.findings]
