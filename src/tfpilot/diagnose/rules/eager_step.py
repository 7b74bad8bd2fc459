"""DOC-EAGER-STEP: the training step runs eagerly (no tf.function).

Eager execution dispatches every op from Python: on this kind of machine an MLP step runs ~12x
slower eagerly than under tf.function. Seen as GradientTape.gradient called eagerly every step.
"""

from __future__ import annotations

from typing import Any

from tfpilot.diagnose.rules.base import Observations
from tfpilot.diagnose.watchers import EAGER_DRIVER
from tfpilot.findings import Finding, Severity

CODE = "DOC-EAGER-STEP"
MIN_EAGER_STEPS = 3

_LOOP_FIX = (
    "decorate the step (forward, loss, gradient, apply_gradients) with @tf.function (jit_compile=True where it "
    "measures faster); in Keras, do not pass run_eagerly=True to compile()"
)
# model.fit compiles its step unless told not to: the knob is fit's, not a decorator.
_FIT_FIX = (
    "model.fit ran its own train_step eagerly: drop run_eagerly=True from compile() (and any "
    "tf.config.run_functions_eagerly(True)); then compile(steps_per_execution=N) and, where it measures faster, "
    "jit_compile=True"
)


def check(observations: Observations) -> list[Finding]:
    watch = observations.watch
    if watch is None or watch.eager_gradient_calls < MIN_EAGER_STEPS:
        return []
    timing = watch.timing
    under_fit = watch.eager_fit_gradient_calls >= watch.eager_gradient_calls / 2
    evidence: dict[str, Any] = {
        "eager_gradient_calls": watch.eager_gradient_calls,
        "compiled_calls": watch.compiled_calls,
        "under_model_fit": under_fit,
    }
    message = f"GradientTape.gradient ran eagerly {watch.eager_gradient_calls} times: the training step is not compiled"
    if timing is not None and timing.driver == EAGER_DRIVER:
        evidence["step_ms"] = round(timing.step_ms, 2)
        message += f" ({timing.step_ms:.1f} ms per step)"
    if observations.summary is not None:
        evidence["ops_per_step"] = round(observations.summary.op_occurrences_per_step, 1)
    return [
        Finding(
            code=CODE,
            severity=Severity.WARNING,
            title="Uncompiled (eager) training step",
            message=message,
            location=observations.location,
            evidence=evidence,
            fix=_FIT_FIX if under_fit else _LOOP_FIX,
        )
    ]
