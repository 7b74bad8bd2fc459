"""TFP106: Python `range()` over a tf.function argument."""

from __future__ import annotations

import ast

from tfpilot.lint.rule import Invalid, Rule


class PythonRangeOverArgument(Rule):
    """``for i in range(n)`` over a tf.function argument unrolls the loop at trace time.

    With a Python ``n`` the loop body is copied n times into the graph, and every new ``n``
    traces a new graph; large n makes tracing slow and graphs huge. ``tf.range(n)`` becomes a
    single tf.while_loop whatever n is, and works with ``n`` as a tensor.
    """

    code = "TFP106"
    name = "python-range-over-argument"
    message = "Python range() over a tf.function argument is unrolled at trace time"
    fix_hint = "Use `for i in tf.range(n)` (AutoGraph makes it a tf.while_loop) and pass n as a tensor"
    category = "tf.function"
    tokens = ("range(",)
    VALID = [
        """
import tensorflow as tf

@tf.function
def power(x, n):
    for _ in tf.range(n):
        x = x * 2.0
    return x
""",
        """
import tensorflow as tf

class Stack(tf.Module):
    def __init__(self, depth):
        self.depth = depth

    @tf.function
    def __call__(self, x):
        for _ in range(self.depth):
            x = x * 2.0
        return x
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

@tf.function
def power(x, n):
    for _ in range(n):
        x = x * 2.0
    return x
""",
            line=6,
        ),
    ]

    def visit_For(self, node: ast.For) -> None:
        scope = self.context.scope
        if not scope.is_graph or scope.graph_reason != "tf.function" or scope.has_input_signature:
            return
        iterator = node.iter
        if not (
            isinstance(iterator, ast.Call)
            and isinstance(iterator.func, ast.Name)
            and iterator.func.id == "range"
            and "range" not in self.context.imports
        ):
            return
        params = scope.params - {"self", "cls"}
        for argument in iterator.args:
            for item in _names_outside_calls(argument):
                if item in params:
                    self.report(
                        iterator,
                        f"`range({item})` over the argument `{item}` is unrolled at trace time; "
                        "every new value traces a new graph",
                    )
                    return


def _names_outside_calls(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.BinOp):
        return _names_outside_calls(node.left) + _names_outside_calls(node.right)
    if isinstance(node, ast.UnaryOp):
        return _names_outside_calls(node.operand)
    return []
