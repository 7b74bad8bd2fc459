"""TFP209: a Keras model trained or evaluated before its `compile()` in the same code."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.apis import keras_name
from tfpilot.lint.rule import Invalid, Rule

_NEEDS_COMPILE = frozenset({"fit", "evaluate", "train_on_batch", "test_on_batch"})
_MODEL_CONSTRUCTORS = frozenset({"Sequential", "Model", "models.Sequential", "models.Model"})


class FitBeforeCompile(Rule):
    """``model.fit()`` before ``model.compile()`` raises: the model has no loss or optimizer yet.

    Keras 3 raises ``ValueError: You must call compile() before using the model`` (checked on the
    installed Keras by ``test_lint_tf_premises.py``). Reported where a model built in a scope
    (``keras.Sequential([...])``, ``keras.Model(inputs, outputs)``) is trained or evaluated there
    before the ``compile`` that the same scope runs later: statements in the wrong order, often
    notebook cells.
    """

    code = "TFP209"
    name = "fit-before-compile"
    message = "model trained before it is compiled: Keras raises ValueError"
    fix_hint = "Call model.compile(optimizer=..., loss=...) before fit / evaluate / train_on_batch"
    severity = Severity.ERROR
    category = "training loop"
    tokens = (".compile(",)
    calls = frozenset({"compile", *_NEEDS_COMPILE})
    VALID = [
        """
import keras

model = keras.Sequential([keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(x, y)
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

model = keras.Sequential([keras.layers.Dense(1)])
model.fit(x, y)
model.compile(optimizer="adam", loss="mse")
""",
            line=5,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        # (scope, model name) -> [(line, method, call)] in walk order
        self._calls: dict[tuple[int, str], list[tuple[int, str, ast.Call]]] = {}
        self._scopes: dict[int, ast.AST] = {}

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return
        scope = self.context.scope.node
        self._scopes[id(scope)] = scope
        self._calls.setdefault((id(scope), func.value.id), []).append((node.lineno, func.attr, node))

    def finish(self) -> None:
        for (scope_id, name), calls in self._calls.items():
            calls.sort(key=lambda item: item[0])
            compiles = [line for line, method, _ in calls if method == "compile"]
            if not compiles:
                continue
            early = next(((line, call) for line, method, call in calls if method in _NEEDS_COMPILE), None)
            if early is None or early[0] > compiles[0]:
                continue
            built_at = self._built_at(self._scopes[scope_id], name)
            if built_at is None or built_at > early[0]:
                continue
            self.report(
                early[1],
                f"`{name}.{early[1].func.attr if isinstance(early[1].func, ast.Attribute) else 'fit'}(...)` "
                f"before `{name}.compile(...)` (line {compiles[0]}): Keras raises ValueError 'You must call "
                "compile() before using the model'",
            )

    def _built_at(self, scope: ast.AST, name: str) -> int | None:
        """Line of the single assignment of a Keras model constructor to ``name`` in ``scope``."""
        lines = []
        for statement in ast.walk(scope):
            if isinstance(statement, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in statement.targets
            ):
                value = statement.value
                found = keras_name(self.context.qualname(value.func)) if isinstance(value, ast.Call) else None
                if found is None or found[1] not in _MODEL_CONSTRUCTORS:
                    return None  # rebound to something else: the order says little
                lines.append(statement.lineno)
        return lines[0] if len(lines) == 1 else None
