"""`doctor_script` on deliberately bad and good user scripts: right finding, right numbers, no false positives."""

from pathlib import Path

import pytest

from tfpilot.diagnose import doctor_script
from tfpilot.findings import read_findings

FIXTURES = Path(__file__).parents[1] / "fixtures" / "doctor"
PERFORMANCE_CODES = {"DOC-INPUT-BOUND", "DOC-HOST-PYTHON-OP", "DOC-RETRACING", "DOC-EAGER-STEP", "DOC-HOST-SYNC", "DOC-STEP-GAP", "DOC-TINY-OPS"}


def run(name, tmp_path, *, profile_start=3):
    result = doctor_script(FIXTURES / f"{name}.py", output_dir=tmp_path / name, profile_start=profile_start, profile_steps=4, timeout=120)
    assert result.returncode == 0, result.stderr_tail
    assert [f.code for f in read_findings(tmp_path / name / "findings.json")] == [f.code for f in result.findings]
    return result, {f.code: f for f in result.findings}


@pytest.mark.slow
def test_slow_py_function(tmp_path):
    # Profile after the 2-batch prefetch buffer has drained, so the window sees the steady state.
    result, found = run("bad_slow_py_function", tmp_path, profile_start=6)
    assert found["DOC-INPUT-BOUND"].evidence["input_percent"] >= 80  # 4 x 20 ms of sleep per ~1 ms step
    assert 19 <= found["DOC-HOST-PYTHON-OP"].evidence["ms_per_call"] < 30
    assert found["DOC-HOST-PYTHON-OP"].evidence["op_types"] == ["EagerPyFunc"]
    assert "py_function" in found["DOC-INPUT-BOUND"].fix
    assert (result.output_dir / "profile" / "trace.json.gz").exists()


@pytest.mark.slow
def test_sequential_map(tmp_path):
    _, found = run("bad_sequential_map", tmp_path)
    finding = found["DOC-INPUT-BOUND"]
    assert finding.evidence["input_percent"] >= 20
    assert finding.evidence["dominant_stage"] in ("Map", "MapAndBatch")
    assert finding.evidence["prefetch"] is False
    assert "num_parallel_calls" in finding.fix


@pytest.mark.slow
def test_retrace_float(tmp_path):
    _, found = run("bad_retrace_float", tmp_path)
    evidence = found["DOC-RETRACING"].evidence
    assert evidence["tracing_count"] == 8 and evidence["calls"] == 8
    assert evidence["changed"][0]["argument"] == "learning_rate"
    assert evidence["changed"][0]["kind"] == "python scalar"


@pytest.mark.slow
def test_numpy_every_step(tmp_path):
    _, found = run("bad_numpy_every_step", tmp_path)
    evidence = found["DOC-HOST-SYNC"].evidence
    assert evidence["syncs_per_step"] == pytest.approx(1.0)
    assert list(evidence["locations"])[0].endswith("bad_numpy_every_step.py:19")


@pytest.mark.slow
def test_eager_step(tmp_path):
    _, found = run("bad_eager_step", tmp_path)
    assert found["DOC-EAGER-STEP"].evidence["eager_gradient_calls"] == 12
    assert found["DOC-EAGER-STEP"].evidence["compiled_calls"] == 0


@pytest.mark.slow
def test_nan_loss_is_replayed(tmp_path):
    _, found = run("bad_nan_loss", tmp_path)
    evidence = found["DOC-NONFINITE"].evidence
    assert evidence["replayed"] and evidence["reproduced"]
    assert evidence["seen_at"].endswith("bad_nan_loss.py:20")


@pytest.mark.slow
def test_good_script_has_no_performance_findings(tmp_path):
    # Profile after the first pass has filled the cache (16 batches), as one would on a real run.
    _, found = run("good_compiled_loop", tmp_path, profile_start=20)
    assert not PERFORMANCE_CODES & set(found), found
