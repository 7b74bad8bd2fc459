"""oneDNN's round-off, said beside the parity check it can move.

On x86 Linux, TensorFlow 2.21 runs oneDNN's custom CPU kernels by default. They sum in other orders
than the reference kernels (blocked matmul and convolution, fused ops), so a float32 result can
differ in its last bits from the same model in TFLite (XNNPACK) or TF.js, and from TensorFlow on a
machine where oneDNN is off. TensorFlow says this once, in a C++ start-up line that tfpilot hides
(cli/quiet.py); a person reading a parity table with `max_abs_diff` 3e-7 for a float32 TFLite file
needs it more than the terminal does, so it becomes a finding attached to the parity rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tfpilot.findings import Finding, Severity

__all__ = ["ROUNDOFF_CODE", "FLOAT_FORMATS", "onednn_roundoff_finding"]

ROUNDOFF_CODE = "ENV-ONEDNN-ROUNDOFF"
# Formats whose numbers are float32 like the SavedModel's: any difference there is computation order.
# Quantized variants (int8, dynamic, fp16) differ by design and are judged by their accuracy drop.
FLOAT_FORMATS = ("tflite", "tfjs")


def onednn_roundoff_finding(
    rows: Sequence[dict[str, Any]], *, onednn: bool | None, failed_formats: Sequence[str] = (), location: str = ""
) -> Finding | None:
    """A note when oneDNN is on and a float32 export differs from the SavedModel at all; a warning when
    such an export also failed its parity thresholds (the person will look for the cause there first)."""
    if not onednn:
        return None
    differing = [row for row in rows if row.get("format") in FLOAT_FORMATS and float(row.get("max_abs_diff") or 0) > 0]
    if not differing:
        return None
    worst = max(differing, key=lambda row: float(row["max_abs_diff"]))
    failed = [row["format"] for row in differing if row["format"] in failed_formats]
    diffs = ", ".join(f"{row['format']} {float(row['max_abs_diff']):.2g}" for row in differing)
    message = (
        f"TensorFlow's oneDNN custom CPU kernels are on in this process, and the float32 export(s) differ from the "
        f"SavedModel by at most {diffs} in probability: oneDNN sums in another order than TFLite/TF.js kernels, so "
        "differences of about 1e-7..1e-5 are round-off, not a conversion fault"
    )
    if failed:
        message += f"; {', '.join(failed)} also failed the parity thresholds, which round-off alone rarely does"
    return Finding(
        code=ROUNDOFF_CODE,
        severity=Severity.WARNING if failed else Severity.INFO,
        title="Float round-off from oneDNN kernels",
        message=message,
        location=location or str(worst.get("path", "")),
        evidence={
            "onednn": True,
            "max_abs_diff": {row["format"]: float(row["max_abs_diff"]) for row in differing},
            "failed_formats": failed,
        },
        fix=(
            "to see the SavedModel's numbers without oneDNN, rerun with TF_ENABLE_ONEDNN_OPTS=0 (set before "
            "TensorFlow loads); a difference that stays is the export's, one that vanishes is round-off"
        ),
    )
