"""DOC-TINY-OPS: many tiny host ops per step (per-op dispatch overhead dominates).

From the profile, decided by a count and a ratio, never by absolute microseconds (a mean op time in
microseconds moves with the host's load, and the verdict flipped with it):

- a count: at least MIN_OPS_PER_STEP op executions per step;
- a ratio: the ops' own self time is under MAX_BUSY_PERCENT of the step. The rest of the step is
  dispatch and scheduling between the ops; a model whose ops do real work (large matmuls, convolutions)
  keeps its ops busy for most of the step and is not reported however many ops it has.

Severity from what can be won: an uncompiled step (most ops run eagerly) is a warning, since
tf.function removes the Python dispatch of every op. A compiled step (model.fit, a tf.function) is
info: only XLA's fusion can remove the remaining overhead, and on CPU it can make a step slower
(measure it).
"""

from __future__ import annotations

from tfpilot.diagnose.rules.base import Observations
from tfpilot.findings import Finding, Severity

CODE = "DOC-TINY-OPS"
MIN_OPS_PER_STEP = 500
# Op self time under this share of the step: the step is spent between ops, not in them.
MAX_BUSY_PERCENT = 50.0
# At least this share of the profiled op executions ran eagerly: the step is not compiled.
EAGER_SHARE_PERCENT = 50.0

_EAGER_FIX = (
    "compile the step with tf.function (and try jit_compile=True to fuse small ops); vectorise Python loops over "
    "tensors"
)
_FIT_FIX = (
    "model.fit already compiles the step: try model.compile(jit_compile=True) so XLA fuses the small ops (measure: "
    "on CPU it can be slower) and raise compile(steps_per_execution=N) to amortise the per-call overhead; for an "
    "RNN, keras.layers.LSTM/GRU with unroll=True on short sequences"
)
_FUNCTION_FIX = (
    "the step is compiled already: try @tf.function(jit_compile=True) so XLA fuses the small ops (measure: on CPU it "
    "can be slower); a Python loop over tensors inside the function is unrolled into the graph, so vectorise it or "
    "use tf.while_loop / tf.scan; run several steps per call (a tf.range loop inside the function)"
)


def check(observations: Observations) -> list[Finding]:
    summary = observations.summary
    if summary is None or summary.op_occurrences_per_step < MIN_OPS_PER_STEP or not summary.steps.step_ms:
        return []
    busy_percent = 100.0 * summary.host_op_self_time_ms_per_step / summary.steps.step_ms
    if busy_percent >= MAX_BUSY_PERCENT:
        return []
    mean_us = 1e3 * summary.host_op_self_time_ms_per_step / summary.op_occurrences_per_step
    occurrences = sum(op.occurrences for op in summary.top_ops)
    eager = sum(op.occurrences for op in summary.top_ops if op.eager)
    eager_percent = 100.0 * eager / occurrences if occurrences else 0.0
    compiled = eager_percent < EAGER_SHARE_PERCENT
    if not compiled:
        fix = _EAGER_FIX
    elif observations.under_keras_fit():
        fix = _FIT_FIX
    else:
        fix = _FUNCTION_FIX
    return [
        Finding(
            code=CODE,
            severity=Severity.INFO if compiled else Severity.WARNING,
            title="Many tiny ops per step",
            message=(
                f"{summary.op_occurrences_per_step:.0f} host ops per step whose own work fills {busy_percent:.0f}% of "
                f"the {summary.steps.step_ms:.1f} ms step (mean {mean_us:.1f} us per op): the rest is dispatch between "
                "them" + ("" if compiled else "; most ops ran eagerly")
            ),
            location=observations.location,
            evidence={
                "ops_per_step": round(summary.op_occurrences_per_step, 1),
                "busy_percent": round(busy_percent, 1),
                "mean_op_us": round(mean_us, 2),
                "eager_op_occurrences_in_top_ops": eager,
                "compiled": compiled,
            },
            fix=fix,
        )
    ]
