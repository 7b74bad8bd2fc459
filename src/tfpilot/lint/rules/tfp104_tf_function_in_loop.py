"""TFP104: a tf.function created inside a loop and called there."""

from __future__ import annotations

import ast

from tfpilot.lint.apis import TF_FUNCTION_QUALNAMES
from tfpilot.lint.patterns import walk_body
from tfpilot.lint.rule import Invalid, Rule


class TfFunctionInLoop(Rule):
    """A tf.function created inside a loop is a new function, with a new trace, every iteration.

    Tracing costs far more than running a step, and each new function also keeps its graphs
    alive. ``tf.function(f)(x)`` in a training loop turns graph mode into something slower than
    eager mode. Create the function once before the loop and call it inside.
    """

    code = "TFP104"
    name = "tf-function-in-loop"
    message = "tf.function created inside a loop: every iteration traces a new graph"
    fix_hint = "Create the tf.function once, before the loop, and only call it inside the loop"
    category = "tf.function"
    tokens = ("function",)
    calls = frozenset({"function"})
    VALID = [
        """
import tensorflow as tf

step = tf.function(lambda x: x * 2)
for x in range(3):
    step(tf.constant(x))
""",
        """
import tensorflow as tf

functions = {}
for name in ("a", "b"):
    functions[name] = tf.function(lambda x: x + 1)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

for x in range(3):
    y = tf.function(lambda v: v * 2)(tf.constant(x))
""",
            line=5,
        ),
        Invalid(
            """
import tensorflow as tf

for batch in range(10):
    @tf.function
    def step(v):
        return v + 1
    step(tf.constant(batch))
""",
            line=5,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        loops = self.context.function_loops()
        if not loops or self.context.qualname(node.func) not in TF_FUNCTION_QUALNAMES:
            return
        parent = self.context.parent
        called = isinstance(parent, ast.Call) and parent.func is node
        if not called and isinstance(parent, ast.Assign):
            names = {t.id for t in parent.targets if isinstance(t, ast.Name)}
            called = bool(names) and _calls_any(loops[-1], names)
        if called:
            self.report(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        loops = self.context.function_loops()
        if not loops:
            return
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self.context.qualname(target) in TF_FUNCTION_QUALNAMES and _calls_any(loops[-1], {node.name}):
                self.report(decorator)
                return


def _calls_any(loop: ast.AST, names: set[str]) -> bool:
    for node in walk_body(getattr(loop, "body", [])):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
            return True
    return False
