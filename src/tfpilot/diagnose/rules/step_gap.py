"""DOC-STEP-GAP: idle time between steps not explained by input waits or host syncs.

Python work between compiled calls (logging, metric bookkeeping, checkpoint logic, sleeps)
leaves the accelerator idle. Measured from wall-clock step boundaries (watcher or ProfileHook).
"""

from __future__ import annotations

from tfpilot.diagnose.rules.base import Observations
from tfpilot.diagnose.watchers import EAGER_DRIVER
from tfpilot.findings import Finding, Severity

CODE = "DOC-STEP-GAP"
IDLE_PERCENT = 10.0
MIN_IDLE_MS = 1.0


def _from_capture(observations: Observations) -> tuple[float, float, int] | None:
    capture = observations.summary.capture if observations.summary is not None else {}
    gaps, steps = capture.get("gaps_ms") or [], capture.get("step_times_ms") or []
    if len(gaps) < 2 or not steps:
        return None
    gap = sum(gaps) / len(gaps)
    step = sum(steps) / len(steps)
    return gap, 100.0 * gap / (gap + step), len(gaps)


def check(observations: Observations) -> list[Finding]:
    watch = observations.watch
    timing = watch.timing if watch is not None else None
    if timing is not None and timing.driver != EAGER_DRIVER:
        idle_ms, percent, steps, source = timing.idle_ms, timing.idle_percent, timing.steps, "watcher"
    else:
        measured = _from_capture(observations)
        if measured is None:
            return []
        (idle_ms, percent, steps), source = measured, "profile hook"
    if percent < IDLE_PERCENT or idle_ms < MIN_IDLE_MS:
        return []
    return [
        Finding(code=CODE, severity=Severity.WARNING, title="Idle time between steps",
                message=f"{idle_ms:.1f} ms per step ({percent:.1f}% of wall time) pass between compiled steps doing neither input nor device work",
                location=observations.location,
                evidence={"idle_ms_per_step": round(idle_ms, 2), "idle_percent": round(percent, 1), "steps": steps, "measured_by": source},
                fix="move per-step Python work (logging, bookkeeping, callbacks) out of the loop or run it every N steps; "
                "raise steps_per_execution so one call runs several steps")
    ]
