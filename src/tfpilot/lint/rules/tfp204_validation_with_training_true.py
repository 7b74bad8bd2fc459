"""TFP204: validation or inference code calling with `training=True`."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.lint.naming import is_evaluation_name
from tfpilot.lint.patterns import is_constant
from tfpilot.lint.rule import Invalid, Rule


class ValidationWithTrainingTrue(Rule):
    """Validation and inference must run with ``training=False``.

    With ``training=True`` Dropout drops units and BatchNormalization normalises with the
    batch's own statistics and updates its moving averages from validation data, so the
    reported validation metrics are noisy, optimistic or both, and the model changes while
    being evaluated.
    """

    code = "TFP204"
    name = "validation-with-training-true"
    message = "training=True in validation or inference code"
    fix_hint = "Use training=False when evaluating, validating or serving"
    category = "training loop"
    tokens = ("training",)
    fixable = True
    VALID = [
        """
def validate(model, val_dataset):
    for x, y in val_dataset:
        predictions = model(x, training=False)
""",
        """
def train_epoch(model, train_dataset):
    for x, y in train_dataset:
        predictions = model(x, training=True)
""",
        """
def test_dropout_is_active_in_training(model, x):
    assert model(x, training=True) is not None
""",
    ]
    INVALID = [
        Invalid(
            """
def evaluate(model, dataset):
    for x, y in dataset:
        predictions = model(x, training=True)
""",
            line=4,
            fixed="""
def evaluate(model, dataset):
    for x, y in dataset:
        predictions = model(x, training=False)
""",
        ),
        Invalid(
            """
def fit(model, train_ds, val_ds):
    for x, y in val_ds:
        predictions = model(x, training=True)
""",
            line=4,
        ),
    ]

    def visit_keyword(self, keyword: ast.keyword) -> None:
        if keyword.arg != "training" or not is_constant(keyword.value, True):
            return
        where = self._evaluation_context()
        if where:
            self.report(
                keyword,
                f"training=True in {where}: Dropout stays on and BatchNormalization updates its "
                "statistics from this data",
                fix_data={"description": "training=True -> training=False"},
            )

    def _evaluation_context(self) -> str | None:
        scope = self.context.scope
        name = getattr(scope.node, "name", "")
        if name in ("test_step", "predict_step"):
            return f"`{name}`"
        if name and is_evaluation_name(name) and not name.startswith("test_"):
            return f"`{name}()`"
        for loop in self.context.function_loops():
            if isinstance(loop, ast.For):
                source = self.context.dotted(loop.iter)
                if source and is_evaluation_name(source.split(".")[-1]):
                    return f"a loop over `{source}`"
        return None

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import set_keyword_value

        return set_keyword_value(node, "False")
