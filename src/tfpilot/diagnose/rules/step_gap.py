"""DOC-STEP-GAP: idle time between steps not explained by input waits or host syncs.

Python work between compiled calls (logging, metric bookkeeping, checkpoint logic, sleeps)
leaves the accelerator idle. Measured from wall-clock step boundaries (watcher or ProfileHook).

Guarding against false positives on a busy host: when several processes share 2 cores, the
scheduler stops the training process at random points for several milliseconds. A stop that lands
between two compiled calls looks like idle time, and a handful of them is enough to push a *mean*
gap over the thresholds. The rule therefore uses the *median* step and median gap: host work in
the loop recurs in every step and moves the median, scheduler stops hit a minority of the gaps and
do not. The watcher also leaves out its own bookkeeping and the profiler's start/stop.
"""

from __future__ import annotations

import statistics

from tfpilot.diagnose.rules.base import Observations
from tfpilot.diagnose.watchers import EAGER_DRIVER
from tfpilot.findings import Finding, Severity

CODE = "DOC-STEP-GAP"
IDLE_PERCENT = 10.0
MIN_IDLE_MS = 1.0
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
    step = timing.step_median_ms or timing.step_ms
    return idle, 100.0 * idle / step if step else 0.0, timing.steps


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
    if percent < IDLE_PERCENT or idle_ms < MIN_IDLE_MS:
        return []
    return [
        Finding(
            code=CODE,
            severity=Severity.WARNING,
            title="Idle time between steps",
            message=f"{idle_ms:.1f} ms per step (median; {percent:.1f}% of wall time) pass between compiled steps doing neither input nor device work",
            location=observations.location,
            evidence={
                "idle_ms_per_step": round(idle_ms, 2),
                "idle_percent": round(percent, 1),
                "steps": steps,
                "measured_by": source,
            },
            fix=_FIT_FIX if observations.under_keras_fit() else _LOOP_FIX,
        )
    ]
