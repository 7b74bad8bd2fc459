"""The profile-based rules on measured-shape summaries: each threshold fires on one side and not the other.

The summaries carry the numbers a real profile produces (the false positive below is the one seen
on a loaded 2-core CI host); the full capture -> xprof -> rule path is covered by the tests that
profile real TensorFlow code (test_capture_and_rules, test_profile_hook, the doctor integration tests).
"""

import pytest

from tfpilot.diagnose import analyze
from tfpilot.diagnose.rules import host_python_ops, input_bound, step_gap, tiny_ops
from tfpilot.diagnose.rules.base import Observations
from tfpilot.diagnose.watchers import FunctionRecord, StepTiming, WatchReport
from tfpilot.diagnose.xplane import InputStage, ProfileSummary


def summary(
    *,
    step_ms=3.7,
    input_ms=0.0,
    stages=(),
    op_occurrences_per_step=10.0,
    host_op_ms_per_step=0.5,
    steps=4,
    gaps_ms=(),
    step_times_ms=(),
    top_ops=(),
    python_ops=(),
    per_step=(),
) -> ProfileSummary:
    return ProfileSummary.from_dict(
        {
            "profile_dir": "profile",
            "session": "s",
            "hardware_type": "CPU_ONLY",
            "steps": {
                "steps": steps,
                "step_ms": step_ms,
                "input_ms": input_ms,
                "compute_ms": step_ms - input_ms,
                "other_ms": 0.0,
                "input_percent": 100.0 * input_ms / step_ms,
                "compute_percent": 100.0 * (step_ms - input_ms) / step_ms,
                "other_percent": 0.0,
                "per_step": [
                    {
                        "step": f"train {i}",
                        "step_ms": step,
                        "input_ms": wait,
                        "compute_ms": step - wait,
                        "other_ms": 0.0,
                    }
                    for i, (step, wait) in enumerate(per_step)
                ],
            },
            "top_ops": list(top_ops),
            "host_python_ops": [
                {
                    "operation": kind,
                    "type": kind,
                    "host_or_device": "Host",
                    "occurrences": count,
                    "total_self_time_ms": ms,
                    "avg_self_time_us": 1e3 * ms / count,
                    "self_time_percent": 0.0,
                    "eager": False,
                }
                for kind, count, ms in python_ops
            ],
            "input_stages": [
                {
                    "name": f"Iterator::Root::{name}",
                    "stage": name,
                    "count": steps,
                    "self_time_ms": ms,
                    "self_time_percent": 0.0,
                }
                for name, ms in stages
            ],
            "op_occurrences_per_step": op_occurrences_per_step,
            "host_op_self_time_ms_per_step": host_op_ms_per_step,
            "input_conclusion": "",
            "files": {},
            "capture": {"steps_captured": steps, "gaps_ms": list(gaps_ms), "step_times_ms": list(step_times_ms)},
        }
    )


def codes(**kwargs) -> dict:
    return {f.code: f for f in analyze(**kwargs)}


# ------------------------------------------------------------------------------ DOC-INPUT-BOUND
CACHED_PREFETCHED = (("Prefetch", 4.8), ("ForeverRepeat", 0.05), ("MemoryCache", 0.06), ("MemoryCacheImpl", 0.02))


def test_loaded_host_waiting_on_a_cached_prefetched_pipeline_is_not_input_bound():
    # 1.2 of 3.7 ms waited (32%), but the pipeline's stages did 0.02 ms of work per step: CPU contention.
    observed = summary(step_ms=3.7, input_ms=1.2, stages=CACHED_PREFETCHED)
    assert input_bound.pipeline_work_ms_per_step(Observations(summary=observed)) == pytest.approx(0.02)
    assert "DOC-INPUT-BOUND" not in codes(summary=observed)


def test_wait_explained_by_pipeline_work_is_input_bound_with_numbers():
    # A sequential map doing 3 ms of work per batch and a 4.4 ms step that waits 3 ms of it.
    observed = summary(step_ms=4.4, input_ms=3.0, stages=(("MapAndBatch", 12.0), ("TensorSlice", 0.06), ("Root", 0.01)))
    finding = codes(summary=observed)["DOC-INPUT-BOUND"]
    assert finding.severity.value == "error"
    assert finding.evidence["input_percent"] == pytest.approx(68.2, abs=0.1)
    assert finding.evidence["input_ms_per_step"] == 3.0
    assert finding.evidence["pipeline_work_ms_per_step"] == pytest.approx(3.015, abs=0.01)
    assert finding.evidence["dominant_stage"] == "MapAndBatch"
    assert finding.evidence["prefetch"] is False


@pytest.mark.parametrize(
    ("input_ms", "step_ms", "expected"),
    [(0.9, 3.0, None), (1.0, 12.0, "warning"), (1.0, 4.0, "error"), (0.5, 20.0, None)],
)
def test_input_bound_needs_both_the_percentage_and_the_absolute_floor(input_ms, step_ms, expected):
    observed = summary(step_ms=step_ms, input_ms=input_ms, stages=(("ParallelMapV2", 10.0),))
    found = codes(summary=observed).get("DOC-INPUT-BOUND")
    assert (found.severity.value if found else None) == expected


def watch_report(
    *,
    input_ms=0.0,
    step_ms=5.0,
    idle_ms=0.0,
    syncs_per_step=0.0,
    driver="train_step",
    idle_median_ms=None,
    step_median_ms=None,
) -> WatchReport:
    timing = StepTiming(
        driver=driver,
        steps=20,
        step_ms=step_ms,
        call_ms=step_ms - input_ms - idle_ms,
        gap_ms=input_ms + idle_ms,
        input_ms=input_ms,
        sync_ms=0.0,
        idle_ms=idle_ms,
        syncs_per_step=syncs_per_step,
        idle_percent=100.0 * idle_ms / step_ms,
        input_percent=100.0 * input_ms / step_ms,
        sync_locations={},
        idle_median_ms=idle_ms if idle_median_ms is None else idle_median_ms,
        step_median_ms=step_ms if step_median_ms is None else step_median_ms,
    )
    return WatchReport(
        functions=[],
        timing=timing,
        eager_gradient_calls=0,
        compiled_calls=22,
        sync_count=0,
        nonfinite=None,
        wall_seconds=1.0,
        profile_dir=None,
    )


def test_watcher_next_timing_has_a_higher_floor():
    # Python-side next() on a prefetched pipeline costs ~1 ms on a loaded host: not a finding on its own.
    assert "DOC-INPUT-BOUND" not in codes(watch=watch_report(input_ms=0.9, step_ms=5.6))
    finding = codes(watch=watch_report(input_ms=4.0, step_ms=6.0))["DOC-INPUT-BOUND"]
    assert finding.evidence["measured_by"] == "watcher" and finding.evidence["input_percent"] == pytest.approx(
        66.7, abs=0.1
    )


# ------------------------------------------------------------------------------ DOC-TINY-OPS
def test_tiny_ops_fires_on_many_short_ops():
    # 1200 ops per step whose self time fills 6 of a 20 ms step (30%): dispatch-bound; compiled, so info.
    observed = summary(step_ms=20.0, op_occurrences_per_step=1200, host_op_ms_per_step=6.0)
    finding = codes(summary=observed)["DOC-TINY-OPS"]
    assert finding.evidence == {
        "ops_per_step": 1200.0,
        "busy_percent": 30.0,
        "mean_op_us": 5.0,
        "eager_op_occurrences_in_top_ops": 0,
        "compiled": True,
    }
    assert finding.severity.value == "info"


@pytest.mark.parametrize(("ops", "host_ms"), [(400, 2.0), (1200, 10.0)])  # too few ops; ops busy 50% of the step
def test_tiny_ops_stays_quiet_below_its_thresholds(ops, host_ms):
    observed = summary(step_ms=20.0, op_occurrences_per_step=ops, host_op_ms_per_step=host_ms)
    assert tiny_ops.check(Observations(summary=observed)) == []


@pytest.mark.parametrize("load_factor", [1.0, 1.5, 3.0])
def test_tiny_ops_verdict_does_not_move_when_load_stretches_ops_and_steps_alike(load_factor):
    # The LSTM-under-fit shape: 600 ops of ~2 us in a 4.3 ms step on a quiet host. A loaded host stretches both;
    # the old mean-op-time threshold (20 us) flipped the verdict, the busy share does not move.
    observed = summary(step_ms=4.3 * load_factor, op_occurrences_per_step=600, host_op_ms_per_step=1.2 * load_factor)
    (finding,) = tiny_ops.check(Observations(summary=observed))
    assert finding.evidence["busy_percent"] == pytest.approx(27.9, abs=0.1)


# ------------------------------------------------------------------------------ DOC-STEP-GAP
def test_step_gap_from_the_profile_hooks_wall_clock_capture():
    # 3 ms steps with 3.5 ms between them (median of the gaps): 54% of wall time idle. The capture counts nothing
    # in its gaps (no reads, no iterators), so the gap must hold half the step.
    observed = summary(gaps_ms=(3.4, 3.6, 3.5), step_times_ms=(3.0, 3.0, 3.0, 3.0))
    finding = codes(summary=observed)["DOC-STEP-GAP"]
    assert finding.evidence == {
        "idle_ms_per_step": 3.5,
        "idle_percent": 53.8,
        "steps": 3,
        "measured_by": "profile hook",
        "threshold_percent": 50.0,
    }
    assert step_gap.check(Observations(summary=summary(gaps_ms=(1.4, 1.6, 1.5), step_times_ms=(3.0,) * 4))) == []


def test_step_gap_from_the_watcher_and_its_thresholds():
    # Reads into Python in every gap attribute it to the user's code: 10% of the step is material.
    finding = codes(watch=watch_report(idle_ms=2.0, step_ms=8.0, syncs_per_step=1.0))["DOC-STEP-GAP"]
    assert finding.evidence["idle_percent"] == 25.0 and finding.evidence["measured_by"] == "watcher"
    assert finding.evidence["idle_ms_per_step"] == 2.0 and finding.evidence["threshold_percent"] == 10.0
    assert "1.0 reads of a tensor into Python" in finding.message
    # No floor in milliseconds: a 0.3 ms gap is 15% of a 2 ms step whatever the host's load.
    assert codes(watch=watch_report(idle_ms=0.3, step_ms=2.0, syncs_per_step=4.0))["DOC-STEP-GAP"]
    # Without reads or new iterators in the gaps, the gap must hold half the step (the loop's own dispatch
    # between tiny steps is not host work to remove).
    assert step_gap.check(Observations(watch=watch_report(idle_ms=2.0, step_ms=8.0))) == []
    unattributed = codes(watch=watch_report(idle_ms=5.0, step_ms=8.0))["DOC-STEP-GAP"]
    assert unattributed.evidence["threshold_percent"] == 50.0
    assert step_gap.check(Observations(watch=watch_report(idle_ms=1.5, step_ms=30.0, syncs_per_step=1.0))) == []
    assert (
        step_gap.check(Observations(summary=summary(gaps_ms=(5.0, 5.0), step_times_ms=(1.0, 1.0, 1.0)))) == []
    )  # two gaps are no pattern


def test_scheduler_stops_in_a_few_gaps_are_not_a_step_gap():
    # The good script on a loaded 2-core host: 40 us of loop overhead per step, but 4 of 20 gaps caught a
    # ~10 ms scheduler stop, so the mean gap is 2 ms (25% of 8 ms). The medians say the loop is not idle.
    loaded = watch_report(idle_ms=2.0, step_ms=8.0, idle_median_ms=0.04, step_median_ms=5.5, syncs_per_step=1.0)
    assert step_gap.check(Observations(watch=loaded)) == []
    stopped = summary(gaps_ms=(0.02, 9.5, 0.03, 0.02), step_times_ms=(4.0, 4.1, 3.9, 4.0, 4.0))
    assert step_gap.check(Observations(summary=stopped)) == []
    # The same mean with host work in every gap is a finding.
    steady = summary(gaps_ms=(4.4, 4.5, 4.3, 4.5), step_times_ms=(4.0, 4.1, 3.9, 4.0, 4.0))
    assert codes(summary=steady)["DOC-STEP-GAP"].evidence["idle_ms_per_step"] == 4.45


def test_old_watch_reports_without_medians_fall_back_to_means():
    report = WatchReport.from_dict(watch_report(idle_ms=2.0, step_ms=8.0, syncs_per_step=1.0).to_dict())
    data = report.to_dict()
    del data["timing"]["idle_median_ms"], data["timing"]["step_median_ms"]
    old = WatchReport.from_dict(data)
    assert old.timing.step_median_ms == 0.0
    assert codes(watch=old)["DOC-STEP-GAP"].evidence["idle_ms_per_step"] == 2.0


def test_input_bound_is_judged_on_the_steady_last_half_of_the_window():
    # p_py_function_map's quiet window: 6 measured steps read batches buffered during warm-up, then every step
    # waited. The median of all 11 steps did not wait (the whole window's verdict: none); the last half (6 steps,
    # 5 waiting) does.
    rows = [(9.0, 0.06)] * 6 + [(17.0, 12.0)] * 5
    drained = summary(step_ms=12.6, input_ms=5.5, stages=(("MapAndBatch", 60.0),), per_step=rows, steps=11)
    assert [r["input_ms"] for r in input_bound.steady_rows(Observations(summary=drained))] == [0.06] + [12.0] * 5
    finding = codes(summary=drained)["DOC-INPUT-BOUND"]
    assert finding.severity.value == "error" and finding.evidence["steady_steps"] == 6
    assert finding.evidence["window_input_percent"] == pytest.approx(43.7, abs=0.1)
    # The reverse (a slow start the pipeline caught up on) is no steady wait.
    caught_up = summary(step_ms=12.6, input_ms=5.5, stages=(("MapAndBatch", 60.0),), per_step=rows[::-1], steps=11)
    assert "DOC-INPUT-BOUND" not in codes(summary=caught_up)
    # Fewer than 5 rows (a last half of fewer than 3): all of them are the steady state.
    short = summary(per_step=[(10.0, 0.0)] * 2 + [(10.0, 9.0)] * 2, steps=4)
    assert len(input_bound.steady_rows(Observations(summary=short))) == 4


def test_one_stalled_step_of_five_is_not_input_bound():
    # f_parallel_py_map on a loaded host: a parallel, prefetched map that keeps up, but one profiled step of
    # five found the buffer empty (14 of 47 ms). The mean (3.1 of 37.7 ms, 8%) passes the threshold, the
    # median step (0.2 ms of 23 ms) says the pipeline keeps up.
    rows = ((73.1, 0.8), (22.8, 0.2), (22.2, 0.1), (23.3, 0.2), (47.1, 14.1))
    stalled = summary(step_ms=37.7, input_ms=3.1, steps=5, per_step=rows, stages=(("MapAndBatch", 37.3),))
    assert "DOC-INPUT-BOUND" not in codes(summary=stalled)
    # A sequential map makes every step wait: the median agrees with the mean.
    rows = ((45.2, 42.7), (48.7, 45.9), (48.6, 46.2), (46.9, 44.6), (3.4, 0.5))
    waiting = summary(step_ms=38.5, input_ms=36.0, steps=5, per_step=rows, stages=(("MapAndBatch", 179.6),))
    assert codes(summary=waiting)["DOC-INPUT-BOUND"].severity.value == "error"


# ------------------------------------------------------------------------------ DOC-HOST-PYTHON-OP
GENERATOR_STAGES = (("Generator", 109.6), ("Prefetch", 1.0), ("ParallelInterleaveV4", 0.7))


def test_python_ops_in_a_pipeline_that_keeps_up_are_info():
    # f_parallel_interleave: 20 ms of generator Python per 12 ms step summed over 6 interleaved threads
    # (167% of the step), yet the step waits 2% of the time for input.
    observed = summary(
        step_ms=11.9, input_ms=0.27, steps=5, stages=GENERATOR_STAGES, python_ops=(("PyFunc", 35, 99.3),)
    )
    finding = codes(summary=observed)["DOC-HOST-PYTHON-OP"]
    assert finding.severity.value == "info"
    assert finding.evidence["where"] == "pipeline" and finding.evidence["source"] == "from_generator"
    assert finding.evidence["share_of_step_percent"] == pytest.approx(166.9, abs=0.1)  # 99.3 ms / 5 steps / 11.9 ms
    assert "from_generator" in finding.fix and "py_function" not in finding.fix


def test_python_ops_are_an_error_when_the_step_waits_for_input():
    # p_sequential_py_map: a sequential map over a sleeping py_function; every step waits.
    rows = ((45.2, 42.7), (48.7, 45.9), (48.6, 46.2))
    observed = summary(
        step_ms=38.5,
        input_ms=36.0,
        steps=5,
        per_step=rows,
        stages=(("MapAndBatch", 179.6),),
        python_ops=(("EagerPyFunc", 32, 179.6),),
    )
    found = codes(summary=observed)
    assert found["DOC-HOST-PYTHON-OP"].severity.value == "error"
    assert found["DOC-HOST-PYTHON-OP"].evidence["source"] == "map"
    # The advice matches a sleeping / I/O py_function: parallelise it, do not call it unparallelisable.
    for finding in (found["DOC-HOST-PYTHON-OP"], found["DOC-INPUT-BOUND"]):
        assert "num_parallel_calls" in finding.fix and "cannot run in parallel" not in finding.fix


def test_from_generator_advice_does_not_say_py_function():
    rows = ((21.1, 18.6), (20.6, 18.4), (23.2, 18.8))
    observed = summary(
        step_ms=16.2,
        input_ms=12.1,
        steps=5,
        per_step=rows,
        stages=(("Generator", 75.4), ("Prefetch", 60.3)),
        python_ops=(("PyFunc", 25, 62.8),),
    )
    found = codes(summary=observed)
    assert found["DOC-HOST-PYTHON-OP"].evidence["source"] == "from_generator"
    for finding in (found["DOC-HOST-PYTHON-OP"], found["DOC-INPUT-BOUND"]):
        assert "interleave" in finding.fix and "replace the py_function" not in finding.fix


def test_python_op_inside_the_step_counts_against_the_step():
    # The watcher found EagerPyFunc in the train step's own graph: no input wait, but the step waits for it.
    observed = summary(step_ms=10.0, input_ms=0.0, steps=4, python_ops=(("EagerPyFunc", 4, 12.0),))
    report = watch_report(step_ms=10.0)
    report.functions = [
        FunctionRecord(
            key="k",
            name="train_step",
            location="x.py:1",
            calls=20,
            tracing_count=1,
            traces=[],
            python_ops=["EagerPyFunc"],
        )
    ]
    finding = host_python_ops.check(Observations(summary=observed, watch=report))[0]
    assert finding.severity.value == "error"  # 3 ms of a 10 ms step
    assert finding.evidence["where"] == "step" and "training step" in finding.fix
    assert finding.evidence["share_of_step_percent"] == 30.0


# ------------------------------------------------------------------------------ DOC-RETRACING
def _tensor(rows, name="x"):
    return {"name": name, "kind": "tensor", "dtype": "float32", "shape": [rows, 16]}


def _retracing(traces, *, instances=1, calls=30):
    report = watch_report()
    report.functions = [
        FunctionRecord(
            key="k",
            name="train_step",
            location="loop.py:10",
            calls=calls,
            tracing_count=len(traces),
            traces=traces,
            instances=instances,
            call_site="loop.py:20" if instances > 1 else "",
        )
    ]
    return codes(watch=report).get("DOC-RETRACING")


def test_retracing_counts_distinct_signatures_and_allows_one_partial_batch():
    # Variable-creating first trace (the same signature twice) and the last batch of 8 rows: healthy.
    assert _retracing([[_tensor(64)], [_tensor(64)], [_tensor(8)]]) is None
    # A third batch size is not the last partial batch any more.
    finding = _retracing([[_tensor(64)], [_tensor(8)], [_tensor(32)]])
    assert finding.evidence["distinct_signatures"] == 3
    assert finding.evidence["changed"] == [
        {"argument": "x", "kind": "shape", "values": ["[64, 16]", "[8, 16]", "[32, 16]"]}
    ]
    # Another dimension than the leading one changing is not a partial batch either.
    assert _retracing([[_tensor(64)], [{**_tensor(64), "shape": [64, 8]}]]) is not None


def test_a_changing_python_scalar_is_retracing_even_twice():
    scalar = [{"name": "lr", "kind": "python", "type": "float", "value": v} for v in ("0.1", "0.05")]
    finding = _retracing([[_tensor(64), scalar[0]], [_tensor(64), scalar[1]]])
    assert finding.evidence["changed"][0]["kind"] == "python scalar" and "tf.constant" in finding.fix


def test_new_function_objects_per_call_are_retracing():
    finding = _retracing([[_tensor(8)]] * 20, instances=20, calls=20)
    assert finding.evidence["new_functions"] == 20 and finding.location == "loop.py:20"
    # Two function objects (e.g. rebuilt once) are no pattern.
    assert _retracing([[_tensor(8)]] * 2, instances=2) is None


# ------------------------------------------------------------------------------ fix texts that read the pipeline
def pipeline(*kinds, parallel=None) -> dict:
    """A PipelineShape.to_dict() as the watcher writes it, output stage first."""
    from tfpilot.diagnose.pipeline import PipelineShape, PipelineStage

    stages = [PipelineStage(kind=k, parallel=parallel if k.startswith("Parallel") else None) for k in kinds]
    return PipelineShape(stages=stages, cardinality=None, epoch_steps=None).to_dict()


def waiting_on(iterators, *, pipelines=(), python_ops=(), pipeline_stats=None):
    """A profile whose steps wait 3 of 4.4 ms, its stages named by full iterator name: name -> self ms."""
    observed = summary(step_ms=4.4, input_ms=3.0, stages=(), python_ops=python_ops)
    observed.pipeline_stats = pipeline_stats or {}
    observed.input_stages = [
        InputStage(name=name, stage=name.split("::")[-1].split("[")[0], count=4, self_time_ms=ms, self_time_percent=0)
        for name, ms in iterators
    ]
    report = watch_report(step_ms=4.4)
    report.pipelines = list(pipelines)
    return codes(summary=observed, watch=report)


def test_sequential_map_in_a_cached_prefetched_pipeline_is_told_to_parallelise_only():
    found = waiting_on(
        [
            ("Iterator::Root::Prefetch::MemoryCache::MemoryCacheImpl::MapAndBatch", 12.0),
            ("Iterator::Root::Prefetch", 3.0),
        ],
        pipelines=[pipeline("Prefetch", "Cache", "Batch", "Map", "Range")],
    )
    finding = found["DOC-INPUT-BOUND"]
    assert "runs sequentially" in finding.fix and "num_parallel_calls=tf.data.AUTOTUNE" in finding.fix
    assert "cache()" not in finding.fix and "prefetch(" not in finding.fix  # both already there
    assert "it is cached" in finding.message and "it prefetches" in finding.message


def test_parallel_map_is_not_told_to_add_num_parallel_calls():
    found = waiting_on(
        [("Iterator::Root::Prefetch::BatchV2::ParallelMapV2", 12.0)],
        pipelines=[pipeline("Batch", "ParallelMap", "TensorSlice", parallel=-1)],
    )
    finding = found["DOC-INPUT-BOUND"]
    assert finding.evidence["dominant_stage"] == "ParallelMapV2"
    assert "already runs in parallel" in finding.fix and "pass num_parallel_calls" not in finding.fix
    # Not cached and no prefetch of its own: those are advised.
    assert "cache()" in finding.fix and "prefetch(tf.data.AUTOTUNE)" in finding.fix


def test_map_after_cache_is_told_to_move_before_it():
    # The slow map's iterator is above the cache (no MemoryCache in its name): it runs every epoch.
    found = waiting_on(
        [
            ("Iterator::Root::Prefetch::ParallelMapV2", 12.0),
            ("Iterator::Root::Prefetch::ParallelMapV2::MemoryCache", 0.1),
        ],
        pipelines=[pipeline("Prefetch", "ParallelMap", "Cache", "Batch", "Range", parallel=-1)],
    )
    fix = found["DOC-INPUT-BOUND"].fix
    assert "runs after cache(), every epoch: move it before cache()" in fix
    assert "pass num_parallel_calls" not in fix and "prefetch(" not in fix


def test_parallel_interleave_reading_files_is_not_told_to_interleave_in_parallel():
    found = waiting_on(
        [("Iterator::Root::Prefetch::ParallelInterleaveV4[0]::TFRecord", 12.0)],
        pipelines=[pipeline("Prefetch", "ParallelInterleave", "TensorSlice", parallel=-1)],
    )
    fix = found["DOC-INPUT-BOUND"].fix
    assert "already parallel" in fix and "cycle_length" in fix
    assert "interleave(..., num_parallel_calls" not in fix


def test_python_op_in_a_parallel_cached_map_gets_no_advice_to_add_either():
    found = waiting_on(
        [("Iterator::Root::Prefetch::MemoryCache::MemoryCacheImpl::ParallelMapV2", 60.0)],
        pipelines=[pipeline("Prefetch", "Cache", "ParallelMap", "Range", parallel=-1)],
        python_ops=(("EagerPyFunc", 8, 60.0),),
    )
    for code in ("DOC-HOST-PYTHON-OP", "DOC-INPUT-BOUND"):
        fix = found[code].fix
        assert "already runs in a parallel map" in fix, (code, fix)
        assert "pass num_parallel_calls" not in fix and "cache() after" not in fix and "prefetch(" not in fix


def test_watcher_timing_inside_the_cache_filling_epoch_is_not_judged():
    report = watch_report(input_ms=30.0, step_ms=40.0)
    report.cache_filled = False
    assert "DOC-INPUT-BOUND" not in codes(watch=report)
    report.cache_filled = True
    assert codes(watch=report)["DOC-INPUT-BOUND"].severity.value == "error"


def test_epoch_start_waits_the_window_missed_are_judged_on_the_whole_run():
    """p_uncached_epochs: a 4-step window with one 2.7 s step says 4% input; the run waited 35% of its time."""
    window = summary(
        step_ms=675.9,
        input_ms=27.7,
        steps=4,
        stages=(("MapAndBatch", 117.1), ("Root", 25.6)),
        per_step=((2.6, 0.1), (2.4, 0.9), (2689.8, 103.9), (8.9, 5.9)),
    )
    found = codes(summary=window, watch=watch_report(input_ms=8.5, step_ms=24.4))["DOC-INPUT-BOUND"]
    assert found.severity.value == "error"
    assert found.evidence["measured_by"] == "watcher" and found.evidence["profile_input_percent"] == 4.1
    # The same wait with a pipeline that did almost no work: the host was busy, not the pipeline slow.
    idle_pipeline = summary(step_ms=675.9, input_ms=27.7, steps=4, stages=(("Prefetch", 4.0), ("MemoryCache", 0.1)))
    assert "DOC-INPUT-BOUND" not in codes(summary=idle_pipeline, watch=watch_report(input_ms=8.5, step_ms=24.4))
    # And a whole run that waited below the watcher's floor stays quiet whatever the window said.
    assert "DOC-INPUT-BOUND" not in codes(summary=window, watch=watch_report(input_ms=1.5, step_ms=24.4))


def test_sleeping_py_function_under_an_autotune_map_at_the_core_cap_is_told_to_raise_parallelism():
    """f_parallel_py_map's AUTOTUNE version on 2 cores: the profile reads parallelism 2 = cpu_budget 2."""
    stats = {
        "cpu_budget": 2,
        "iterators": {"Iterator::Root::Prefetch::MapAndBatch": {"autotune": True, "parallelism": 2}},
    }
    args = ([("Iterator::Root::Prefetch::MapAndBatch", 60.0)],)
    kwargs = {
        "pipelines": [pipeline("Prefetch", "Batch", "ParallelMap", "Range", parallel=-1)],
        "python_ops": (("EagerPyFunc", 16, 60.0),),
    }
    capped = waiting_on(*args, pipeline_stats=stats, **kwargs)
    for code in ("DOC-HOST-PYTHON-OP", "DOC-INPUT-BOUND"):
        assert "AUTOTUNE runs it 2 calls at a time" in capped[code].fix, capped[code].fix
        assert "private_threadpool_size" in capped[code].fix
    # An explicit parallelism (autotune off) or one below the cap gets no such advice.
    for values in ({"autotune": False, "parallelism": 16}, {"autotune": True, "parallelism": 1}):
        stats["iterators"]["Iterator::Root::Prefetch::MapAndBatch"] = values
        found = waiting_on(*args, pipeline_stats=stats, **kwargs)
        assert "AUTOTUNE runs it" not in found["DOC-INPUT-BOUND"].fix


def test_a_run_wait_in_a_few_random_steps_is_the_scheduler_not_the_pipeline():
    """CI's with-burner print_each_step: a 2 ms mean wait that neither the median step nor an epoch start holds."""
    report = watch_report(input_ms=3.0, step_ms=10.0)
    assert report.timing is not None
    report.timing.input_median_percent, report.timing.epoch_start_input_share = 1.0, 0.1
    assert "DOC-INPUT-BOUND" not in codes(watch=report)
    # The same mean when every step waits (a pipeline slower than the step) ...
    report.timing.input_median_percent = 25.0
    assert codes(watch=report)["DOC-INPUT-BOUND"].severity.value == "error"
    # ... or when the epochs' first steps hold it (buffers start empty with each epoch's new iterator).
    report.timing.input_median_percent, report.timing.epoch_start_input_share = 1.0, 0.8
    assert codes(watch=report)["DOC-INPUT-BOUND"].severity.value == "error"


def test_the_watcher_times_each_steps_wait_and_marks_epoch_starts(tmp_path):
    """A generator that sleeps at each epoch's first element only: the waits sit in the epochs' first steps."""
    import time

    import tensorflow as tf

    from tfpilot.diagnose import watch

    def rows():
        time.sleep(0.05)  # a slow open (a file, a connection) at each epoch start
        yield from range(24)

    dataset = tf.data.Dataset.from_generator(rows, output_signature=tf.TensorSpec((), tf.int64)).batch(2)
    step = tf.function(lambda x: tf.reduce_sum(x * 2))
    with watch(tmp_path / "epochs", profile=False) as session:
        for _ in range(4):
            for batch in dataset:
                step(batch)
    timing = session.report.timing
    assert timing is not None and timing.input_median_percent is not None
    assert timing.epoch_start_input_share is not None and timing.epoch_start_input_share >= 0.5, timing
