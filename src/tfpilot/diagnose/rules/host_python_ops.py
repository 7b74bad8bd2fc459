"""DOC-HOST-PYTHON-OP: EagerPyFunc / PyFunc / numpy_function in the step or the pipeline.

These ops call back into the Python interpreter: they hold the GIL, run on the host even when
the model is on a GPU, and serialise tf.data's parallel map. Their share is their self time per
captured step over the mean step time.
"""

from __future__ import annotations

from tfpilot.diagnose.rules.base import Observations
from tfpilot.findings import Finding, Severity

CODE = "DOC-HOST-PYTHON-OP"
MIN_SHARE_PERCENT = 1.0
HIGH_SHARE_PERCENT = 20.0


def check(observations: Observations) -> list[Finding]:
    summary = observations.summary
    if summary is None or not summary.host_python_ops or not summary.steps.step_ms:
        return []
    steps = summary.captured_steps
    per_step_ms = sum(op.total_self_time_ms for op in summary.host_python_ops) / steps
    share = 100.0 * per_step_ms / summary.steps.step_ms
    if share < MIN_SHARE_PERCENT:
        return []
    calls = sum(op.occurrences for op in summary.host_python_ops) / steps
    kinds = sorted({op.type for op in summary.host_python_ops})
    mean_call_ms = per_step_ms / calls if calls else 0.0
    return [
        Finding(
            code=CODE,
            severity=Severity.ERROR if share >= HIGH_SHARE_PERCENT else Severity.WARNING,
            title="Python ops in the step or input pipeline",
            message=(
                f"{'/'.join(kinds)} ran {calls:.1f} times per step for {per_step_ms:.1f} ms per step "
                f"({share:.1f}% of the {summary.steps.step_ms:.1f} ms step); each call takes the GIL on the host"
            ),
            location=",".join(kinds),
            evidence={
                "op_types": kinds,
                "ms_per_step": round(per_step_ms, 2),
                "share_of_step_percent": round(min(share, 999.0), 1),
                "calls_per_step": round(calls, 1),
                "ms_per_call": round(mean_call_ms, 2),
                "step_ms": round(summary.steps.step_ms, 2),
            },
            fix="rewrite the tf.py_function/tf.numpy_function body with TF ops (tf.image, tf.strings, tf.io) so it runs in "
            "the graph and in parallel; if it must stay Python, precompute its output offline or cache() after it",
        )
    ]
