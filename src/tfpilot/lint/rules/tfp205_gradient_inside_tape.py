"""TFP205: `tape.gradient()` called inside the tape's own `with` block."""

from __future__ import annotations

import ast

from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.rule import Invalid, Rule

_GRADIENT_METHODS = frozenset({"gradient", "jacobian", "batch_jacobian"})


class GradientInsideTape(Rule):
    """Calling ``tape.gradient`` inside ``with tape:`` records the gradient computation too.

    A *persistent* tape keeps recording until its block ends, so the backward pass is itself
    recorded: extra memory for every intermediate of the gradient and extra time, for nothing.
    A non-persistent tape stops recording at its first ``gradient`` call (TF 2.21's
    ``GradientTape.gradient`` pops it), so there the call costs nothing and is not reported; nor
    is a gradient that the code differentiates again (second derivatives, on purpose).
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
        # a non-persistent tape stops recording at gradient(); a persistent one differentiated twice
        """
import tensorflow as tf

x = tf.Variable(2.0)
with tf.GradientTape() as tape:
    y = x * x
    grad = tape.gradient(y, x)
with tf.GradientTape(persistent=True) as second:
    y = x * x * x
    dy_dx = second.gradient(y, x)
d2y_dx2 = second.gradient(dy_dx, x)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

x = tf.Variable(2.0)
with tf.GradientTape(persistent=True) as tape:
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
                if not _persistent(tape.node, tape.name) or self._differentiated_again(node):
                    return
                self.report(
                    node, f"`{tape.name}.{func.attr}()` inside `with ... as {tape.name}:` records the backward pass too"
                )
                return

    def _differentiated_again(self, node: ast.Call) -> bool:
        """The gradient's result is a target of another gradient call in the same function."""
        parent = self.context.parent
        if not (isinstance(parent, ast.Assign) and parent.value is node):
            return False
        names = {n.id for target in parent.targets for n in walk_nodes(target) if isinstance(n, ast.Name)}
        scope = self.context.scope.node
        for other in walk_nodes(scope):
            if (
                isinstance(other, ast.Call)
                and other is not node
                and isinstance(other.func, ast.Attribute)
                and other.func.attr in _GRADIENT_METHODS
                and other.args
                and any(isinstance(n, ast.Name) and n.id in names for n in walk_nodes(other.args[0]))
            ):
                return True
        return False


def _persistent(with_node: ast.With, name: str | None) -> bool:
    for item in with_node.items:
        target = item.optional_vars
        if isinstance(target, ast.Name) and target.id == name and isinstance(item.context_expr, ast.Call):
            flag = next((k.value for k in item.context_expr.keywords if k.arg == "persistent"), None)
            return not (flag is None or (isinstance(flag, ast.Constant) and not flag.value))
    return True  # a tape made elsewhere: unknown, keep the claim
