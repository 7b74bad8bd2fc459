"""DOC-TINY-OPS: many tiny host ops per step (per-op dispatch overhead dominates).

From the profile: op executions per step and their mean self time. Thousands of ops that each
take a few microseconds mean the step is dominated by launch overhead, not arithmetic.
"""

from __future__ import annotations

from tfpilot.diagnose.rules.base import Observations
from tfpilot.findings import Finding, Severity

CODE = "DOC-TINY-OPS"
MIN_OPS_PER_STEP = 500
MAX_MEAN_OP_US = 20.0


def check(observations: Observations) -> list[Finding]:
    summary = observations.summary
    if summary is None or summary.op_occurrences_per_step < MIN_OPS_PER_STEP:
        return []
    mean_us = 1e3 * summary.host_op_self_time_ms_per_step / summary.op_occurrences_per_step
    if mean_us > MAX_MEAN_OP_US:
        return []
    eager = sum(op.occurrences for op in summary.top_ops if op.eager)
    return [
        Finding(
            code=CODE,
            severity=Severity.WARNING,
            title="Many tiny ops per step",
            message=f"{summary.op_occurrences_per_step:.0f} host ops per step averaging {mean_us:.1f} us each",
            location=observations.location,
            evidence={
                "ops_per_step": round(summary.op_occurrences_per_step, 1),
                "mean_op_us": round(mean_us, 2),
                "eager_op_occurrences_in_top_ops": eager,
            },
            fix="compile the step with tf.function (and try jit_compile=True to fuse small ops); vectorise Python loops over tensors; "
            "raise steps_per_execution to amortise per-call overhead",
        )
    ]
