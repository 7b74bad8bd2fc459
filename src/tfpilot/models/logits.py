"""Models that end in softmax, turned into models that output logits.

tfpilot's loss is cross-entropy from logits (numerically stable) and its export signatures apply
softmax once. A user model that already ends in softmax would be trained and served with a
second softmax: probabilities squashed towards uniform, gradients shrunk, silently. The final
softmax is removed instead, and the trainer says so in a finding.
"""

from __future__ import annotations

import keras

__all__ = ["final_softmax", "strip_final_softmax", "SOFTMAX_REMOVED_ATTRIBUTE"]

SOFTMAX_REMOVED_ATTRIBUTE = "_tfpilot_softmax_removed"


def _is_softmax(function: object) -> bool:
    return function is keras.activations.softmax or getattr(function, "__name__", "") == "softmax"


def final_softmax(model: keras.Model) -> str | None:
    """Describe the model's final softmax (`Dense 'out' activation`, `Softmax layer 'probs'`) or None."""
    if not model.layers:
        return None
    last = model.layers[-1]
    if isinstance(last, keras.layers.Softmax):
        return f"Softmax layer `{last.name}`"
    if _is_softmax(getattr(last, "activation", None)):
        kind = "Activation" if isinstance(last, keras.layers.Activation) else type(last).__name__
        return f"{kind} layer `{last.name}` with activation softmax"
    return None


def strip_final_softmax(model: keras.Model) -> keras.Model:
    """The same weights, with the final softmax removed (logits out); the model itself if none."""
    found = final_softmax(model)
    if found is None:
        return model
    last = model.layers[-1]
    if isinstance(last, keras.layers.Softmax | keras.layers.Activation):
        # A separate activation layer: the model up to its input outputs the logits.
        stripped = keras.Model(model.inputs, last.input, name=model.name)
    else:
        # A layer with its own activation (Dense): its pre-activation output is the logits.
        last.activation = keras.activations.linear
        stripped = model
    setattr(stripped, SOFTMAX_REMOVED_ATTRIBUTE, found)
    return stripped
