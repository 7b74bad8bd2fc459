"""TFP205: `tape.gradient()` called inside the tape's own `with` block."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
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

    One finding per tape block (the block is the cause, however many gradients it takes). A
    block at module level outside any loop (a notebook cell printing chain-rule factors) runs
    once: a note, not a warning.
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

def train_step(x, y, model, optimizer):
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
""",
            line=7,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._reported: set[int] = set()

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
                if id(tape.node) in self._reported:
                    return  # one finding per tape block: the cause is the block, not each call
                self._reported.add(id(tape.node))
                calls = _gradient_calls(tape.node, tape.name)
                more = f" ({calls} gradient calls in this block)" if calls > 1 else ""
                message = (
                    f"`{tape.name}.{func.attr}()` inside `with ... as {tape.name}:` records the backward pass too{more}"
                )
                if isinstance(self.context.scope.node, ast.Module) and not self.context.function_loops():
                    # A module-level block outside any loop (a notebook cell) runs once: the
                    # recorded backward pass costs one step's memory, not a per-step slowdown.
                    self.report(node, message + "; it runs once here", severity=Severity.INFO)
                else:
                    self.report(node, message)
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


def _gradient_calls(with_node: ast.With, name: str | None) -> int:
    return sum(
        1
        for n in walk_nodes(with_node)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in _GRADIENT_METHODS
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == name
    )


def _persistent(with_node: ast.With, name: str | None) -> bool:
    for item in with_node.items:
        target = item.optional_vars
        if isinstance(target, ast.Name) and target.id == name and isinstance(item.context_expr, ast.Call):
            flag = next((k.value for k in item.context_expr.keywords if k.arg == "persistent"), None)
            return not (flag is None or (isinstance(flag, ast.Constant) and not flag.value))
    return True  # a tape made elsewhere: unknown, keep the claim
