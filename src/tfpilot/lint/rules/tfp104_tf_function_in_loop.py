"""TFP104: a tf.function created inside a loop and called there."""

from __future__ import annotations

import ast
from typing import Any

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
        # the factory is called once, before the loop
        """
import tensorflow as tf


def make_step(model):
    @tf.function
    def step(x):
        return model(x, training=False)

    return step


step = make_step(model)
for x in dataset:
    step(x)
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


def make_train_step(model, optimizer):
    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    return train_step


for epoch in range(10):
    step = make_train_step(model, optimizer)
    for x, y in dataset:
        step(x, y)
""",
            line=17,
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

    def visit_For(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        """`step = make_train_step(model)` in the loop, then `step(batch)` (or `make_step(model)(batch)`):
        a function of this file that makes a tf.function and returns it makes a new one, traced
        again, on every call. Scanned per loop (loops are few; every call would cost the hot path)."""
        body = walk_body(node.body)
        called: set[str] | None = None  # names the loop calls, collected once when first needed
        for inner in body:
            factory: ast.Call | None = None
            targets: set[str] = set()
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Call):
                factory = inner.func
            elif isinstance(inner, ast.Assign) and isinstance(inner.value, ast.Call):
                factory = inner.value
                targets = {t.id for t in inner.targets if isinstance(t, ast.Name)}
                if not targets:
                    continue
            if factory is None or not isinstance(factory.func, ast.Name) or id(factory) in self._factories:
                continue
            self._factories.add(id(factory))
            made = _makes_tf_function(self.context.function_defs(factory.func.id), self)
            if made is None:
                continue
            if targets:
                if called is None:
                    called = {n.func.id for n in body if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
                if not targets & called:
                    continue
            self.report(
                factory,
                f"`{factory.func.id}()` makes a new tf.function on every call (line {made}): called in a "
                "loop, every iteration traces a new graph",
            )

    visit_AsyncFor = visit_For
    visit_While = visit_For

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._factories: set[int] = set()  # factory calls judged (an inner loop is also in the outer one's body)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        loops = self.context.function_loops()
        if not loops:
            return
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self.context.qualname(target) in TF_FUNCTION_QUALNAMES and _calls_any(loops[-1], {node.name}):
                self.report(decorator)
                return


def _makes_tf_function(definitions: list[ast.AST], rule: Rule) -> int | None:
    """The line where the one definition of a factory makes the tf.function it returns (a nested def
    decorated with tf.function, or a tf.function(...) call), or None. A decorated factory (an
    lru_cache, say) may hand back the same function each time: not judged."""
    if len(definitions) != 1 or not isinstance(definitions[0], ast.FunctionDef) or definitions[0].decorator_list:
        return None
    body = walk_body(definitions[0].body)
    if not any(isinstance(n, ast.Return) and n.value is not None for n in body):
        return None
    for node in body:
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if rule.context.qualname(target) in TF_FUNCTION_QUALNAMES:
                    return decorator.lineno
        elif isinstance(node, ast.Call) and rule.context.qualname(node.func) in TF_FUNCTION_QUALNAMES:
            return node.lineno
    return None


def _calls_any(loop: ast.AST, names: set[str]) -> bool:
    for node in walk_body(getattr(loop, "body", [])):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
            return True
    return False
