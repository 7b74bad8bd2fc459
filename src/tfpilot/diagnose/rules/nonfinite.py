"""DOC-NONFINITE: a loss, gradient or value read by the script became NaN/Inf; the replay names the op and line."""

from __future__ import annotations

from typing import Any

from tfpilot.diagnose.rules.base import Observations
from tfpilot.findings import Finding, Severity

CODE = "DOC-NONFINITE"


def _what(info: dict[str, Any]) -> str:
    step, function = info.get("step"), info.get("step_function")
    # Keras' step is `TensorFlowTrainer._make_function.<locals>.multi_step_on_iterator`: the last name says enough.
    where = f" of `{str(function).rsplit('.', 1)[-1]}`" if function else ""
    if info.get("detected_in") == "output":
        return f"the loss returned by call {step}{where} was {info.get('value')}"
    if info.get("detected_in") == "weights":
        names = ", ".join(f"`{name}`" for name in info.get("nonfinite_variables", [])[:4]) or "variables"
        return (
            f"after call {step}{where} the variables {names} held {info.get('value')} although no loss it "
            "returned was non-finite (the model's output or the loss hides it: a ReLU, clip or NaN-safe loss "
            "after it, or a variable the loss never reads, such as an optimizer slot or a moving statistic)"
        )
    seen = f" at {info['seen_at']}" if info.get("seen_at") else ""
    return f"a non-finite value ({info.get('value')}) was read{seen} after step {step}"


def _replay(info: dict[str, Any]) -> str:
    if not info.get("replayed"):
        return ""
    if not info.get("reproduced"):
        reason = info.get("replay_error") or "every op stayed finite"
        return f"; replaying step {info.get('replayed_step')} under check_numerics did not reproduce it ({reason})"
    origin = "the weights before it"
    if info.get("weights_before_step") == "non-finite":
        origin = "weights that were already non-finite (the first bad update happened earlier)"
    elif info.get("weights_before_step") == "not kept":
        origin = "the weights after it (none were kept before it)"
    batch = f" on {info['batch']}" if info.get("batch", "same") != "same" else ""
    text = f"; replaying step {info.get('replayed_step')} from {origin}{batch} under check_numerics"
    if info.get("cause") == "update":
        text += " (its loss was finite; its gradient or update made the weights non-finite)"
    text += f": op `{info.get('op', '?')}`"
    if info.get("forward_op"):
        # Born in the backward pass: the forward op and its line are what the user can guard.
        text += f" (the gradient of `{info['forward_op']}`"
        text += f" created at {info['source']})" if info.get("forward_source") else ")"
    if info.get("layer"):
        text += f" in layer `{info['layer']}` ({info.get('layer_class')})"
    if info.get("source") and not info.get("forward_source"):
        # A built-in layer's op has no user line of its own: the layer's creation is the line.
        text += f" created at {info['source']}" if info.get("source_is") else f" at {info['source']}"
    elif info.get("layer_candidates"):
        text += f" (the layer is created at one of {', '.join(info['layer_candidates'])})"
    if info.get("forward_candidates"):
        text += f" (other {info['forward_op']} ops ran at {', '.join(info['forward_candidates'])})"
    return text + " produced the first NaN/Inf"


def check(observations: Observations) -> list[Finding]:
    watch = observations.watch
    if watch is None or not watch.nonfinite:
        return []
    info = watch.nonfinite
    where = info.get("source") or info.get("seen_at") or observations.location
    # A NaN born in a gradient op is guarded at its forward op (SqrtGrad -> Sqrt).
    op = info.get("forward_op") or info.get("op")
    guard = {
        "Log": "tf.math.log(x + eps) or clip x to [eps, inf)",
        "RealDiv": "tf.math.divide_no_nan, or add eps to the denominator",
        "Div": "tf.math.divide_no_nan, or add eps to the denominator",
        "Sqrt": "tf.sqrt(tf.maximum(x, eps)) (the gradient of sqrt at 0 is infinite too)",
        "Exp": "clip the argument (tf.minimum(x, 80.0) in float32) or work in log space",
        "Rsqrt": "tf.math.rsqrt(x + eps)",
    }.get(op or "", "guard the op named above")
    if info.get("source_is") or info.get("layer_candidates"):
        # The op is Keras' own, inside a built-in layer: its arguments and inputs are what to change.
        guard = (
            f"the op runs inside the built-in `{info.get('layer_class')}`: check the arguments it was created "
            f"with (an epsilon of 0, a mask that leaves no element) and the values it receives ({guard})"
        )
    return [
        Finding(
            code=CODE,
            severity=Severity.ERROR,
            title="NaN/Inf in training",
            message=_what(info) + _replay(info),
            location=where,
            evidence=dict(info),
            fix=f"{guard}; if the op is not the cause, lower the learning rate, clip gradients "
            "(tf.clip_by_global_norm), and check the input batch for NaN",
        )
    ]
