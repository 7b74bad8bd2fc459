"""TFP202: metrics updated every step but never reset per epoch."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.lint.apis import keras_name
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.patterns import walk_body
from tfpilot.lint.rule import Invalid, Rule

_RESETS = frozenset({"reset_state", "reset_states"})


def _is_epoch_loop(loop: ast.AST) -> bool:
    """`for epoch in range(...)`, `for epoch in ...`, or a `while` loop: a pass over the data.

    Loops over structures (outputs, metrics, layers) nest too, but are not epochs.
    """
    if isinstance(loop, ast.While):
        return True
    if not isinstance(loop, ast.For):
        return False
    names = [n.id for n in walk_nodes(loop.target) if isinstance(n, ast.Name)]
    names += [n.id for n in walk_nodes(loop.iter) if isinstance(n, ast.Name)]
    return any("epoch" in name.lower() for name in names)


class MetricNotReset(Rule):
    """A metric updated in the step loop and never reset accumulates across epochs.

    Keras metrics are running aggregates. ``model.fit`` resets them at each epoch; a custom loop
    must call ``metric.reset_state()`` itself. Without it, the "epoch 5 accuracy" is the average
    over epochs 1-5, which hides both progress and regressions. (An epoch loop is a ``while``
    loop or a ``for`` loop over epochs; nested loops over outputs or layers are not.)
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

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        # Per outermost ("epoch") loop: updates seen in nested loops, resets seen anywhere in it.
        self._updates: dict[int, dict[str, ast.Call]] = {}
        self._helper_calls: dict[int, list[ast.Call]] = {}
        self._step_loop_calls: set[int] = set()
        self._resets: dict[int, set[str]] = {}
        self._reset_all: set[int] = set()
        self._body_cache: dict[int, tuple[set[str], set[str], bool]] = {}
        self._epoch_loops: dict[int, bool] = {}
        self._resolved: dict[int, list[ast.AST]] = {}

    def visit_Call(self, node: ast.Call) -> None:
        if not self.context.scope.loop_depth:
            return  # outside any loop of this function: nothing to judge (function_loops() is empty)
        loops = self.context.function_loops()
        if not loops or not self._is_epoch(loops[0]):
            return
        outer = id(loops[0])
        func = node.func
        method = func.attr if isinstance(func, ast.Attribute) else None
        if method == "update_state":
            if len(loops) >= 2:
                key = self.context.dotted(getattr(func, "value", func))
                if key:
                    self._updates.setdefault(outer, {}).setdefault(key, node)
            return
        if method in _RESETS:
            key = self.context.dotted(getattr(func, "value", func))
            loop_targets = {
                loop.target.id for loop in loops if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)
            }
            if key in loop_targets:
                self._reset_all.add(outer)  # `for metric in metrics: metric.reset_state()`
            elif key:
                self._resets.setdefault(outer, set()).add(key)
            return
        if method == "reset_metrics":
            self._reset_all.add(outer)
            return
        definitions = self._callee_definitions(node)
        if definitions:
            self._resolved[id(node)] = definitions  # resolved here: it depends on the enclosing scope
            self._helper_calls.setdefault(outer, []).append(node)
            if len(loops) >= 2:
                # Called from the step loop: its metric updates count as per-step updates.
                self._updates.setdefault(outer, {})
                self._step_loop_calls.add(id(node))

    def visit_Assign(self, node: ast.Assign) -> None:
        if not self.context.scope.loop_depth:
            return
        loops = self.context.function_loops()
        if not loops or not self._is_epoch(loops[0]) or not isinstance(node.value, ast.Call):
            return
        found = keras_name(self.context.qualname(node.value.func))
        if found is not None and found[1].startswith("metrics."):
            keys = {self.context.dotted(target) for target in node.targets} - {None}
            self._resets.setdefault(id(loops[0]), set()).update(keys)  # type: ignore[arg-type]

    def _is_epoch(self, loop: ast.AST) -> bool:
        known = self._epoch_loops.get(id(loop))
        if known is None:
            known = self._epoch_loops[id(loop)] = _is_epoch_loop(loop)
        return known

    def finish(self) -> None:
        for outer, updates in self._updates.items():
            if outer in self._reset_all:
                continue
            updates = dict(updates)
            resets = set(self._resets.get(outer, set()))
            reset_all = False
            for call in self._helper_calls.get(outer, []):
                updated, reset, resets_everything = self._helper_effects(call)
                resets |= reset
                reset_all = reset_all or resets_everything
                if id(call) in self._step_loop_calls:
                    for key in updated:
                        updates.setdefault(key, call)
            if reset_all:
                continue
            for key, call in updates.items():
                if key not in resets:
                    self.report(call, f"metric `{key}` is updated every step but never reset per epoch")

    def _helper_effects(self, call: ast.Call) -> tuple[set[str], set[str], bool]:
        """Metrics a same-file helper updates and resets (one level deep)."""
        updated: set[str] = set()
        reset: set[str] = set()
        reset_all = False
        for definition in self._resolved.get(id(call), []):
            cached = self._body_cache.get(id(definition))
            if cached is None:
                body_updates: set[str] = set()
                body_resets: set[str] = set()
                body_reset_all = False
                body = walk_body(definition.body)  # type: ignore[attr-defined]
                # a metric the helper builds itself is fresh on every call: nothing accumulates
                local = {
                    target.id
                    for node in body
                    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    for target in node.targets
                    if isinstance(target, ast.Name)
                }
                for node in body:
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                        key = self.context.dotted(node.func.value)
                        if node.func.attr == "update_state" and key and key not in local:
                            body_updates.add(key)
                        elif node.func.attr in _RESETS and key:
                            body_resets.add(key)
                        elif node.func.attr == "reset_metrics":
                            body_reset_all = True
                cached = (body_updates, body_resets, body_reset_all)
                self._body_cache[id(definition)] = cached
            updated |= cached[0]
            reset |= cached[1]
            reset_all = reset_all or cached[2]
        return updated, reset, reset_all

    def _callee_definitions(self, call: ast.Call) -> list[ast.AST]:
        """The one definition the call runs: a function redefined later in the file (a notebook
        cell run twice) is resolved like Python does, not merged with its earlier versions."""
        func = call.func
        definition = None
        if isinstance(func, ast.Name):
            definition = self.context.resolve_function(func.id, call)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            definition = self.context.resolve_function(func.attr, call, method=True)
        return [definition] if definition is not None else []
