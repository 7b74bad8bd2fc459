"""TFP401: a model with Lambda layers saved to HDF5."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.lint.apis import is_keras_path
from tfpilot.lint.paths import possible_tails
from tfpilot.lint.patterns import keyword, path_literal, string_value
from tfpilot.lint.rule import Invalid, Rule

_HDF5_SUFFIXES = (".h5", ".hdf5")


_MODEL_FACTORIES = ("Sequential", "models.Sequential", "Model", "models.Model")


def _hdf5_path(target: ast.AST | None, context: Any) -> bool:
    """The path is an HDF5 file: a literal, or every value it may hold where it is used (a name
    assigned above, a parameter every call site fills with `"actor_episode{}.h5".format(n)`)."""
    if target is None:
        return False
    path = path_literal(target)
    if path is not None:
        return path.endswith(_HDF5_SUFFIXES)
    if not isinstance(target, ast.Name):
        return False
    tails = possible_tails(target, context)
    return bool(tails) and all(tail is not None and tail.endswith(_HDF5_SUFFIXES) for tail in tails)


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
    calls = frozenset({"Lambda", "save", "save_model", "Sequential", "Model"})
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
        self._lambda_lines: list[int] = []
        self._model_lines: list[int] = []  # every Keras model construction, to bound functional graphs
        self._hdf5_saves: list[tuple[ast.Call, ast.AST | None, ast.AST]] = []

    def visit_Call(self, node: ast.Call) -> None:
        qualname = self.context.qualname(node.func)
        if is_keras_path(qualname, "layers.Lambda"):
            self._lambda_lines.append(node.lineno)
            return
        if is_keras_path(qualname, *_MODEL_FACTORIES):
            self._model_lines.append(node.lineno)
        func = node.func
        is_save = isinstance(func, ast.Attribute) and func.attr == "save"
        is_save_model = is_keras_path(qualname, "models.save_model", "saving.save_model")
        if not (is_save or is_save_model):
            return
        target = (
            node.args[1] if is_save_model and len(node.args) > 1 else (node.args[0] if node.args and is_save else None)
        )
        model: ast.AST | None = None
        if is_save_model and node.args:
            model = node.args[0]
        elif isinstance(func, ast.Attribute) and is_save:
            model = func.value
        save_format = keyword(node, "save_format")
        if _hdf5_path(target, self.context) or (save_format is not None and string_value(save_format.value) == "h5"):
            self._hdf5_saves.append((node, model, self.context.scope.node))

    def finish(self) -> None:
        if not self._lambda_lines:
            return
        for call, model, scope in self._hdf5_saves:
            line = self._lambda_in(model, call, scope)
            if line is None:
                continue  # the saved model holds no Lambda this file can see
            self.report(
                call,
                f"model with a Lambda layer (line {line}) saved to HDF5: the Lambda is "
                "pickled bytecode that Keras 3 will not load by default",
            )

    def _lambda_in(self, model: ast.AST | None, call: ast.Call, scope: ast.AST) -> int | None:
        """The line of a Lambda the saved model is built with, following what its name holds."""
        name = self.context.dotted(model) if model is not None else None
        if name is None:
            return None
        values = self.context.bindings.values(name, call, scope)
        if not values and len(self._model_lines) == 1:
            # a model passed in from elsewhere, in a file that builds one model: that one
            first = [line for line in self._lambda_lines if line <= self._model_lines[0]]
            return first[0] if first else None
        for value in values:
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                factory = self.context.resolve_function(value.func.id, value)
                if isinstance(factory, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    start, end = factory.lineno, factory.end_lineno or factory.lineno
                    inside = [line for line in self._lambda_lines if start <= line <= end]
                    if inside:
                        return inside[0]  # `model = build_model()`, which builds the Lambda
                    continue
            if isinstance(value, ast.Call) and is_keras_path(self.context.qualname(value.func), *_MODEL_FACTORIES):
                start, end = value.lineno, value.end_lineno or value.lineno
                inside = [line for line in self._lambda_lines if start <= line <= end]
                if inside:
                    return inside[0]  # `Sequential([..., Lambda(...)])`
                # functional: a Lambda built after the previous model and before this one
                previous = max((line for line in self._model_lines if line < start), default=0)
                between = [line for line in self._lambda_lines if previous < line < start]
                if between and not is_keras_path(self.context.qualname(value.func), "Sequential", "models.Sequential"):
                    return between[0]
        return None
