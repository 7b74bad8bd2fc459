"""DOC-HOST-SYNC: the loop reads a tensor back to Python every step (.numpy(), float(loss), if tensor:).

Each read blocks Python until the device has finished everything queued so far, so the next
step cannot be dispatched early: on a GPU it shows as a gap between steps.

Found by count (>= 0.9 reads per step from the user's code); its severity comes from what the reads
measurably cost, counted with what a read forces on the device the step runs on: a warning from
MATERIAL_PERCENT (5%) of the step, info below.

- CPU (no GPU/TPU visible): a tf.function call returns when its kernels are done, so nothing queued is
  left for a read to wait for and host and step never overlap, read or no read. What the reads cost is the
  host work they come with, every step: the copy, and the Python around it (formatting and printing the
  value, appending it to a list, NumPy on the copy). Measured as the median per gap of the main thread's CPU
  between steps outside input and other compiled calls (``host_cpu_median_ms``), over the step on one core's
  terms (``base.step_on_one_core_ms``: the smaller of its wall and process CPU time). That Python runs on one
  thread: over the process's CPU of a step whose kernels use two cores it read half its share (tf#35873's
  print of loss and accuracy after every step: reads 2.7%, reads and Python 5.0-5.8%); a loaded host
  deschedules a read mid-way and stretches a tiny call's wall time, not the CPU of the work
  (p_status_bar_each_step's reads: 4.4% of the step's CPU, 39% of its wall time at load 8). Reports
  without that median (older watch.json) keep the reads' CPU over the step's CPU.
- GPU/TPU: the call returns once its kernels are queued and the read waits for them, so the host's work
  between steps (input, Python, the next dispatch) no longer overlaps the device's step. The read's cost is
  that lost overlap: the smaller of the time the read waited (the device's remaining work, a lower bound on
  it) and the host's own time per step (the step less that wait). The read's measured time alone would
  count device work that runs anyway.
"""

from __future__ import annotations

from tfpilot.diagnose.rules.base import (
    MATERIAL_PERCENT,
    Observations,
    severity_for_share,
    short_location,
    step_on_one_core_ms,
)
from tfpilot.findings import Finding

_LOOP_FIX = (
    "accumulate in a keras.metrics.Mean or tf.Variable inside the step and read it every N steps "
    "(or at epoch end); log with tf.summary inside the step instead of float(loss)"
)
# Under model.fit the reads are in callbacks: fit's own knobs and callback hooks are the fix, not the loop.
_FIT_FIX = (
    "read the value every N batches or in on_epoch_end instead of on_train_batch_end (Keras' logs already "
    "carry the loss and metrics); compile(steps_per_execution=N) runs N steps per call, so per-batch "
    "callbacks run once per N steps"
)

CODE = "DOC-HOST-SYNC"
MIN_SYNCS_PER_STEP = 0.9


def read_cost_ms(sync_ms: float, step_ms: float, *, asynchronous: bool) -> float:
    """What the reads cost per step: their copy on a synchronous (CPU) step, the lost host/device overlap otherwise."""
    if not asynchronous:
        return sync_ms
    return min(sync_ms, max(step_ms - sync_ms, 0.0))


def _counted(watch, *, host_work: bool) -> str:
    if watch is not None and watch.async_device:
        return "the host/device overlap they take away"
    return "their copy and the Python around them between steps, on one core" if host_work else "their copy"


def check(observations: Observations) -> list[Finding]:
    watch = observations.watch
    timing = watch.timing if watch is not None else None
    if timing is None or timing.syncs_per_step < MIN_SYNCS_PER_STEP:
        return []
    location = next(iter(timing.sync_locations), observations.location)
    asynchronous = bool(watch and watch.async_device)
    forced_ms = read_cost_ms(timing.sync_ms, timing.step_ms, asynchronous=asynchronous)
    share = 100.0 * forced_ms / timing.step_ms if timing.step_ms else 0.0
    wall_share = share
    cpu_share: float | None = None
    host_work = False
    if not asynchronous and timing.host_cpu_median_ms and timing.step_cpu_median_ms:
        # The reads and the Python around them (one thread) over the step on one core's terms.
        host_work = True
        forced_ms = max(timing.host_cpu_median_ms, timing.sync_cpu_ms)
        cpu_share = 100.0 * forced_ms / step_on_one_core_ms(timing)
    elif not asynchronous and timing.step_cpu_ms:
        # Older reports: the copy is CPU work, its CPU over the step's, whatever the load does to wall time.
        cpu_share = 100.0 * timing.sync_cpu_ms / timing.step_cpu_ms
    if cpu_share is not None:
        share = cpu_share
    severity = severity_for_share(share)
    cost = (
        ""
        if share >= MATERIAL_PERCENT
        else f"; below {MATERIAL_PERCENT:g}% of the step the reads cost little here (a CPU step is synchronous: "
        "they cost more where the device runs ahead of Python, as on a GPU)"
        if not asynchronous
        else f"; below {MATERIAL_PERCENT:g}% of the step the reads cost little here"
    )
    step_ms = step_on_one_core_ms(timing) if host_work else timing.step_ms
    step_words = f"{step_ms:.2f} ms step on one core" if host_work else f"{timing.step_ms:.1f} ms step"
    lines = ", ".join(short_location(where) for where in list(timing.sync_locations)[:3])
    return [
        Finding(
            code=CODE,
            severity=severity,
            title="Host sync every step",
            message=(
                f"the loop copies a tensor to Python {timing.syncs_per_step:.2f} times per step (at {lines}; "
                f"{timing.sync_ms:.3f} ms per step in the reads; they cost {forced_ms:.3f} ms, {share:.1f}% of the "
                f"{step_words}, counting {_counted(watch, host_work=host_work)}; gap between steps "
                f"{timing.gap_ms:.2f} ms){cost}"
            ),
            location=location,
            evidence={
                "syncs_per_step": round(timing.syncs_per_step, 2),
                "sync_ms_per_step": round(timing.sync_ms, 3),
                "sync_share_percent": round(share, 1),
                "cost_ms_per_step": round(forced_ms, 3),
                "sync_wall_share_percent": round(wall_share, 1),
                "sync_cpu_share_percent": None if cpu_share is None else round(cpu_share, 1),
                "cost_counted": _counted(watch, host_work=host_work),
                "threshold_percent": MATERIAL_PERCENT,
                "host_cpu_ms_per_step": round(timing.host_cpu_median_ms, 3) if host_work else None,
                "step_on_one_core_ms": round(step_ms, 3) if host_work else None,
                "gap_ms": round(timing.gap_ms, 3),
                "steps": timing.steps,
                "locations": timing.sync_locations,
            },
            fix=_FIT_FIX if observations.under_keras_fit() else _LOOP_FIX,
        )
    ]
