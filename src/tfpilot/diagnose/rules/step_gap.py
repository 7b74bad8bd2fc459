"""DOC-STEP-GAP: idle time between steps not explained by input waits, host syncs or other compiled calls.

Python work between compiled calls (logging, metric bookkeeping, checkpoint logic, sleeps)
leaves the accelerator idle. Measured from wall-clock step boundaries (watcher or ProfileHook).

Decided by ratios and counts, never by a gap in microseconds (a loaded host stretches every gap):

- the gap's share of the step: the *median* idle over the *median* step (the step includes its gap), in
  CPU time on one core's terms (the main thread's CPU in the gap over ``base.step_on_one_core_ms``, the
  smaller of the step's wall and process CPU time): load stretches wall time unevenly, not the CPU that the
  gap's Python takes, and that Python runs on one thread however many cores the step's kernels use. Time the gap spends off the CPU
  (a sleep, a wait on I/O) is a finding when it is half the step's wall time (UNATTRIBUTED_PERCENT), with
  or without reads: a loaded host's scheduler stops look the same;
  Host work in the loop recurs in every step and moves the median; the scheduler stopping a loaded
  process at random points, or a GC pause, hits a minority of gaps and does not. The watcher leaves
  out its own bookkeeping and the profiler's start/stop, and counts other tf.functions' top-level calls
  between two steps (an RL loop's action function beside its train step) as compiled work, not idle;
- what the gap is made of. With user code seen working between steps every step (>= 0.9 host reads
  per step: prints, f-strings of metrics, ``.numpy()``; or >= 0.9 new tf.data iterators per step:
  ``model.predict`` per step), an idle share of IDLE_PERCENT (10%) is material. Without such
  evidence the gap may be the loop's own dispatch (a Python ``for``, argument conversion, a few
  eager ops between tiny compiled steps), which only a loop inside tf.function removes: the gap must
  then hold at least UNATTRIBUTED_PERCENT (50%) of the step, i.e. the loop spends as long between its
  steps as in them.
"""

from __future__ import annotations

import statistics

from tfpilot.diagnose.rules.base import Observations, short_location, step_on_one_core_ms
from tfpilot.diagnose.watchers import EAGER_DRIVER
from tfpilot.findings import Finding, Severity

CODE = "DOC-STEP-GAP"
# Idle share of the step that is material when the gap is attributable to user code (reads, new iterators).
IDLE_PERCENT = 10.0
# Idle share that is material without that evidence: the loop is idle between steps as long as it runs them.
UNATTRIBUTED_PERCENT = 50.0
# Per step, what shows user code working between steps: host reads into Python, new tf.data iterators.
EVIDENCE_PER_STEP = 0.9
# Fewer gaps than this are no pattern (one slow step, or the profiler's first step).
MIN_GAPS = 3

_LOOP_FIX = (
    "move per-step Python work (logging, bookkeeping) out of the loop or run it every N steps; run several steps per "
    "tf.function call (a tf.range loop over the iterator inside it)"
)
# Under model.fit the time between steps is Keras' callbacks and progress bar: fit's own knobs are the fix.
_FIT_FIX = (
    "the time between model.fit's steps is spent in callbacks (on_train_batch_* hooks, the progress bar): do their "
    "work every N batches or on_epoch_end, pass verbose=2 (one line per epoch), and raise "
    "compile(steps_per_execution=N) so per-batch hooks run once per N steps"
)


def _from_capture(observations: Observations) -> tuple[float, float, int] | None:
    capture = observations.summary.capture if observations.summary is not None else {}
    gaps, steps = capture.get("gaps_ms") or [], capture.get("step_times_ms") or []
    if len(gaps) < MIN_GAPS or not steps:
        return None
    gap = statistics.median(gaps)
    step = statistics.median(steps)
    return gap, 100.0 * gap / (gap + step) if gap + step else 0.0, len(gaps)


def _from_watcher(observations: Observations) -> tuple[float, float, int] | None:
    timing = observations.watch.timing if observations.watch is not None else None
    if timing is None or timing.steps < MIN_GAPS:
        return None
    # watch.json written before the medians existed carries zeros: fall back to the means.
    idle = timing.idle_median_ms if timing.step_median_ms else timing.idle_ms
    return idle, work_share(timing), timing.steps


def wall_share(timing) -> float:
    """Median idle over median step, in wall time."""
    step = timing.step_median_ms or timing.step_ms
    idle = timing.idle_median_ms if timing.step_median_ms else timing.idle_ms
    return 100.0 * idle / step if step else 0.0


def work_share(timing) -> float:
    """The gap's Python work as a share of the step on one core's terms when the watcher measured CPU, else wall time.

    The main thread's CPU in the gap (outside reads, input and other calls) over the step on one core's terms
    (``base.step_on_one_core_ms``). A loaded host stretches wall time unevenly: a tiny compiled call waits for its
    threads to be scheduled (the wall share of a status line printed after every step fell from 57% to 27% with one
    CPU burner), and a read or a line of Python is descheduled mid-way (the same reads' wall share rose from 4% to
    39% at load 8); the CPU that the work takes does not move. The gap's Python runs on one thread, so a step whose
    kernels run on several cores is counted by its wall time, not by the CPU of all its cores.
    """
    if not timing.step_cpu_median_ms:
        return wall_share(timing)
    step = step_on_one_core_ms(timing)
    return 100.0 * timing.idle_cpu_median_ms / step if step else 0.0


def wait_share(timing) -> float:
    """The gap's time off the CPU (a sleep, a wait on I/O or a lock) as a share of the step, in wall time."""
    if not timing.step_cpu_median_ms:
        return 0.0
    step = timing.step_median_ms or timing.step_ms
    off_cpu = max(timing.idle_median_ms - timing.idle_cpu_median_ms, 0.0)
    return 100.0 * off_cpu / step if step else 0.0


def _gap_evidence(observations: Observations) -> dict[str, float]:
    """Counts per step that show user code working between steps (empty without a watcher's timing)."""
    watch = observations.watch
    timing = watch.timing if watch is not None else None
    if timing is None or timing.driver == EAGER_DRIVER:
        return {}
    evidence = {"syncs_per_step": round(timing.syncs_per_step, 2)}
    driver = observations.driver()
    if watch is not None and driver is not None and driver.calls:
        evidence["iterators_per_step"] = round(watch.iterators_created / driver.calls, 2)
    if timing.other_calls_per_step:
        evidence["other_calls_per_step"] = round(timing.other_calls_per_step, 2)
    evidence["idle_wall_percent"] = round(wall_share(timing), 1)
    if timing.step_cpu_median_ms:
        evidence["idle_cpu_percent"] = round(work_share(timing), 1)
        evidence["idle_off_cpu_percent"] = round(wait_share(timing), 1)
    return evidence


def _attributed(evidence: dict[str, float]) -> list[str]:
    """What in the gap is the user's: host reads or new iterators seen in about every gap."""
    seen = []
    if evidence.get("syncs_per_step", 0.0) >= EVIDENCE_PER_STEP:
        seen.append(f"{evidence['syncs_per_step']:.1f} reads of a tensor into Python")
    if evidence.get("iterators_per_step", 0.0) >= EVIDENCE_PER_STEP:
        seen.append(f"{evidence['iterators_per_step']:.1f} new tf.data iterators")
    return seen


def check(observations: Observations) -> list[Finding]:
    watch = observations.watch
    timing = watch.timing if watch is not None else None
    if timing is not None and timing.driver != EAGER_DRIVER:
        measured, source = _from_watcher(observations), "watcher"
    else:
        measured, source = _from_capture(observations), "profile hook"
    if measured is None:
        return []
    idle_ms, percent, steps = measured
    evidence = _gap_evidence(observations) if source == "watcher" else {}
    attributed = _attributed(evidence)
    # The profile hook's wall-clock capture counts nothing in its gaps: it needs the unattributed share too.
    needed = IDLE_PERCENT if attributed else UNATTRIBUTED_PERCENT
    # Time off the CPU in the gap (sleeps, I/O) cannot be told from a loaded host's scheduler stops by its
    # count of reads: it is a finding from the unattributed share only.
    waiting = wait_share(timing) if source == "watcher" and timing is not None else 0.0
    if percent < needed and waiting < UNATTRIBUTED_PERCENT:
        return []
    if percent < needed:  # found by its time off the CPU
        percent, needed = waiting, UNATTRIBUTED_PERCENT
    made_of = f"; per step the gap holds {' and '.join(attributed)}" if attributed else ""
    reads = dict(timing.sync_locations) if timing is not None and evidence.get("syncs_per_step", 0.0) else {}
    if reads and attributed:
        made_of += " (read at " + ", ".join(short_location(where) for where in list(reads)[:3]) + ")"
    # Reads seen in every gap: the finding points at the user's line that reads, not at the step function.
    location = next(iter(reads), observations.location) if attributed else observations.location
    return [
        Finding(
            code=CODE,
            severity=Severity.WARNING,
            title="Idle time between steps",
            message=(
                f"{idle_ms:.2f} ms per step (median; {percent:.1f}% of the step) pass between compiled steps doing "
                f"neither input nor device work{made_of}"
            ),
            location=location,
            evidence={
                "idle_ms_per_step": round(idle_ms, 2),
                "idle_percent": round(percent, 1),
                "steps": steps,
                "measured_by": source,
                "threshold_percent": needed,
                **evidence,
                **({"read_locations": reads} if reads else {}),
            },
            fix=_FIT_FIX if observations.under_keras_fit() else _LOOP_FIX,
        )
    ]
