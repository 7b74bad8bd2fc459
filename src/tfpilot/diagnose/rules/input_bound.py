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
- without a profile, the same test on CPU: a pipeline of CPU work only (in-memory slices, batch, shuffle, maps of
  TensorFlow ops) whose threads' CPU was under CONTENTION_RATIO of the wait and of the step's CPU was kept off
  the CPUs, not too slow (the watcher reads the process's CPU over each next());
- the median profiled step must wait too: one step in five that found the prefetch buffer empty
  (the scheduler kept tf.data's threads off the CPUs for a while) is no input-bound program, a
  pipeline that cannot keep up makes every step wait.

Judged on the steady state: the window's first measured steps may still be served from buffers filled
during warm-up (an AUTOTUNE prefetch grows past what the profile's earliest iterator stats say, so the
drain estimate can be short). A pipeline slower than the step drains those buffers and then makes every
step wait; one that keeps up never waits. When the whole window does not say input-bound, the profile
verdict reads its last half (STEADY_FRACTION, at least MIN_STEADY_STEPS steps): its mean wait, and its
median step's wait, against the same 5% / 20% lines. The whole window is read first: on a borderline
pipeline the half window's median is the noisier of the two.
"""

from __future__ import annotations

import dataclasses
import statistics

from tfpilot.diagnose.pipeline import PipelineShape
from tfpilot.diagnose.rules.base import Observations
from tfpilot.diagnose.watchers import StepTiming
from tfpilot.findings import Finding, Severity

CODE = "DOC-INPUT-BOUND"
MODERATE_PERCENT = 5.0
HIGH_PERCENT = 20.0
# An iterator next() on prefetched data costs ~0.3 ms from Python: below this floor a tiny step only
# looks input-bound.
MIN_INPUT_MS = 1.0
# Python-side next() timing includes the call's own overhead (~0.3-1 ms on a loaded 2-core host).
MIN_WATCHER_INPUT_MS = 2.0
# The steady state: the last half of the measured steps, when that leaves at least MIN_STEADY_STEPS.
STEADY_FRACTION = 0.5
MIN_STEADY_STEPS = 3
# Pipeline work per step below this fraction of the wait: the host was oversubscribed, not the pipeline slow.
CONTENTION_RATIO = 0.25
# Share of the run's input wait in the epochs' first steps above which the wait is an epoch-start drain.
EPOCH_START_SHARE = 0.5
# About one new eager iterator per step (model.predict or evaluate called every step, next(iter(ds)) in the loop):
# each step's wait is a new iterator's start-up (its threads, its first batch), which no pipeline change removes.
ITERATORS_PER_STEP = 0.9
_NEW_ITERATOR_FIX = (
    "make the iterator once, before the loop (it = iter(dataset); next(it) each step), so its buffers fill ahead of "
    "the step; for model.predict / model.evaluate on one batch per step call model(x, training=False) or "
    "predict_on_batch / test_on_batch instead: each predict call builds a new iterator over a new dataset"
)
_WAITING_STAGES = {"Root", "Prefetch", "Iterator", "ForeverRepeat", "Repeat", "Take", "Skip"}

_PARALLEL_MAP_STAGES = {"ParallelMap", "ParallelMapV2"}
_PARALLEL_INTERLEAVE_STAGES = {
    "ParallelInterleave",
    "ParallelInterleaveV2",
    "ParallelInterleaveV3",
    "ParallelInterleaveV4",
}
# Stages whose work is CPU only (no files, no Python generator): a slow one burns CPU while the step waits for it.
_CPU_ONLY_STAGES = {
    "TensorSlice",
    "Range",
    "Batch",
    "ParallelBatch",
    "PaddedBatch",
    "Unbatch",
    "Shuffle",
    "Repeat",
    "Take",
    "Skip",
    "Prefetch",
    "Options",
    "Cache",
    "Filter",
    "Map",
    "ParallelMap",
}
_CACHE_STAGES = {"MemoryCache", "MemoryCacheImpl", "Cache", "CacheImpl", "FileCache", "FileCacheImpl"}


@dataclasses.dataclass
class PipelineFacts:
    """What the pipeline already does, from the profile's iterator names and the watcher's Dataset walk."""

    cached: bool = False
    prefetched: bool = False  # the script's own prefetch (TF 2.21 also injects one at the end)
    parallel_map: bool = False
    sequential_map: bool = False
    parallel_interleave: bool = False
    parallel_batch: bool = False
    generator: bool = False
    described: bool = False  # the watcher read the Dataset objects (else only the profile's names)
    # An AUTOTUNE map running at tf.data's CPU budget (the core count), from the profile's iterator stats.
    autotune_capped_at: int | None = None
    # "random" or "stateful" when a map's output changes between epochs: cache() after it would freeze it.
    changing_map: str | None = None

    def already(self) -> list[str]:
        done = []
        if self.parallel_map:
            done.append("its map is parallel")
        if self.parallel_interleave:
            done.append("its interleave is parallel")
        if self.parallel_batch:
            done.append("its batch is parallel")
        if self.cached:
            done.append("it is cached")
        if self.prefetched:
            done.append("it prefetches")
        return done


def pipeline_facts(observations: Observations) -> PipelineFacts:
    facts = PipelineFacts()
    summary, watch = observations.summary, observations.watch
    for stage in summary.input_stages if summary is not None else []:
        parts = {part.split("[")[0] for part in stage.name.split("::")}
        facts.cached |= bool(parts & _CACHE_STAGES)
        facts.parallel_map |= bool(parts & _PARALLEL_MAP_STAGES)
        facts.parallel_interleave |= bool(parts & _PARALLEL_INTERLEAVE_STAGES)
        facts.parallel_batch |= "ParallelBatch" in parts
        facts.sequential_map |= "Map" in parts
        facts.generator |= "Generator" in parts
    stats = getattr(summary, "pipeline_stats", None) or {}
    budget = stats.get("cpu_budget")
    for name, values in stats.get("iterators", {}).items():
        last = name.rsplit("::", 1)[-1]
        if last in ("MapAndBatch", *_PARALLEL_MAP_STAGES) and values.get("autotune") is True:
            if isinstance(budget, int) and values.get("parallelism") == budget:
                facts.autotune_capped_at = budget
    pipelines = watch.pipelines if watch is not None else []
    if pipelines:
        shape = PipelineShape.from_dict(pipelines[0])
        kinds = set(shape.kinds)
        facts.described = True
        facts.cached |= "Cache" in kinds
        facts.prefetched = "Prefetch" in kinds
        facts.parallel_map |= "ParallelMap" in kinds
        # The profile cannot tell a sequential map fused with batch (MapAndBatch) from a parallel one.
        facts.sequential_map = "Map" in kinds
        facts.parallel_interleave |= "ParallelInterleave" in kinds
        facts.parallel_batch |= "ParallelBatch" in kinds
        facts.generator |= shape.generator
        states = [stage.state for stage in shape.random_or_stateful_maps]
        facts.changing_map = "random" if "random" in states else (states[0] if states else None)
    return facts


def _ending(facts: PipelineFacts, *, cache: bool = True) -> list[str]:
    """cache() / prefetch advice, leaving out what the pipeline already has."""
    steps = []
    if cache and not facts.cached:
        steps.append(cache_advice(facts))
    if not facts.prefetched:
        steps.append("end the pipeline with .prefetch(tf.data.AUTOTUNE)")
    return steps


def cache_advice(facts: PipelineFacts) -> str:
    """Where a cache() may go: never after a random or stateful map, whose output must change every epoch."""
    if facts.changing_map == "random":
        return (
            "cache() the deterministic stages before the random map (decoding, resizing), never after it: caching "
            "its output would freeze the augmentation to one draw"
        )
    if facts.changing_map == "stateful":
        return (
            "cache() only the stages before the stateful map (py_function, variables): caching its output would "
            "replay the first epoch's values"
        )
    return "cache() after the deterministic stages if the data fits in memory or on disk"


def fix_for_stage(stage: str, iterator: str, facts: PipelineFacts) -> str:
    """Advice for the slowest tf.data stage that does not ask for anything the pipeline already has."""
    above_cache = facts.cached and not any(part.split("[")[0] in _CACHE_STAGES for part in iterator.split("::"))
    map_is_parallel = stage in _PARALLEL_MAP_STAGES or (
        stage == "MapAndBatch" and facts.parallel_map and not facts.sequential_map
    )
    if stage in ("Map", "MapAndBatch") and not map_is_parallel:
        what = "the map (fused with batch) runs sequentially" if stage == "MapAndBatch" else "the map runs sequentially"
        steps = [f"{what}: pass num_parallel_calls=tf.data.AUTOTUNE to map()", *_ending(facts)]
    elif stage in _PARALLEL_MAP_STAGES or stage == "MapAndBatch":
        steps = ["the map already runs in parallel: vectorise it (batch before map) or move the work offline"]
        steps += _ending(facts)
    elif stage == "Generator":
        steps = [
            "a Python generator feeds the pipeline (one thread; a later map's num_parallel_calls does not help): "
            "interleave several from_generator shards with num_parallel_calls=tf.data.AUTOTUNE"
        ]
        steps += _ending(facts)
        if not facts.cached:
            steps.append("or write the data to TFRecord once")
    elif stage in ("Interleave",) or "::Interleave" in iterator:
        steps = ["the interleave runs sequentially: pass num_parallel_calls=tf.data.AUTOTUNE to interleave()"]
        steps += _ending(facts)
    elif stage in _PARALLEL_INTERLEAVE_STAGES or stage in ("TFRecord", "FlatMap"):
        if facts.parallel_interleave:
            steps = [
                "reading is the bottleneck though the interleave is already parallel: raise cycle_length, "
                "pass deterministic=False, or use fewer, larger files"
            ]
        else:
            steps = [
                "reading files is the bottleneck: interleave(..., num_parallel_calls=tf.data.AUTOTUNE) over the files"
            ]
        steps += _ending(facts)
    elif stage in ("Batch", "ParallelBatch"):
        if facts.parallel_batch or stage == "ParallelBatch":
            steps = ["batching dominates though it is already parallel: batch fewer, larger elements (vectorised maps)"]
        else:
            steps = ["batching dominates: batch(..., num_parallel_calls=tf.data.AUTOTUNE)"]
        steps += _ending(facts)
    else:
        steps = []
        if not facts.parallel_map:
            steps.append("pass num_parallel_calls=tf.data.AUTOTUNE to map()")
        steps += _ending(facts)
        steps = steps or ["the pipeline is parallel, cached and prefetched already: make its slowest stage cheaper"]
    if above_cache and stage not in ("Generator", "TFRecord"):
        steps.insert(1, f"{stage} runs after cache(), every epoch: move it before cache() if it is deterministic")
    return "; ".join(steps)


def python_op_advice(facts: PipelineFacts) -> str:
    """For a py_function/numpy_function in a map: what parallel calls can and cannot do, given the map."""
    if facts.parallel_map and not facts.sequential_map:
        advice = (
            "the pipeline's py_function/numpy_function already runs in a parallel map: that helps only while it "
            "sleeps, does I/O or calls NumPy (they release the GIL); rewrite pure-Python loops with TF ops"
        )
        if facts.autotune_capped_at is not None:
            # AUTOTUNE never runs more calls than tf.data's CPU budget; a sleeping call does not use a core.
            advice += (
                f"; AUTOTUNE runs it {facts.autotune_capped_at} calls at a time (tf.data's CPU budget, the core "
                "count): a function that sleeps or waits on I/O needs more in flight, so pass an explicit "
                "num_parallel_calls (e.g. 16) and set tf.data.Options().threading.private_threadpool_size to match"
            )
        return advice
    return (
        "the pipeline calls a py_function/numpy_function: num_parallel_calls runs it in parallel when it sleeps, does "
        "I/O or calls NumPy (they release the GIL); rewrite pure-Python loops with TF ops"
    )


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


def steady_rows(observations: Observations) -> list[dict]:
    """The measured steps past any buffer that warm-up filled: the last half of them, or all when too few."""
    rows = list(observations.summary.steps.per_step) if observations.summary is not None else []
    rows.sort(key=lambda r: _row_step(r.get("step")))
    tail = len(rows) - int(len(rows) * STEADY_FRACTION)
    return rows[-tail:] if tail >= MIN_STEADY_STEPS else rows


def _row_step(name: object) -> int:
    last = str(name).rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


def _median_step_input_percent(rows: list[dict]) -> float | None:
    """Input share of the median profiled step (None with fewer than 3 per-step rows)."""
    if len(rows) < 3:
        return None
    shares = [100.0 * r["input_ms"] / r["step_ms"] for r in rows if r.get("step_ms")]
    return statistics.median(shares) if shares else None


def _rows_verdict(observations: Observations, rows: list[dict]) -> tuple[float, float, float] | None:
    """(percent, input_ms, step_ms) when these measured steps wait for input, else None."""
    summary = observations.summary
    assert summary is not None
    if rows and all(r.get("step_ms") for r in rows):
        step_ms = statistics.fmean(float(r["step_ms"]) for r in rows)
        input_ms = statistics.fmean(float(r["input_ms"]) for r in rows)
        percent = 100.0 * input_ms / step_ms
    else:  # no per-step rows (the wall-clock fallback of an old summary): the window's means
        step_ms, input_ms, percent = summary.steps.step_ms, summary.steps.input_ms, summary.steps.input_percent
    if percent < MODERATE_PERCENT or input_ms < MIN_INPUT_MS:
        return None
    work_ms = pipeline_work_ms_per_step(observations)
    if work_ms is not None and work_ms < CONTENTION_RATIO * input_ms:
        return None
    median_percent = _median_step_input_percent(rows)
    if median_percent is not None and median_percent < MODERATE_PERCENT:
        return None
    return percent, input_ms, step_ms


def _profile_verdict(observations: Observations) -> tuple[float, float, float, int | None] | None:
    """(percent, input_ms, step_ms, steady steps or None) when the window's steps wait for input, else None.

    The whole window first (most of its steps waited), then its steady last half (the first steps read batches
    that warm-up buffered, the rest waited): a wait in either is the program's.
    """
    summary = observations.summary
    if summary is None or not summary.steps.steps:
        return None
    if summary.capture.get("in_cache_fill"):
        return None  # the script ended inside the epoch that fills its cache: waiting there is expected
    rows = list(summary.steps.per_step)
    whole = _rows_verdict(observations, rows)
    if whole is not None:
        return (*whole, None)
    steady = steady_rows(observations)
    if len(steady) == len(rows):
        return None
    tail = _rows_verdict(observations, steady)
    return None if tail is None else (*tail, len(steady))


def _watcher_verdict(observations: Observations) -> tuple[float, float, float] | None:
    """(percent, input_ms, step_ms) from the watcher's next() timing over the whole run, when it says input-bound.

    The profile window is a few steps; the watcher times every step after warm-up (and after a cache has
    filled). A pipeline without cache() whose buffers empty at every epoch start waits there, in one step
    per epoch: a window without an epoch start misses it, one with a slow first step dilutes it (the mean
    of 4 steps), while the run's total wait is what the script loses.
    """
    watch = observations.watch
    if watch is None or watch.timing is None or watch.cache_filled is False:
        return None  # no timing, or every timed step belonged to the epoch that fills the cache
    timing = watch.timing
    if timing.input_percent < MODERATE_PERCENT or timing.input_ms < MIN_WATCHER_INPUT_MS:
        return None
    work_ms = pipeline_work_ms_per_step(observations)
    if work_ms is not None and work_ms < CONTENTION_RATIO * timing.input_ms:
        return None
    if work_ms is None and _producers_idle_through_the_wait(observations, timing):
        return None
    if _scattered_waits(timing):
        return None
    return timing.input_percent, timing.input_ms, timing.step_ms


def _producers_idle_through_the_wait(observations: Observations, timing: StepTiming) -> bool:
    """Without a profile: a pipeline of CPU work only whose threads did not work while the step waited for it.

    In-memory slices, batching, shuffling and maps of TensorFlow ops spend CPU to make a batch; when the main thread
    waits in next(), tf.data's threads used under CONTENTION_RATIO of that wait, and their work is under
    CONTENTION_RATIO of the step's CPU too, the pipeline was not what the step waited for: the host's scheduler kept
    it off oversubscribed CPUs (CI's ``pytest -n 2``), and no pipeline change helps. Files, generators and
    py_function maps can wait without CPU (I/O, a Python sleep), so those stay judged on their wait.
    """
    if timing.input_producer_cpu_ms is None or observations.watch is None or not observations.watch.pipelines:
        return False
    shape = PipelineShape.from_dict(observations.watch.pipelines[0])
    cpu_only = not shape.generator and all(stage.kind in _CPU_ONLY_STAGES for stage in shape.stages)
    if not cpu_only or any(stage.state == "stateful" for stage in shape.random_or_stateful_maps):
        return False
    # Both small: the producers' work is under a quarter of the wait and under a quarter of the step's CPU. A slow
    # map on a loaded host gets little CPU during each wait too, yet its work is a large share of every step.
    producer = timing.input_producer_cpu_ms
    return producer < CONTENTION_RATIO * timing.input_ms and producer < CONTENTION_RATIO * timing.step_cpu_ms


def _scattered_waits(timing: StepTiming) -> bool:
    """The run's wait sits in a few random steps: neither the median step nor the epochs' first steps hold it.

    A pipeline slower than the step makes every step wait; one whose buffers start empty at each epoch (no cache, a new
    iterator per epoch) makes each epoch's first step wait. A mean pushed over the line by a few long waits elsewhere
    is a loaded host's scheduler keeping tf.data's threads off the CPUs (CI's ``pytest -n 2`` beside a CPU burner):
    no pipeline change removes it.
    """
    if timing.input_median_percent is None or timing.epoch_start_input_share is None:
        return False  # not measured (a report written before these fields)
    every_step = timing.input_median_percent >= MODERATE_PERCENT
    epoch_starts = timing.epoch_start_input_share >= EPOCH_START_SHARE
    return not (every_step or epoch_starts)


def iterators_per_step(observations: Observations) -> float | None:
    """Eager tf.data iterators the script made per step of the driving function (None when unknown)."""
    watch = observations.watch
    if watch is None or not watch.iterators_created:
        return None
    driver = observations.driver()
    steps = driver.calls if driver is not None else watch.eager_gradient_calls
    return watch.iterators_created / steps if steps else None


def _iterator_per_step_finding(finding: Finding, per_step: float) -> Finding:
    """Info, not a slow pipeline: each step waited for a new iterator's start-up, which a faster pipeline cannot remove."""
    return Finding(
        code=CODE,
        severity=Severity.INFO,
        title="Input wait of a new iterator every step",
        message=(
            f"{finding.evidence['input_percent']:.1f}% of step time is spent in next(), but the script made "
            f"{per_step:.2f} new tf.data iterators per step: each step waited for a fresh iterator to start, a per-call "
            "cost of building the iterator, not a pipeline too slow to keep up"
        ),
        location=finding.location,
        evidence={**finding.evidence, "iterators_per_step": round(per_step, 2)},
        fix=_NEW_ITERATOR_FIX,
    )


def check(observations: Observations) -> list[Finding]:
    findings = _check(observations)
    per_step = iterators_per_step(observations)
    if findings and per_step is not None and per_step >= ITERATORS_PER_STEP:
        return [_iterator_per_step_finding(findings[0], per_step)]
    return findings


def _check(observations: Observations) -> list[Finding]:
    summary = observations.summary
    source = "profile"
    steady: int | None = None
    profiled = _profile_verdict(observations)
    verdict = None if profiled is None else profiled[:3]
    if profiled is not None:
        steady = profiled[3]
    else:
        # The profile's window (or no profile) does not show it: the watcher's whole-run timing may.
        verdict, source = _watcher_verdict(observations), "watcher"
    if verdict is None:
        return []
    percent, input_ms, step_ms = verdict
    work_ms = pipeline_work_ms_per_step(observations)
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
    if source == "watcher" and summary is not None and summary.steps.steps:
        evidence["profile_input_percent"] = round(summary.steps.input_percent, 1)
    if steady is not None and summary is not None:
        # Judged on the last steps of the window; the whole window's mean stays beside it.
        evidence["steady_steps"] = steady
        evidence["window_input_percent"] = round(summary.steps.input_percent, 1)
    if work_ms is not None:
        evidence["pipeline_work_ms_per_step"] = round(work_ms, 2)
    message = f"{percent:.1f}% of step time ({input_ms:.1f} of {step_ms:.1f} ms) is spent waiting for input: the program is {level} input-bound"
    facts = pipeline_facts(observations)
    fix = fix_for_stage("", "", facts)
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
        message += f"; the slowest tf.data stage is {stage.stage} ({stage.name})"
        # A slow source under a sequential interleave: parallelising that interleave is the fix.
        fix = fix_for_stage("Interleave" if "::Interleave" in stage.name else stage.stage, stage.name, facts)
        location = stage.name
    profiled_prefetch = summary is not None and any(
        "Prefetch" in (part.split("[")[0] for part in s.name.split("::")) for s in summary.input_stages
    )
    if summary is not None and summary.input_stages and not profiled_prefetch and not facts.prefetched:
        evidence["prefetch"] = False
        facts.prefetched = False
        message += "; the pipeline has no prefetch"
        if "prefetch(" not in fix:
            fix += "; end the pipeline with .prefetch(tf.data.AUTOTUNE) so input overlaps the step"
    already = facts.already()
    if already:
        message += f" (the pipeline already: {', '.join(already)})"
        evidence["pipeline_already"] = already
    interleaved = stage is not None and "::Interleave" in stage.name
    if python_ops and not interleaved and not (stage is not None and stage.stage == "Generator"):
        fix = python_op_advice(facts) + "; " + fix
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
