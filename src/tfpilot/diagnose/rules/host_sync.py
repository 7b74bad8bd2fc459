"""DOC-HOST-SYNC: the loop reads a tensor back to Python every step (.numpy(), float(loss), if tensor:).

Each read blocks Python until the device has finished everything queued so far, so the next
step cannot be dispatched early: on a GPU it shows as a gap between steps.
"""

from __future__ import annotations

from tfpilot.diagnose.rules.base import Observations
from tfpilot.findings import Finding, Severity

CODE = "DOC-HOST-SYNC"
MIN_SYNCS_PER_STEP = 0.9


def check(observations: Observations) -> list[Finding]:
    watch = observations.watch
    timing = watch.timing if watch is not None else None
    if timing is None or timing.syncs_per_step < MIN_SYNCS_PER_STEP:
        return []
    location = next(iter(timing.sync_locations), observations.location)
    share = 100.0 * timing.sync_ms / timing.step_ms if timing.step_ms else 0.0
    return [
        Finding(
            code=CODE,
            severity=Severity.WARNING,
            title="Host sync every step",
            message=(
                f"the loop copies a tensor to Python {timing.syncs_per_step:.2f} times per step "
                f"({timing.sync_ms:.2f} ms per step, {share:.1f}% of the {timing.step_ms:.1f} ms step; "
                f"gap between steps {timing.gap_ms:.2f} ms)"
            ),
            location=location,
            evidence={
                "syncs_per_step": round(timing.syncs_per_step, 2),
                "sync_ms_per_step": round(timing.sync_ms, 3),
                "sync_share_percent": round(share, 1),
                "gap_ms": round(timing.gap_ms, 3),
                "steps": timing.steps,
                "locations": timing.sync_locations,
            },
            fix="accumulate in a keras.metrics.Mean or tf.Variable inside the step and read it every N steps "
            "(or at epoch end); log with tf.summary inside the step instead of float(loss)",
        )
    ]
