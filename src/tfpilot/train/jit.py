"""`train.jit_compile: auto`: time the step's forward and backward pass with and without XLA on a
real batch and keep the faster (XLA made an MLP 1.3x faster but a small CNN 2x slower on CPU).

Only loss and gradients are timed (nothing is applied), so choosing does not change training.
"""

from __future__ import annotations

import time

import tensorflow as tf

__all__ = ["choose_jit_compile"]


def _seconds_per_call(function, features, labels, *, repeats: int) -> float:
    function(features, labels)[0].numpy()  # trace and compile outside the timing
    start = time.perf_counter()
    for _ in range(repeats):
        loss = function(features, labels)[0]
    loss.numpy()
    return (time.perf_counter() - start) / repeats


def choose_jit_compile(step_functions, features, labels, *, repeats: int = 5) -> tuple[bool, dict[str, float]]:
    """Return (use_xla, {"xla": s/step, "no_xla": s/step}); a model XLA cannot compile gets no XLA."""
    timings: dict[str, float] = {}
    for name, jit in (("no_xla", False), ("xla", True)):
        function = tf.function(step_functions.loss_and_gradients, jit_compile=jit)
        try:
            timings[name] = _seconds_per_call(function, features, labels, repeats=repeats)
        except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError):
            timings[name] = float("inf")
    return timings["xla"] < timings["no_xla"], timings
