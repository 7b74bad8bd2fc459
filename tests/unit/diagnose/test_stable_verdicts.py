"""Issue 31's stable-verdict classes, found on the outside corpus's tuning set, each with a VALID and an INVALID case.

- DOC-STEP-GAP from ratios and counts: host work between steps that the user's code does (reads, prints) is a
  finding from 10% of the step, the dispatch gap of a tiny-step loop (another compiled call, a few eager ops) is not,
  and the verdict is the same with a CPU-burning neighbour;
- DOC-HOST-SYNC counts what a read forces: its copy on a synchronous CPU step, the lost overlap on a GPU/TPU;
- host Python between steps (reads and the Python around them: print, formatting, appends) is one thread's work and
  is compared with the step on one core's terms, not with the CPU of every core the step's kernels used
  (tensorflow/tensorflow#35873: a print of loss and accuracy after every step);
- DOC-INPUT-BOUND is judged on the window's steady state, past buffers that warm-up filled.

The loops run real TensorFlow in this process under ``watch()`` or a ``ProfileWindow``.
"""

import contextlib
import dataclasses
import runpy
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tensorflow as tf
from test_severity_and_advice import _timing

from tfpilot.diagnose import ProfileWindow, analyze_profile, summarize_profile, watch
from tfpilot.diagnose.rules import host_sync, input_bound, step_gap
from tfpilot.diagnose.rules.base import MATERIAL_PERCENT, Observations, step_on_one_core_ms
from tfpilot.diagnose.watchers import StepTiming, WatchReport

FIXTURES = Path(__file__).parents[2] / "fixtures" / "doctor"


@contextlib.contextmanager
def _burner(on: bool):
    """A CPU-burning neighbour process (the corpus harness's `python -c "while True: pass"`) while the block runs."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if on else None
    try:
        yield
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def _run_fixture(name: str, output: Path, *args: str):
    script = FIXTURES / f"{name}.py"
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.parent))
    sys.modules.pop("_common", None)
    try:
        with watch(output, profile=False) as session:
            runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        sys.modules.pop("_common", None)
    return session


def _watched(
    timing: StepTiming, *, pipelines: list[dict] | None = None, calls: int = 160, syncs: int = 0
) -> Observations:
    """What a watch() run of `calls` compiled steps reports with this timing (and these pipelines)."""
    report = WatchReport(
        functions=[],
        timing=timing,
        eager_gradient_calls=0,
        compiled_calls=calls,
        sync_count=syncs,
        nonfinite=None,
        wall_seconds=1.0,
        profile_dir=None,
        pipelines=pipelines or [],
    )
    return Observations(watch=report)


# ------------------------------------------------------------------------------ DOC-STEP-GAP under load
@pytest.mark.parametrize("burner", [False, True], ids=["quiet", "with-burner"])
def test_a_status_line_read_and_printed_after_every_tiny_step_is_a_step_gap(tmp_path, burner):
    """INVALID (handson-ml3's print_status_bar): reads and formatting between tiny steps, 10% of the step or more."""
    with _burner(burner):
        session = _run_fixture("gap_status_bar", tmp_path / "status")
    found = {f.code: f for f in session.findings}
    timing = session.report.timing
    assert "DOC-STEP-GAP" in found, timing
    gap = found["DOC-STEP-GAP"]
    assert gap.severity.value == "warning"
    assert gap.evidence["syncs_per_step"] == pytest.approx(4.0) and gap.evidence["threshold_percent"] == 10.0
    assert gap.evidence["idle_percent"] >= 10.0 and "idle_cpu_percent" in gap.evidence
    assert "reads of a tensor into Python" in gap.message


@pytest.mark.parametrize("burner", [False, True], ids=["quiet", "with-burner"])
def test_an_rl_loop_of_tiny_steps_beside_an_action_function_is_no_step_gap(tmp_path, burner):
    """VALID (f_tensor_epsilon_agent's shape): the other tf.function's call is compiled work, not idle."""
    with _burner(burner):
        session = _run_fixture("gap_two_functions", tmp_path / "rl")
    timing = session.report.timing
    assert timing.other_calls_per_step == pytest.approx(1.0)
    assert timing.other_call_ms > 0 and timing.syncs_per_step == 0
    # What is left between the calls is the loop's own dispatch (a slice, a tf.constant): no reads, under half the step.
    assert "DOC-STEP-GAP" not in {f.code for f in session.findings}


def test_the_gap_share_is_measured_in_cpu_time_and_a_wait_in_wall_time():
    """p_status_bar_each_step at load ~10: the tiny call's wall time stretched (16.7% wall share), its CPU did not."""
    timing = StepTiming(
        driver="train_step",
        steps=125,
        step_ms=7.7,
        call_ms=6.4,
        gap_ms=1.3,
        input_ms=0.0,
        sync_ms=0.02,
        idle_ms=1.28,
        syncs_per_step=5.0,
        idle_percent=16.6,
        input_percent=0.0,
        sync_locations={"loop.py:20": 625},
        idle_median_ms=1.285,
        step_median_ms=7.703,
        idle_cpu_median_ms=1.01,
        step_cpu_median_ms=1.895,
    )
    (gap,) = step_gap.check(_watched(timing, calls=127, syncs=625))
    assert gap.evidence["idle_wall_percent"] == 16.7 and gap.evidence["idle_cpu_percent"] == 53.3
    assert gap.evidence["idle_percent"] == 53.3 and gap.evidence["threshold_percent"] == 10.0
    # A sleep (a wait on I/O) uses no CPU: the wall share still sees it (p_python_work_between_steps: 87% wall, 6% CPU).
    asleep = dataclasses.replace(
        timing,
        syncs_per_step=0.0,
        idle_median_ms=5.1,
        step_median_ms=5.9,
        idle_cpu_median_ms=0.05,
        step_cpu_median_ms=0.73,
    )
    (slept,) = step_gap.check(_watched(asleep, calls=127, syncs=625))
    assert slept.evidence["idle_percent"] == 85.6 and slept.evidence["threshold_percent"] == 50.0
    assert slept.evidence["idle_cpu_percent"] == 6.8
    # The status line's reads at load 8: descheduled mid-way, 39% of the step's wall time, 4.4% of its CPU. The copy
    # is CPU work: its CPU share decides, and the verdict (info) is the one a quiet host gives.
    loaded = dataclasses.replace(timing, sync_ms=12.95, step_ms=33.1, sync_cpu_ms=0.167, step_cpu_ms=3.82)
    (sync,) = host_sync.check(_watched(loaded, calls=127, syncs=625))
    assert sync.severity.value == "info" and sync.evidence["sync_cpu_share_percent"] == 4.4
    assert sync.evidence["sync_wall_share_percent"] == 39.1


# ------------------------------------------------------------------------------ DOC-HOST-SYNC: what a read forces
def test_a_large_read_every_step_costs_its_copy_on_a_cpu_step(tmp_path):
    """INVALID: a 4 MB output copied to NumPy every step; VALID: the same loop reading a scalar loss."""
    large = {f.code: f for f in _run_fixture("sync_large_read", tmp_path / "large").findings}["DOC-HOST-SYNC"]
    scalar = {f.code: f for f in _run_fixture("sync_large_read", tmp_path / "scalar", "--scalar").findings}
    assert large.severity.value == "warning" and large.evidence["cost_counted"].startswith("their copy")
    assert large.evidence["sync_share_percent"] >= 5.0
    assert scalar["DOC-HOST-SYNC"].severity.value == "info"
    assert scalar["DOC-HOST-SYNC"].evidence["syncs_per_step"] == pytest.approx(1.0)


def test_on_an_asynchronous_device_a_read_costs_the_overlap_it_takes_away():
    # GPU: the call returned once queued, the read waited 8 ms for the device; the host's own work is 2 ms a step.
    # Without the read those 2 ms would overlap the device's step: that is the cost, not the 8 ms of device work.
    (gpu,) = host_sync.check(Observations(watch=_timing(sync_ms=8.0, step_ms=10.0, async_device=True)))
    assert gpu.evidence["cost_ms_per_step"] == 2.0 and gpu.severity.value == "warning"
    assert gpu.evidence["cost_counted"] == "the host/device overlap they take away"
    # A read that waits for almost nothing takes almost no overlap away.
    (idle,) = host_sync.check(Observations(watch=_timing(sync_ms=0.2, step_ms=10.0, async_device=True)))
    assert idle.severity.value == "info"
    # The same 8 ms read on a CPU step is all copy (a CPU call returns when its kernels are done).
    (cpu,) = host_sync.check(Observations(watch=_timing(sync_ms=8.0, step_ms=10.0, async_device=False)))
    assert cpu.evidence["cost_ms_per_step"] == 8.0 and cpu.evidence["sync_share_percent"] == 80.0
    assert host_sync.read_cost_ms(1.0, 10.0, asynchronous=True) == host_sync.read_cost_ms(1.0, 10.0, asynchronous=False)


# ------------------------------------------------------------------------------ host work on one core's terms
def _loud(findings) -> set[str]:
    return {f.code for f in findings if f.severity.value in ("warning", "error")}


@pytest.mark.parametrize("burner", [False, True], ids=["quiet", "with-burner"])
def test_reads_and_a_print_after_every_step_are_host_work_at_the_users_line(tmp_path, burner):
    """INVALID (tf#35873): `.numpy()` appends and a print of the step's tensors after every batch.

    The reads alone are small copies (a few % of the step); with the Python around them they are a material share of
    the step on one core. The finding names the user's reading lines and compares one thread's CPU with the step's
    critical path, whatever the load.
    """
    script = FIXTURES / "print_each_step.py"
    with _burner(burner):
        session = _run_fixture("print_each_step", tmp_path / "each")
    found = {f.code: f for f in session.findings}
    timing = session.report.timing
    assert "DOC-HOST-SYNC" in found, timing
    sync = found["DOC-HOST-SYNC"]
    assert sync.severity.value == "warning", sync.message
    assert sync.evidence["syncs_per_step"] == pytest.approx(4.0)
    assert sync.evidence["threshold_percent"] == MATERIAL_PERCENT
    assert sync.evidence["sync_share_percent"] >= MATERIAL_PERCENT
    assert "Python around them" in sync.evidence["cost_counted"]
    # The Python around the reads is counted: the reads' own CPU is less than the host work charged to them.
    assert timing.host_cpu_median_ms > timing.sync_cpu_ms
    assert sync.evidence["step_on_one_core_ms"] == pytest.approx(step_on_one_core_ms(timing), abs=1e-3)
    read_line = next(i for i, text in enumerate(script.read_text().splitlines(), 1) if "# HOST-READ" in text)
    assert sync.location == f"{script}:{read_line}" or f"{script}:{read_line}" in sync.evidence["locations"]
    assert f"print_each_step.py:{read_line}" in sync.message
    assert _loud(session.findings) <= {"DOC-HOST-SYNC", "DOC-STEP-GAP"}
    assert "tf.summary" in sync.fix  # a custom loop: the loop's fix, not model.fit's knobs


@pytest.mark.parametrize("burner", [False, True], ids=["quiet", "with-burner"])
def test_a_print_every_100_steps_and_fits_progress_bar_are_no_warning(tmp_path, burner):
    """VALID look-alikes: the same loop printing every 100 steps; model.fit's own progress bar (verbose=1)."""
    with _burner(burner):
        every = _run_fixture("print_each_step", tmp_path / "every", "--every", "100")
        fit = _run_fixture("fit_progress_bar", tmp_path / "fit")
    assert every.report.timing.syncs_per_step < 0.1
    assert not _loud(every.findings), [(f.code, f.message) for f in every.findings]
    assert fit.report.timing.syncs_per_step == 0  # Keras reads its logs for the bar: not the user's reads
    assert not _loud(fit.findings), [(f.code, f.message) for f in fit.findings]


def _two_core_step(**changes) -> WatchReport:
    """tf#35873's shape: a 2.0 ms step whose kernels ran on two cores (3.6 ms of process CPU), reads of 0.06 ms and
    0.14 ms of host work per step in all (reads, print, appends) on the main thread."""
    timing = StepTiming(
        driver="train_step",
        steps=77,
        step_ms=2.1,
        call_ms=1.8,
        gap_ms=0.3,
        input_ms=0.1,
        sync_ms=0.06,
        idle_ms=0.1,
        syncs_per_step=4.0,
        idle_percent=4.0,
        input_percent=5.0,
        sync_locations={"train.py:48": 77, "train.py:50": 154},
        idle_median_ms=0.1,
        step_median_ms=2.0,
        idle_cpu_median_ms=0.08,
        step_cpu_median_ms=3.6,
        sync_cpu_ms=0.06,
        step_cpu_ms=3.6,
        host_cpu_median_ms=0.14,
        step_core_median_ms=2.0,
    )
    timing = dataclasses.replace(timing, **changes)
    return WatchReport(
        functions=[],
        timing=timing,
        eager_gradient_calls=0,
        compiled_calls=79,
        sync_count=308,
        nonfinite=None,
        wall_seconds=1.0,
        profile_dir=None,
    )


def test_host_work_is_compared_with_the_step_on_one_core_not_with_every_cores_cpu():
    (sync,) = host_sync.check(Observations(watch=_two_core_step()))
    # 0.14 ms over the 2.0 ms critical path: 7%. Over the process's 3.6 ms of CPU the reads alone read 1.7%.
    assert sync.evidence["sync_share_percent"] == 7.0 and sync.severity.value == "warning"
    assert sync.evidence["step_on_one_core_ms"] == 2.0 and sync.evidence["host_cpu_ms_per_step"] == 0.14
    assert sync.location == "train.py:48" and "train.py:48, train.py:50" in sync.message
    # A loaded host stretches the wall time (6 ms) and leaves the CPU; the critical path measured per step takes the
    # call's CPU where its wall time stretched, so the verdict holds.
    (loaded,) = host_sync.check(Observations(watch=_two_core_step(step_median_ms=6.0, step_core_median_ms=2.2)))
    assert loaded.severity.value == "warning" and loaded.evidence["sync_share_percent"] == 6.4
    # Reports without the per-step critical path: the smaller of the step's wall and process CPU time.
    assert step_on_one_core_ms(_two_core_step(step_core_median_ms=0.0).timing) == 2.0
    assert step_on_one_core_ms(_two_core_step(step_core_median_ms=0.0, step_median_ms=6.0).timing) == 3.6
    # Half the host work is under the material line: info, with the threshold said.
    (small,) = host_sync.check(Observations(watch=_two_core_step(host_cpu_median_ms=0.07)))
    assert small.severity.value == "info" and "below 5% of the step" in small.message


def test_the_gap_share_of_a_step_gap_is_on_one_core_and_names_the_reading_lines():
    # 0.25 ms of Python (besides the reads) between steps of a 2.0 ms two-core step: 12.5% on one core, 6.9% of the
    # process's CPU. With four reads per step the gap is the user's: the 10% line applies.
    (gap,) = step_gap.check(Observations(watch=_two_core_step(idle_cpu_median_ms=0.25, host_cpu_median_ms=0.31)))
    assert gap.evidence["idle_cpu_percent"] == 12.5 and gap.evidence["threshold_percent"] == 10.0
    assert gap.location == "train.py:48" and gap.evidence["read_locations"] == {"train.py:48": 77, "train.py:50": 154}
    assert "read at train.py:48, train.py:50" in gap.message


# ------------------------------------------------------------------------------ DOC-INPUT-BOUND: the steady state
def _profiled_loop(tmp_path: Path, *, slow_elements: range, warm_up: bool, real_step: bool = False):
    """A py_function map (10 ms per element of ``slow_elements``, a range from 0), then in-memory elements, behind a
    12-batch prefetch, feeding a step of 0.2 ms (constant-folded) or, with ``real_step``, about 4 ms.

    The window's drain estimate is 0 steps (measure_from = start): what a short estimate of an AUTOTUNE buffer
    leaves. With ``warm_up`` the loop does 0.3-1 s of compute first, so the buffer is full when the window opens.
    """

    def produce(index):
        time.sleep(0.01)  # the element's Python work (a decode, a parse) that releases the GIL
        return tf.cast(index, tf.float32)

    options = tf.data.Options()
    options.experimental_optimization.map_and_batch_fusion = False
    options.experimental_optimization.inject_prefetch = False
    # Only the slow elements go through Python; the rest come from memory, so that once the slow ones are past
    # the buffer refills in microseconds and no other pytest worker's load can make the steady tail wait.
    slow_end = slow_elements.stop
    dataset = (
        tf.data.Dataset.range(slow_end)
        .map(lambda i: tf.py_function(produce, [i], tf.float32))
        .concatenate(tf.data.Dataset.range(slow_end, 400).map(lambda i: tf.cast(i, tf.float32)))
        .batch(1)
        .prefetch(12)
        .with_options(options)
    )
    weights = tf.Variable(1.0)

    @tf.function
    def step(x):
        # Grappler folds a chain of constants into one: that step takes 0.2 ms, far quicker than the slow
        # pipeline. `real_step` reads the variable, so the chain runs (about 4 ms on the 2-core CI machine),
        # and the iterator's own 30 microseconds stay well under 5% of every step.
        m = tf.ones([384, 384]) * weights if real_step else tf.ones([256, 256])
        for _ in range(4):
            m = tf.matmul(m, m) / float(m.shape[0])
        weights.assign_add(tf.reduce_sum(x) * 0.0 + tf.reduce_sum(m) * 0.0)

    @tf.function
    def validation_pass(m):
        for _ in tf.range(8):
            m = tf.matmul(m, m) / 512.0
        return tf.reduce_sum(m)

    iterator = iter(dataset)
    step(next(iterator))
    if warm_up:
        validation_pass(tf.ones([512, 512])).numpy()
    start = 2
    window = ProfileWindow(tmp_path, start_step=start, stop_step=start + 22, measure_from=start)
    for number in range(start, start + 23):
        with window.step(number):
            step(next(iterator))
    window.close()
    summary = summarize_profile(tmp_path)
    return summary, {f.code: f for f in analyze_profile(summary)}


def test_a_pipeline_slower_than_the_step_is_input_bound_once_warm_up_buffers_drain(tmp_path):
    """INVALID (p_py_function_map): the first measured steps read batches buffered during warm-up, the rest wait."""
    summary, found = _profiled_loop(tmp_path, slow_elements=range(400), warm_up=True)
    rows = summary.steps.per_step
    waited = [r for r in rows if r["input_ms"] >= 5.0]
    steady = input_bound.steady_rows(Observations(summary=summary))
    assert len(steady) == len(rows) - len(rows) // 2
    assert sum(r["input_ms"] >= 5.0 for r in steady) > len(steady) / 2, rows  # the tail waits
    finding = found["DOC-INPUT-BOUND"]
    assert finding.severity.value == "error"
    # Decided by the whole window when most of its steps waited, else by its steady last half.
    assert finding.evidence.get("steady_steps") in (None, len(steady))
    if "steady_steps" in finding.evidence:
        assert finding.evidence["input_percent"] >= finding.evidence["window_input_percent"]
    assert len(waited) < len(rows)  # some steps were served from the buffer


def test_a_pipeline_that_caught_up_after_the_window_opened_is_not_input_bound(tmp_path):
    """VALID: the first window steps wait (a slow start), the steady tail never does."""
    # a step that the iterator's own fixed cost cannot reach 5% of, on a loaded host too
    _, found = _profiled_loop(tmp_path, slow_elements=range(0, 4), warm_up=False, real_step=True)
    assert "DOC-INPUT-BOUND" not in found


# ------------------------------------------------------------------------------ DOC-INPUT-BOUND without a profile
@pytest.mark.parametrize("burner", [False, True], ids=["quiet", "with-burner"])
def test_a_map_too_slow_for_the_step_is_input_bound_by_the_watcher_and_its_threads_work_through_the_wait(
    tmp_path, burner
):
    """INVALID: a sequential map of matmuls (bad_sequential_map) makes every step wait while tf.data's threads work."""
    with _burner(burner):
        session = _run_fixture("bad_sequential_map", tmp_path / "map", "--matmuls", "48")
    timing = session.report.timing
    found = {f.code: f for f in session.findings}
    assert "DOC-INPUT-BOUND" in found, timing
    assert found["DOC-INPUT-BOUND"].evidence["measured_by"] == "watcher"
    # Its threads' work is most of the step's CPU, whatever the load did to the wait.
    assert timing.input_producer_cpu_ms >= input_bound.CONTENTION_RATIO * timing.step_cpu_ms, timing


def test_a_wait_on_in_memory_slices_whose_threads_did_not_run_is_the_hosts_load_not_the_pipeline():
    """VALID (CI's 2 cores under pytest -n 2): next() on from_tensor_slices().batch() stretched to 2.5 ms of a 9 ms step
    on every step, while tf.data's threads used 0.07 ms of CPU in it (5% of the step's 1.4 ms of CPU); the same wait on
    a generator is judged on it."""
    timing = StepTiming(
        driver="train_step",
        steps=150,
        step_ms=9.0,
        call_ms=5.0,
        gap_ms=4.0,
        input_ms=2.5,
        sync_ms=0.5,
        idle_ms=1.0,
        syncs_per_step=4.0,
        idle_percent=11.0,
        input_percent=100 * 2.5 / 9.0,
        sync_locations={},
        input_median_percent=25.0,
        epoch_start_input_share=0.0,
        input_producer_cpu_ms=0.07,
        step_cpu_ms=1.4,
    )
    slices = {"stages": [{"kind": "Batch", "batch": 16}, {"kind": "TensorSlice"}]}
    assert input_bound.check(_watched(timing, pipelines=[slices])) == []
    generator = {"stages": [{"kind": "Batch", "batch": 16}, {"kind": "Generator"}], "generator": True}
    assert [f.code for f in input_bound.check(_watched(timing, pipelines=[generator]))] == ["DOC-INPUT-BOUND"]
    # The same in-memory pipeline whose threads worked through the wait is a pipeline too slow for the step.
    working = dataclasses.replace(timing, input_producer_cpu_ms=1.5)
    assert [f.code for f in input_bound.check(_watched(working, pipelines=[slices]))] == ["DOC-INPUT-BOUND"]
    # A slow map on a loaded host (bad_sequential_map beside a burner and another pytest worker): its threads got a
    # fifth of the wait in CPU, yet their work is most of the step's CPU: the pipeline, not the scheduler.
    loaded = dataclasses.replace(timing, input_ms=11.6, step_ms=15.0, input_producer_cpu_ms=2.15, step_cpu_ms=3.5)
    assert [f.code for f in input_bound.check(_watched(loaded, pipelines=[slices]))] == ["DOC-INPUT-BOUND"]
