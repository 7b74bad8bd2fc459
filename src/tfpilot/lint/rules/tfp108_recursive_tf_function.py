"""TFP108: a tf.function that calls itself."""

from __future__ import annotations

import ast

from tfpilot.lint.rule import Invalid, Rule


class RecursiveTfFunction(Rule):
    """A tf.function that calls itself does not recurse at run time: it recurses while tracing.

    The tf.function guide says it plainly: recursive tf.functions are not supported and can
    loop forever. With a tensor argument AutoGraph turns ``if n > 0`` into a ``tf.cond`` that
    traces both branches, so tracing the recursive branch traces the function again, without
    end (RecursionError). With a Python argument every depth is one more trace, all unrolled
    into one graph. Write the recursion as a loop (``tf.while_loop`` or ``for i in tf.range(n)``).
    """

    code = "TFP108"
    name = "recursive-tf-function"
    message = "a tf.function calls itself: the recursion happens while tracing"
    fix_hint = "Write the recursion as a loop: for i in tf.range(n) (AutoGraph makes it a tf.while_loop)"
    category = "tf.function"
    tokens = ("function",)
    VALID = [
        """
import tensorflow as tf

@tf.function
def countdown(n):
    for i in tf.range(n, 0, -1):
        tf.print(i)
    return n
""",
        # recursion in a plain Python helper that no tf.function wraps
        """
def factorial(n):
    return 1 if n <= 1 else n * factorial(n - 1)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

@tf.function
def recursive_fn(n):
    if n > 0:
        return recursive_fn(n - 1)
    return n
""",
            line=7,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        scope = self.context.scope
        function = scope.node
        if not scope.is_graph or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        func = node.func
        if not isinstance(func, ast.Name) or func.id != function.name:
            return
        if not self.context.is_graph_function_name(function.name):
            return  # a helper traced as part of another function: Python recursion at trace time
        self.report(
            node,
            f"tf.function `{function.name}` calls itself: the recursion runs while tracing (endless with a "
            "tensor argument, one unrolled trace per depth with a Python one)",
        )
