"""TFP205: `tape.gradient()` called inside the tape's own `with` block."""

from __future__ import annotations

import ast

from tfpilot.lint.rule import Invalid, Rule

_GRADIENT_METHODS = frozenset({"gradient", "jacobian", "batch_jacobian"})


class GradientInsideTape(Rule):
    """Calling ``tape.gradient`` inside ``with tape:`` records the gradient computation too.

    The tape keeps recording until its block ends, so the backward pass is itself recorded:
    extra memory for every intermediate of the gradient and extra time, for nothing (unless
    you want second derivatives, which need a second, outer tape anyway).
    """

    code = "TFP205"
    name = "gradient-inside-tape"
    message = "tape.gradient() called inside the tape's own with-block"
    fix_hint = "Dedent the tape.gradient(...) call so it runs after the `with tf.GradientTape()` block"
    category = "training loop"
    tokens = ("GradientTape",)
    calls = _GRADIENT_METHODS
    VALID = [
        """
import tensorflow as tf

x = tf.Variable(2.0)
with tf.GradientTape() as tape:
    y = x * x
grad = tape.gradient(y, x)
""",
        """
import tensorflow as tf

x = tf.Variable(2.0)
with tf.GradientTape() as outer:
    with tf.GradientTape() as inner:
        y = x * x * x
    dy = inner.gradient(y, x)
d2y = outer.gradient(dy, x)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

x = tf.Variable(2.0)
with tf.GradientTape() as tape:
    y = x * x
    grad = tape.gradient(y, x)
""",
            line=7,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not (
            isinstance(func, ast.Attribute) and func.attr in _GRADIENT_METHODS and isinstance(func.value, ast.Name)
        ):
            return
        for tape in self.context.tapes:
            if tape.name == func.value.id and tape.scope is self.context.scope:
                self.report(
                    node, f"`{tape.name}.{func.attr}()` inside `with ... as {tape.name}:` records the backward pass too"
                )
                return
