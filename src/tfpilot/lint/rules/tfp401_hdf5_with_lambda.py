"""TFP401: a model with Lambda layers saved to HDF5."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.lint.apis import is_keras_path
from tfpilot.lint.patterns import keyword, path_literal, string_value
from tfpilot.lint.rule import Invalid, Rule

_HDF5_SUFFIXES = (".h5", ".hdf5")


class Hdf5WithLambda(Rule):
    """HDF5 stores a Lambda layer as pickled Python bytecode.

    The file then loads only in the same Python version, and Keras 3 refuses to deserialise
    lambdas unless ``safe_mode=False`` (which also allows arbitrary code execution from the
    file). A small registered Layer subclass saved to ``.keras`` has neither problem.
    """

    code = "TFP401"
    name = "hdf5-with-lambda"
    message = "model with a Lambda layer saved to HDF5"
    fix_hint = (
        "Replace the Lambda with a Layer subclass decorated with "
        "@keras.saving.register_keras_serializable() and save to .keras"
    )
    category = "saving"
    tokens = ("Lambda",)
    calls = frozenset({"Lambda", "save", "save_model"})
    VALID = [
        """
import keras

model = keras.Sequential([keras.layers.Lambda(lambda x: x * 2)])
model.save("model.keras")
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

model = keras.Sequential([keras.layers.Lambda(lambda x: x * 2)])
model.save("model.h5")
""",
            line=5,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._lambda_line: int | None = None
        self._hdf5_saves: list[ast.Call] = []

    def visit_Call(self, node: ast.Call) -> None:
        if self._lambda_line is None and is_keras_path(self.context.qualname(node.func), "layers.Lambda"):
            self._lambda_line = node.lineno
            return
        func = node.func
        is_save = isinstance(func, ast.Attribute) and func.attr == "save"
        is_save_model = is_keras_path(self.context.qualname(func), "models.save_model", "saving.save_model")
        if not (is_save or is_save_model):
            return
        target = (
            node.args[1] if is_save_model and len(node.args) > 1 else (node.args[0] if node.args and is_save else None)
        )
        path = path_literal(target)
        save_format = keyword(node, "save_format")
        if (path and path.endswith(_HDF5_SUFFIXES)) or (
            save_format is not None and string_value(save_format.value) == "h5"
        ):
            self._hdf5_saves.append(node)

    def finish(self) -> None:
        if self._lambda_line is None:
            return
        for call in self._hdf5_saves:
            self.report(
                call,
                f"model with a Lambda layer (line {self._lambda_line}) saved to HDF5: the Lambda is "
                "pickled bytecode that Keras 3 will not load by default",
            )
