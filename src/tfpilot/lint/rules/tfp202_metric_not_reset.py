"""TFP202: metrics updated every step but never reset per epoch."""

from __future__ import annotations

import ast

from tfpilot.lint.apis import keras_name
from tfpilot.lint.patterns import walk_body
from tfpilot.lint.rule import Invalid, Rule

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_RESETS = frozenset({"reset_state", "reset_states"})


class MetricNotReset(Rule):
    """A metric updated in the step loop and never reset accumulates across epochs.

    Keras metrics are running aggregates. ``model.fit`` resets them at each epoch; a custom loop
    must call ``metric.reset_state()`` itself. Without it, the "epoch 5 accuracy" is the average
    over epochs 1-5, which hides both progress and regressions.
    """

    code = "TFP202"
    name = "metric-not-reset"
    message = "metric updated every step but never reset per epoch"
    fix_hint = "Call metric.reset_state() at the start (or end) of each epoch, next to where you log it"
    category = "training loop"
    tokens = ("update_state",)
    VALID = [
        """
import keras

accuracy = keras.metrics.SparseCategoricalAccuracy()
for epoch in range(3):
    accuracy.reset_state()
    for x, y in [(1, 1)]:
        accuracy.update_state(y, x)
    print(epoch, accuracy.result())
""",
        """
import keras

for epoch in range(3):
    accuracy = keras.metrics.SparseCategoricalAccuracy()
    for x, y in [(1, 1)]:
        accuracy.update_state(y, x)
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

accuracy = keras.metrics.SparseCategoricalAccuracy()
for epoch in range(3):
    for x, y in [(1, 1)]:
        accuracy.update_state(y, x)
    print(epoch, accuracy.result())
""",
            line=7,
        ),
        Invalid(
            """
import keras
import tensorflow as tf

train_loss = keras.metrics.Mean()

@tf.function
def train_step(x):
    loss = tf.reduce_mean(x)
    train_loss.update_state(loss)

def fit(dataset, epochs):
    for epoch in range(epochs):
        for x in dataset:
            train_step(x)
        print(train_loss.result())
""",
            line=15,
        ),
    ]

    def visit_For(self, node: ast.For) -> None:
        self._check(node)

    def visit_While(self, node: ast.While) -> None:
        self._check(node)

    def _check(self, outer: ast.For | ast.While) -> None:
        if self.context.function_loops():
            return  # only the outermost loop of a function is an "epoch" loop
        outer_nodes = walk_body(outer.body)
        inner_loops = [n for n in outer_nodes if isinstance(n, _LOOPS)]
        if not inner_loops:
            return
        updates: dict[str, ast.Call] = {}
        for loop in inner_loops:
            for node in walk_body(loop.body):
                if isinstance(node, ast.Call):
                    for key in self._updated_metrics(node):
                        updates.setdefault(key, node)
        if not updates:
            return
        reset, reset_all = self._resets(outer_nodes)
        if reset_all:
            return
        for key, call in updates.items():
            if key not in reset:
                self.report(call, f"metric `{key}` is updated every step but never reset per epoch")

    def _updated_metrics(self, call: ast.Call) -> list[str]:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "update_state":
            key = self.context.dotted(func.value)
            return [key] if key else []
        found: list[str] = []
        for definition in self._callee_definitions(call):
            for node in walk_body(definition.body):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    if node.func.attr == "update_state":
                        key = self.context.dotted(node.func.value)
                        if key:
                            found.append(key)
        return found

    def _callee_definitions(self, call: ast.Call) -> list[ast.AST]:
        func = call.func
        if isinstance(func, ast.Name):
            return self.context.function_defs(func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            return self.context.function_defs(func.attr)
        return []

    def _resets(self, nodes: list[ast.AST]) -> tuple[set[str], bool]:
        reset: set[str] = set()
        loop_targets = {
            n.target.id for n in nodes if isinstance(n, ast.For) and isinstance(n.target, ast.Name)
        }
        pending = list(nodes)
        expanded: set[int] = set()
        while pending:
            node = pending.pop()
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                found = keras_name(self.context.qualname(node.value.func))
                if found is not None and found[1].startswith("metrics."):
                    reset.update(self.context.dotted(t) or "" for t in node.targets)
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute):
                if func.attr in _RESETS:
                    key = self.context.dotted(func.value)
                    if key in loop_targets:
                        return reset, True
                    if key:
                        reset.add(key)
                elif func.attr == "reset_metrics":
                    return reset, True
            # One level into helpers such as `reset_metrics()` defined in the same file.
            for definition in self._callee_definitions(node):
                if id(definition) not in expanded:
                    expanded.add(id(definition))
                    pending.extend(walk_body(definition.body))  # type: ignore[attr-defined]
        return reset, False
