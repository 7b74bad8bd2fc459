"""DOC-NONFINITE: a value read by the script became NaN/Inf; the replay names the op and line."""

from __future__ import annotations

from tfpilot.diagnose.rules.base import Observations
from tfpilot.findings import Finding, Severity

CODE = "DOC-NONFINITE"


def check(observations: Observations) -> list[Finding]:
    watch = observations.watch
    if watch is None or not watch.nonfinite:
        return []
    info = watch.nonfinite
    where = info.get("source") or info.get("seen_at", "")
    message = (
        f"a non-finite value ({info.get('value')}) was read at {info.get('seen_at')} after step {info.get('step')}"
    )
    if info.get("op"):
        message += f"; replaying the step with check_numerics: op `{info['op']}` produced it at {info.get('source')}"
    if info.get("weights_finite_before_replay") is False:
        message += " (weights were already non-finite: the first bad update happened earlier)"
    return [
        Finding(
            code=CODE,
            severity=Severity.ERROR,
            title="NaN/Inf in training",
            message=message,
            location=where,
            evidence={k: v for k, v in info.items() if k != "seen_at"} | {"seen_at": info.get("seen_at")},
            fix="guard the op named above (tf.math.log(x + eps), tf.math.divide_no_nan, clip logits), lower the learning "
            "rate, clip gradients (tf.clip_by_global_norm), and check the input batch for NaN",
        )
    ]
