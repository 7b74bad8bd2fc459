"""TFP103: tf.Variable created on every call of a traced function."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.rule import Invalid, Rule

_VARIABLE_CLASSES = frozenset(
    {"tensorflow.Variable", "tensorflow.compat.v1.Variable", "keras.Variable", "tensorflow.keras.Variable"}
)


def _is_creation_guard(test: ast.expr) -> bool:
    """``if self.v is None``, ``if not self.built``, ``if not hasattr(self, "v")``."""
    for node in walk_nodes(test):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            return True
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return True
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("hasattr", "getattr"):
            return True
    return False


class VariableCreatedInTfFunction(Rule):
    """A tf.Variable created inside a tf.function is created again on every trace.

    tf.function only allows variables to be created on the first trace; later traces raise
    "tf.function only supports singleton tf.Variables created on the first call". When it does
    not raise, each trace gets a fresh, untrained variable. Create variables once, outside the
    function, or behind a guard that runs only on the first call.
    """

    code = "TFP103"
    name = "variable-created-in-tf-function"
    message = "tf.Variable created inside a traced function is created again on every trace"
    fix_hint = (
        "Create the variable once, outside the function (in __init__ or build), or guard the "
        "creation with `if self.v is None:`"
    )
    severity = Severity.ERROR
    category = "tf.function"
    tokens = ("Variable(",)
    calls = frozenset({"Variable"})
    VALID = [
        """
import tensorflow as tf

class Scaler(tf.Module):
    def __init__(self):
        self.scale = tf.Variable(1.0)

    @tf.function
    def __call__(self, x):
        return x * self.scale
""",
        """
import tensorflow as tf

class Lazy(tf.Module):
    def __init__(self):
        self.v = None

    @tf.function
    def __call__(self, x):
        if self.v is None:
            self.v = tf.Variable(tf.zeros_like(x))
        return x + self.v
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

@tf.function
def accumulate(x):
    total = tf.Variable(0.0)
    total.assign_add(tf.reduce_sum(x))
    return total
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        scope = self.context.scope
        if not scope.is_graph or self.context.qualname(node.func) not in _VARIABLE_CLASSES:
            return
        for ancestor in self.context.ancestors():
            if ancestor is scope.node:
                break
            if isinstance(ancestor, ast.If) and _is_creation_guard(ancestor.test):
                return
            if isinstance(ancestor, ast.With) and any(
                self.context.qualname(getattr(item.context_expr, "func", None)) == "tensorflow.init_scope"
                for item in ancestor.items
            ):
                return
        self.report(node, f"tf.Variable created inside a {scope.graph_reason}: it is created again on every trace")
