"""TFP210: a GradientTape that nothing asks for a gradient."""

from __future__ import annotations

import ast

from tfpilot.lint.rule import Invalid, Rule

_TAPE_USES = frozenset({"gradient", "jacobian", "batch_jacobian", "watch", "watched_variables", "stop_recording"})


class TapeWithoutGradient(Rule):
    """A ``tf.GradientTape`` block whose tape is never asked for a gradient records for nothing.

    Every operation inside the block is recorded and its intermediate tensors are kept alive until
    the tape is released, for a backward pass that never comes: the usual copy of a training step
    turned into a validation step (YOLOv3's ``validate_step``). Reported where the tape is bound to
    a name that the enclosing function (or module) never uses again: no ``gradient`` / ``jacobian``
    / ``watch`` call on it, no passing it on, no returning it. A tape opened without ``as`` is
    reported the same way. Fix: drop the ``with tf.GradientTape()`` line and dedent its block.
    """

    code = "TFP210"
    name = "tape-without-gradient"
    message = "GradientTape recorded but never asked for a gradient"
    fix_hint = "Remove the `with tf.GradientTape() as tape:` line (dedent its block): nothing differentiates it"
    category = "training loop"
    tokens = ("GradientTape",)
    VALID = [
        """
import tensorflow as tf

def train_step(model, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    return grads
""",
        """
import tensorflow as tf

def record(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape, y
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

def validate_step(model, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=False) - y))
    return loss
""",
            line=5,
        ),
    ]

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            call = item.context_expr
            if not (isinstance(call, ast.Call) and self.context.qualname(call.func) == "tensorflow.GradientTape"):
                continue
            target = item.optional_vars
            if target is None:
                self.report(call, "GradientTape opened without `as`: nothing can ask it for a gradient")
                continue
            if not isinstance(target, ast.Name):
                continue
            scope = self.context.scope.node
            if self._used(scope, target.id, node):
                continue
            self.report(
                call,
                f"`{target.id}` records every operation of its block, and nothing asks it for a gradient "
                "(no gradient / jacobian / watch call, not passed on or returned): the recording is wasted",
            )

    @staticmethod
    def _used(scope: ast.AST, name: str, owner: ast.With) -> bool:
        """Whether `name` is read anywhere in the scope other than as the with-target itself."""
        for child in ast.walk(scope):
            if isinstance(child, ast.Name) and child.id == name and isinstance(child.ctx, ast.Load):
                return True
            if isinstance(child, (ast.Global, ast.Nonlocal)) and name in child.names:
                return True
        return False
