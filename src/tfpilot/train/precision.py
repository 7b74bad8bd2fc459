"""Mixed precision (`train.mixed_precision: true`): float16 compute, float32 variables, loss scaling.

The keras `mixed_float16` policy is only read when a layer is constructed (each layer keeps its
own dtype policy), so it is set around model construction and restored right after: other runs
in the same process, and anything built later, keep the policy they had. The optimizer is wrapped
in keras.optimizers.LossScaleOptimizer; the compiled step scales the loss before differentiating
and lets the wrapper unscale, skip overflowing steps and adapt the scale (see step.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import keras

__all__ = ["MIXED_POLICY", "precision_policy", "wrap_for_mixed_precision"]

MIXED_POLICY = "mixed_float16"


@contextlib.contextmanager
def precision_policy(mixed: bool) -> Iterator[None]:
    """Build models under `mixed_float16` when ``mixed``; always restore the previous global policy."""
    if not mixed:
        yield
        return
    previous = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy(MIXED_POLICY)
    try:
        yield
    finally:
        keras.mixed_precision.set_dtype_policy(previous)


def wrap_for_mixed_precision(optimizer: keras.optimizers.Optimizer, mixed: bool) -> keras.optimizers.Optimizer:
    if not mixed or isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        return optimizer
    return keras.optimizers.LossScaleOptimizer(optimizer)
