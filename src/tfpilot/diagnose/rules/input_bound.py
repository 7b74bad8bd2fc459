"""DOC-INPUT-BOUND: steps wait for tf.data (TF Profiler thresholds: >=5% moderate, >=20% high).

The share comes from the profile's step breakdown (input time inside the step markers); for
scripts that iterate in Python it falls back to the watcher's time in ``next()``. The dominant
tf.data stage is the iterator with the most self time, skipping Root and Prefetch, whose self
time is only the wait for the stages below them.

Guarding against false positives on a busy host (CI with ``pytest -n 2``, shared machines):

- an absolute floor on input wait per step as well as the percentage, higher for the watcher's
  Python-side ``next()`` timing, which includes its own dispatch cost;
- the wait must be explained by the pipeline's own work: the self time of the producing tf.data
  stages per step (measured in the same profile) must be at least CONTENTION_RATIO of the wait.
  A cached, prefetched pipeline whose stages take 0.03 ms per batch but whose consumer waited
  1 ms was not slow: its producer thread was not scheduled because the CPUs were oversubscribed,
  and no change to the pipeline would help;
- the median profiled step must wait too: one step in five that found the prefetch buffer empty
  (the scheduler kept tf.data's threads off the CPUs for a while) is no input-bound program, a
  pipeline that cannot keep up makes every step wait.
"""

from __future__ import annotations

import statistics

from tfpilot.diagnose.rules.base import Observations
from tfpilot.findings import Finding, Severity

CODE = "DOC-INPUT-BOUND"
MODERATE_PERCENT = 5.0
HIGH_PERCENT = 20.0
# An iterator next() on prefetched data costs ~0.3 ms from Python: below this floor a tiny step only
# looks input-bound.
MIN_INPUT_MS = 1.0
# Python-side next() timing includes the call's own overhead (~0.3-1 ms on a loaded 2-core host).
MIN_WATCHER_INPUT_MS = 2.0
# Pipeline work per step below this fraction of the wait: the host was oversubscribed, not the pipeline slow.
CONTENTION_RATIO = 0.25
_WAITING_STAGES = {"Root", "Prefetch", "Iterator", "ForeverRepeat", "Repeat", "Take", "Skip"}

_FIXES = {
    "Map": "the map runs sequentially: pass num_parallel_calls=tf.data.AUTOTUNE, cache() after deterministic work, "
    "and end the pipeline with .prefetch(tf.data.AUTOTUNE)",
    "MapAndBatch": "the map (fused with batch) runs sequentially: pass num_parallel_calls=tf.data.AUTOTUNE to map(), "
    "or batch first and map a vectorised function; end with .prefetch(tf.data.AUTOTUNE)",
    "ParallelMap": "the map is already parallel: cache() its output if it is deterministic, vectorise it (batch before map), "
    "or move the work offline",
    "ParallelMapV2": "the map is already parallel: cache() its output if it is deterministic, vectorise it (batch before map), "
    "or move the work offline",
    "TFRecord": "reading files is the bottleneck: interleave files with num_parallel_calls=tf.data.AUTOTUNE, cache, prefetch",
    "FlatMap": "reading files is the bottleneck: interleave(..., num_parallel_calls=tf.data.AUTOTUNE) instead of flat_map",
    "Interleave": "pass num_parallel_calls=tf.data.AUTOTUNE to interleave and raise cycle_length",
    "Generator": "a Python generator feeds the pipeline (one thread; a later map's num_parallel_calls does not help): "
    "interleave several from_generator shards with num_parallel_calls=tf.data.AUTOTUNE, prefetch, cache() if it "
    "repeats, or write TFRecords once",
    "Batch": "batching dominates: use a larger map granularity or batch(..., num_parallel_calls=tf.data.AUTOTUNE)",
}


def _dominant_stage(observations: Observations):
    summary = observations.summary
    if summary is None:
        return None
    busy = [s for s in summary.input_stages if s.stage not in _WAITING_STAGES and s.self_time_ms > 0]
    return max(busy, key=lambda s: s.self_time_ms) if busy else None


def pipeline_work_ms_per_step(observations: Observations) -> float | None:
    """Self time of the producing tf.data stages per captured step, or None without stage data."""
    summary = observations.summary
    if summary is None or not summary.input_stages:
        return None
    busy = sum(s.self_time_ms for s in summary.input_stages if s.stage not in _WAITING_STAGES)
    return busy / summary.captured_steps


def _median_step_input_percent(observations: Observations) -> float | None:
    """Input share of the median profiled step (None with fewer than 3 per-step rows)."""
    rows = observations.summary.steps.per_step if observations.summary is not None else []
    if len(rows) < 3:
        return None
    shares = [100.0 * r["input_ms"] / r["step_ms"] for r in rows if r.get("step_ms")]
    return statistics.median(shares) if shares else None


def check(observations: Observations) -> list[Finding]:
    summary, watch = observations.summary, observations.watch
    source = None
    if summary is not None and summary.steps.steps:
        percent, input_ms, step_ms, source = (
            summary.steps.input_percent,
            summary.steps.input_ms,
            summary.steps.step_ms,
            "profile",
        )
    if watch is not None and watch.timing is not None and source is None:
        # Without a profile, the watcher's time in Python-side next() is the measure.
        percent, input_ms, step_ms, source = (
            watch.timing.input_percent,
            watch.timing.input_ms,
            watch.timing.step_ms,
            "watcher",
        )
    if source is None or percent < MODERATE_PERCENT:
        return []
    if input_ms < (MIN_WATCHER_INPUT_MS if source == "watcher" else MIN_INPUT_MS):
        return []
    work_ms = pipeline_work_ms_per_step(observations)
    if work_ms is not None and work_ms < CONTENTION_RATIO * input_ms:
        return []
    median_percent = _median_step_input_percent(observations) if source == "profile" else None
    if median_percent is not None and median_percent < MODERATE_PERCENT:
        return []
    stage = _dominant_stage(observations)
    python_ops = bool(summary and summary.host_python_ops)
    severity = Severity.ERROR if percent >= HIGH_PERCENT else Severity.WARNING
    level = "highly" if percent >= HIGH_PERCENT else "moderately"
    evidence = {
        "input_percent": round(percent, 1),
        "input_ms_per_step": round(input_ms, 2),
        "step_ms": round(step_ms, 2),
        "measured_by": source,
    }
    if work_ms is not None:
        evidence["pipeline_work_ms_per_step"] = round(work_ms, 2)
    message = f"{percent:.1f}% of step time ({input_ms:.1f} of {step_ms:.1f} ms) is spent waiting for input: the program is {level} input-bound"
    fix = "parallelise the pipeline: map(..., num_parallel_calls=tf.data.AUTOTUNE), cache(), prefetch(tf.data.AUTOTUNE)"
    location = observations.location
    if stage is not None and summary is not None:
        total = sum(s.self_time_ms for s in summary.input_stages if s.stage not in _WAITING_STAGES) or 1.0
        evidence.update(
            {
                "dominant_stage": stage.stage,
                "stage_iterator": stage.name,
                "stage_share_percent": round(100.0 * stage.self_time_ms / total, 1),
            }
        )
        message += f"; the dominant tf.data stage is {stage.stage} ({stage.name})"
        fix = _FIXES.get(stage.stage, fix)
        if "::Interleave" in stage.name:
            # The slow source sits under a sequential interleave: parallelising that interleave is the fix.
            fix = _FIXES["Interleave"]
        location = stage.name
    if summary is not None and summary.input_stages and not any(s.stage == "Prefetch" for s in summary.input_stages):
        evidence["prefetch"] = False
        message += "; the pipeline has no prefetch"
        fix += "; end the pipeline with .prefetch(tf.data.AUTOTUNE) so input overlaps the step"
    interleaved = stage is not None and "::Interleave" in stage.name
    if python_ops and not interleaved and stage is not None and stage.stage == "Generator":
        fix = _FIXES["Generator"]
    elif python_ops and not interleaved:
        fix = (
            "the pipeline calls a py_function/numpy_function: num_parallel_calls runs it in parallel when it sleeps, does "
            "I/O or calls NumPy (they release the GIL); rewrite pure-Python loops with TF ops; " + fix
        )
    return [
        Finding(
            code=CODE,
            severity=severity,
            title="Input-bound training steps",
            message=message,
            location=location,
            evidence=evidence,
            fix=fix,
        )
    ]
