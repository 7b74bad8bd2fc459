"""The overfitting finding: validation loss rising for K epochs while training loss falls.

Shared by `tfpilot train`'s loop and `tfpilot.fit` (which reads Keras' History)."""

from __future__ import annotations

from typing import Any

from tfpilot.findings import Finding, Severity

__all__ = ["overfitting_findings"]


def overfitting_findings(history: list[dict[str, Any]], *, patience: int, location: str) -> list[Finding]:
    k = patience
    rows = [h for h in history if "val_loss" in h and "loss" in h]
    if len(rows) < k + 1:
        return []
    for end in range(k, len(rows)):
        window = rows[end - k : end + 1]
        val_rising = all(b["val_loss"] > a["val_loss"] for a, b in zip(window, window[1:], strict=False))
        train_falling = all(b["loss"] < a["loss"] for a, b in zip(window, window[1:], strict=False))
        if val_rising and train_falling:
            first, last = window[0], window[-1]
            return [
                Finding(
                    code="TRAIN-OVERFITTING",
                    severity=Severity.WARNING,
                    title="Overfitting",
                    message=(
                        f"validation loss rose for {k} epochs ({first['val_loss']:.4f} -> {last['val_loss']:.4f}) "
                        f"while training loss fell ({first['loss']:.4f} -> {last['loss']:.4f}) from epoch {first['epoch']}"
                    ),
                    location=location,
                    evidence={
                        "from_epoch": first["epoch"],
                        "to_epoch": last["epoch"],
                        "gap": last["val_loss"] - last["loss"],
                    },
                    fix="enable early stopping on val_loss, add dropout or L2 (train.l2), or get more data / augmentation",
                )
            ]
    return []
