"""TFP501: `reset_states()` on Keras 3 metrics and models."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.apis import keras_name
from tfpilot.lint.local_modules import sibling_metric_defines
from tfpilot.lint.naming import is_metric_name, is_model_name, is_recurrent_name
from tfpilot.lint.rule import Invalid, Rule


class ResetStates(Rule):
    """Keras 3 metrics have ``reset_state()``; ``reset_states()`` raises AttributeError.

    Keras 2 metrics had both spellings. Keras 3 kept only ``reset_state()`` on metrics, and
    models lost ``reset_states()`` altogether (recurrent layers keep it as an alias). The error
    typically appears at the end of the first epoch of a custom loop.
    """

    code = "TFP501"
    name = "reset-states"
    message = "reset_states() does not exist on Keras 3 metrics and models"
    fix_hint = (
        "Use metric.reset_state(); for a stateful model, call layer.reset_state() on its stateful recurrent layers"
    )
    severity = Severity.ERROR
    category = "keras 3"
    keras3_only = True
    tokens = ("reset_states",)
    calls = frozenset({"reset_states"})
    fixable = True
    VALID = [
        """
import keras

accuracy = keras.metrics.Accuracy()
accuracy.reset_state()
lstm = keras.layers.LSTM(4, stateful=True)
lstm.reset_states()
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

train_accuracy = keras.metrics.Accuracy()
train_accuracy.reset_states()
""",
            line=5,
            fixed="""
import keras

train_accuracy = keras.metrics.Accuracy()
train_accuracy.reset_state()
""",
        ),
        Invalid(
            """
def on_epoch_end(model):
    for metric in model.metrics:
        metric.reset_states()
""",
            line=4,
        ),
        Invalid(
            """
def new_sequence(model):
    model.reset_states()
""",
            line=3,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "reset_states" and not node.args):
            return
        receiver = self.context.dotted(func.value)
        if receiver is None and self._held_metric(func.value):
            # `metric_list["train_loss"].reset_states()` where metric_list holds Keras metrics (a dict
            # comprehension of `tf.keras.metrics.Mean(name=s)`, SimCLR's colab, round 18)
            self.report(
                node,
                f"`{ast.unparse(func.value)}.reset_states()` raises AttributeError on a Keras 3 metric; use reset_state()",
                fix_data={"description": "reset_states() -> reset_state()"},
            )
            return
        if receiver is None:
            return
        last = receiver.split(".")[-1]
        constructor = keras_name(self.context.assigned_calls.get(receiver))
        if constructor is not None and constructor[1].startswith("layers.") or is_recurrent_name(last):
            return  # recurrent layers keep reset_states() as an alias
        proven = constructor is not None and constructor[1].startswith("metrics.")
        if proven or self._iterates_metrics(last):
            kind = "metric"
        elif is_model_name(last):
            self.report(node, f"`{receiver}.reset_states()`: Keras 3 models have no reset_states()")
            return
        elif is_metric_name(last):
            kind = "metric"
        else:
            return
        if not proven and sibling_metric_defines(self.context.path, "reset_states"):
            return  # the project's own Metric subclasses define reset_states(): this may well be one of them
        self.report(
            node,
            f"`{receiver}.reset_states()` raises AttributeError on a Keras 3 {kind}; use reset_state()",
            fix_data={"description": "reset_states() -> reset_state()"},
        )

    def _held_metric(self, value: ast.expr) -> bool:
        """``holder[key]`` where every value the holder's name was bound to is a dict / list (literal or
        comprehension) whose elements are all Keras metrics made there."""
        if not (isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name)):
            return False
        bound = self.context.bindings.values(value.value.id, value, self.context.scope.node)
        if not bound:
            return False
        for holder in bound:
            if isinstance(holder, ast.DictComp):
                elements: list[ast.expr] = [holder.value]
            elif isinstance(holder, (ast.ListComp, ast.SetComp)):
                elements = [holder.elt]
            elif isinstance(holder, ast.Dict):
                elements = [v for v in holder.values if v is not None]
            elif isinstance(holder, (ast.List, ast.Tuple)):
                elements = list(holder.elts)
            else:
                return False
            if not elements or not all(self._makes_metric(e) for e in elements):
                return False
        return True

    def _makes_metric(self, element: ast.expr) -> bool:
        if not isinstance(element, ast.Call):
            return False
        found = keras_name(self.context.qualname(element.func))
        return found is not None and found[1].startswith("metrics.")

    def _iterates_metrics(self, name: str) -> bool:
        for loop in self.context.function_loops():
            if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and loop.target.id == name:
                source = self.context.dotted(loop.iter) or ""
                return source.endswith("metrics")
        return False

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import rename_method

        return rename_method(node, "reset_state")
