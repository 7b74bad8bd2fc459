"""The doctor on deliberately bad and good user scripts: right finding, right numbers, no false positives.

The bad scripts run in this process under ``tfpilot.diagnose.watch`` (the same Watcher, profile
window and rules ``doctor_script`` installs in its subprocess): every subprocess pays ~8 s of CPU
just importing TensorFlow, which on a 2-core CI host is most of a test. The subprocess path
(bootstrap, watch.json, profile conversion in the parent) is exercised by the good script here and
by ``tfpilot doctor SCRIPT.py -- ARGS`` in test_doctor_cli.py. Only the scripts whose finding
needs the profile are profiled.
"""

import runpy
import shutil
import sys
from pathlib import Path

import pytest
import tensorflow as tf

from tfpilot.diagnose import doctor_script, watch
from tfpilot.findings import read_findings

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parents[1] / "fixtures" / "doctor"
PERFORMANCE_CODES = {
    "DOC-INPUT-BOUND",
    "DOC-HOST-PYTHON-OP",
    "DOC-RETRACING",
    "DOC-EAGER-STEP",
    "DOC-HOST-SYNC",
    "DOC-STEP-GAP",
    "DOC-TINY-OPS",
}


def watch_script(name, tmp_path, *, profile_start=None, profile_steps=4, script=None):
    """Run fixture ``name`` (or ``script``) as ``__main__`` under watch(); returns (session, findings by code)."""
    script, output = script or FIXTURES / f"{name}.py", tmp_path / name
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script)]
    sys.path.insert(0, str(script.parent))
    sys.modules.pop("_common", None)  # fresh model weights for every script (bad_nan_loss leaves them NaN)
    try:
        with watch(
            output, profile=profile_start is not None, profile_start=profile_start or 1, profile_steps=profile_steps
        ) as session:
            runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        sys.modules.pop("_common", None)
    assert [f.code for f in read_findings(output / "findings.json")] == [f.code for f in session.findings]
    return session, {f.code: f for f in session.findings}


def test_slow_py_function(tmp_path):
    # No prefetch: every profiled step waits for its own 4 x 20 ms of py_function sleep.
    session, found = watch_script("bad_slow_py_function", tmp_path, profile_start=3)
    input_bound = found["DOC-INPUT-BOUND"]
    assert input_bound.severity.value == "error"
    assert input_bound.evidence["input_percent"] >= 80  # ~80 ms of input per ~1 ms step
    assert input_bound.evidence["input_ms_per_step"] >= 60
    assert input_bound.evidence["prefetch"] is False
    assert "py_function" in input_bound.fix
    python_op = found["DOC-HOST-PYTHON-OP"]
    assert 19 <= python_op.evidence["ms_per_call"] < 30
    assert python_op.evidence["calls_per_step"] == pytest.approx(4.0, abs=0.5)
    assert python_op.evidence["op_types"] == ["EagerPyFunc"]
    assert (session.output_dir / "profile" / "trace.json.gz").exists()


def test_sequential_map(tmp_path):
    _, found = watch_script("bad_sequential_map", tmp_path, profile_start=3)
    finding = found["DOC-INPUT-BOUND"]
    assert finding.evidence["input_percent"] >= 20
    assert finding.evidence["dominant_stage"] in ("Map", "MapAndBatch")
    assert finding.evidence["prefetch"] is False
    assert "num_parallel_calls" in finding.fix


def test_retrace_float(tmp_path):
    _, found = watch_script("bad_retrace_float", tmp_path)
    evidence = found["DOC-RETRACING"].evidence
    assert evidence["tracing_count"] == 8 and evidence["calls"] == 8
    assert evidence["changed"][0]["argument"] == "learning_rate"
    assert evidence["changed"][0]["kind"] == "python scalar"
    assert evidence["changed"][0]["values"][:2] == ["0.1", "0.09000000000000001"]


def test_numpy_every_step(tmp_path):
    _, found = watch_script("bad_numpy_every_step", tmp_path)
    evidence = found["DOC-HOST-SYNC"].evidence
    assert evidence["syncs_per_step"] == pytest.approx(1.0)
    assert list(evidence["locations"]) == [str(FIXTURES / "bad_numpy_every_step.py") + ":19"]


def _host_read_line(script: Path) -> str:
    line = next(i for i, text in enumerate(script.read_text().splitlines(), 1) if "# HOST-READ" in text)
    return f"{script}:{line}"


def test_a_script_named_after_keras_in_a_keras_folder_is_still_the_users_code(tmp_path):
    # Library frames are those under installed packages' directories, never a path containing "keras".
    plain = FIXTURES / "sync_plain.py"
    renamed = tmp_path / "keras-examples" / "sync_keras_demo.py"
    renamed.parent.mkdir()
    shutil.copy(plain, renamed)
    _, found_plain = watch_script("sync_plain", tmp_path)
    _, found_renamed = watch_script("sync_keras_demo", tmp_path, script=renamed)
    for found, script in ((found_plain, plain), (found_renamed, renamed)):
        sync = found["DOC-HOST-SYNC"]
        assert list(sync.evidence["locations"]) == [_host_read_line(script)]
        assert sync.evidence["syncs_per_step"] == pytest.approx(1.0)
    assert found_plain["DOC-HOST-SYNC"].severity == found_renamed["DOC-HOST-SYNC"].severity
    assert sorted(found_plain) == sorted(found_renamed)


def test_a_callback_reading_a_keras_variable_every_batch_is_located_at_the_callback(tmp_path):
    # optimizer.learning_rate.numpy() goes through Keras' Variable and TensorFlow before it reads a tensor.
    _, found = watch_script("lr_finder_callback", tmp_path)
    sync = found["DOC-HOST-SYNC"]
    assert list(sync.evidence["locations"]) == [_host_read_line(FIXTURES / "lr_finder_callback.py")]
    assert sync.evidence["syncs_per_step"] == pytest.approx(1.0, abs=0.1)


def test_eager_step(tmp_path):
    _, found = watch_script("bad_eager_step", tmp_path)
    assert found["DOC-EAGER-STEP"].evidence["eager_gradient_calls"] == 12
    assert found["DOC-EAGER-STEP"].evidence["compiled_calls"] == 0
    # The eager gradient's own .numpy() reads (inside TensorFlow) are not the user's host syncs.
    assert "DOC-HOST-SYNC" not in found


def test_nan_loss_is_replayed(tmp_path):
    _, found = watch_script("bad_nan_loss", tmp_path)
    evidence = found["DOC-NONFINITE"].evidence
    assert evidence["replayed"] and evidence["reproduced"]
    assert evidence["seen_at"].endswith("bad_nan_loss.py:20")


def test_good_script_has_no_performance_findings(tmp_path):
    # The real subprocess path. Profile after the first pass has filled the cache (8 batches), as one would on a real run.
    result = doctor_script(
        FIXTURES / "good_compiled_loop.py", output_dir=tmp_path / "good", profile_start=20, profile_steps=4, timeout=300
    )
    assert result.returncode == 0, result.stderr_tail
    assert [f.code for f in read_findings(tmp_path / "good" / "findings.json")] == [f.code for f in result.findings]
    assert not PERFORMANCE_CODES & {f.code for f in result.findings}, [(f.code, f.evidence) for f in result.findings]
    # It was really observed: 40 compiled steps, timed after the cache filled (8 batches, so from step 9),
    # the window profiled, the loss read once after the loop.
    assert result.report.compiled_calls == 40 and result.report.cache_filled_step == 8
    assert result.report.timing.measured_from_step == 9 and result.report.timing.steps == 30
    assert result.report.timing.syncs_per_step == 0
    # Two steps for the AUTOTUNE prefetch's buffer and one for the prefetch TF injects after take(40) are
    # profiled before the four measured ones (the guess); the profile then says how large the AUTOTUNE
    # buffers really were, which depends on the machine's load (3 or 4 here), and that decides.
    capture = result.summary.capture if result.summary is not None else {}
    assert capture["drain_steps"] == 3 and capture["measure_from_guess"] == 23
    read = capture["drain_steps_read"]
    start, stop = capture["start_step"], capture["stop_step"]
    assert read >= 1 and capture["measure_from"] == max(start, min(start + read, stop - 3))
    # AUTOTUNE buffers may have grown past the guess: the window profiles that slack too, so 4 stay measured.
    assert capture["drain_slack"] >= 2 and capture["steps"] == list(range(20, 27 + capture["drain_slack"]))


def test_the_default_window_measures_ten_steps_and_a_short_one_says_why(tmp_path):
    # The real subprocess path with the defaults: sync_plain runs 64 steps, enough for >= 10 measured ones.
    result = doctor_script(FIXTURES / "sync_plain.py", output_dir=tmp_path / "default", timeout=300)
    assert result.returncode == 0, result.stderr_tail
    capture = result.summary.capture if result.summary is not None else {}
    measured = [step for step in capture["steps"] if step >= capture["measure_from"]]
    # xprof's step breakdown leaves out the session's last marker: the window measures 11 for 10 rows,
    # unless the buffers held more than the guess and its slack when the window opened (a loaded host):
    # then exactly that excess goes unmeasured.
    excess = max(0, capture["drain_steps_read"] - capture["drain_steps"] - capture["drain_slack"])
    rows = result.summary.steps.steps
    assert len(measured) >= 11 - excess and rows >= 10 - excess, (capture, rows)
    codes = {f.code for f in result.findings}
    assert "DOC-PROFILE-WINDOW" not in codes and "DOC-HOST-SYNC" in codes

    # 10 steps, the window opening at step 2: the script ends inside it, and the report says so.
    @tf.function
    def step(x):
        return tf.reduce_sum(tf.matmul(x, x))

    with watch(tmp_path / "short", profile_start=2) as session:
        for _ in range(10):
            step(tf.ones([8, 8]))
    (window,) = [f for f in session.findings if f.code == "DOC-PROFILE-WINDOW"]
    assert window.severity.value == "info"
    assert window.evidence["measured_steps"] < 10
    assert "the script ended inside the window" in window.message
