"""TFP402: `save_format=` in Keras 3 saving calls."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.patterns import path_literal, string_value
from tfpilot.lint.rule import Invalid, Rule


class SaveFormatArgument(Rule):
    """Keras 3 removed ``save_format``: ``model.save(path, save_format="tf")`` raises ValueError.

    With a ``.keras``/``.h5`` path it only logs a deprecation; with any other path it raises.
    The file extension picks the format now (``.keras`` or legacy ``.h5``), and a SavedModel
    for serving comes from ``model.export(path)``, which also writes the serving signature that
    TF Serving and TFLite expect.
    """

    code = "TFP402"
    name = "save-format-argument"
    message = "save_format= is gone in Keras 3 (ValueError unless the path ends in .keras/.h5)"
    fix_hint = "For a SavedModel use model.export(path); otherwise drop save_format and use a .keras path"
    severity = Severity.ERROR
    category = "saving"
    keras3_only = True
    tokens = ("save_format",)
    calls = frozenset({"save", "save_model", "save_weights"})
    fixable = True
    VALID = [
        """
model.save("model.keras")
model.export("exported/1")
""",
        # a wrapper forwarding a save_format that defaults to None: Keras 3 ignores a falsy one
        """
def save_model(model, filepath, save_format=None):
    model.save(filepath, save_format=save_format)
""",
    ]
    INVALID = [
        Invalid(
            """
model.save("exported/1", save_format="tf")
""",
            line=2,
            fixed="""
model.export("exported/1")
""",
        ),
        Invalid(
            """
model.save("model.h5", save_format="h5")
""",
            line=2,
            fixed="""
model.save("model.h5")
""",
        ),
        # the wrapper is called with a real format: that one raises
        Invalid(
            """
def save_model(model, filepath, save_format=None):
    model.save(filepath, save_format=save_format)

save_model(classifier, "exported/1", save_format="tf")
""",
            line=3,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        save_format = next((k for k in node.keywords if k.arg == "save_format"), None)
        if save_format is None:
            return
        func = node.func
        method = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if method not in ("save", "save_model", "save_weights"):
            return
        if self._falsy(save_format.value, node):
            return  # Keras 3 ignores a falsy save_format (`save_format=None` forwarded by a wrapper)
        value = string_value(save_format.value)
        if value is None:
            passed = {string_value(v) for v in self._values(save_format.value, node) if isinstance(v, ast.expr)}
            value = passed.pop() if len(passed) == 1 else None
        only_path = len(node.args) == 1 and len(node.keywords) == 1
        path = self._path(node.args[0], node) if node.args else None
        fix: dict[str, Any] | None = None
        literal = string_value(save_format.value) is not None  # a forwarded value: no rewrite
        if not literal:
            pass
        elif method == "save" and only_path and value == "tf":
            fix = {"action": "export", "description": "model.save(..., save_format='tf') -> model.export(...)"}
        elif (
            method == "save"
            and value in ("h5", "keras")
            and path
            and path.endswith(".h5" if value == "h5" else ".keras")
        ):
            fix = {"action": "drop", "description": "redundant save_format removed"}
        shown = repr(value) if value is not None else "..."
        deprecated = bool(path and path.endswith((".h5", ".hdf5", ".keras")))
        if deprecated:
            outcome = "is deprecated in Keras 3 (the file extension picks the format)"
        else:
            outcome = "raises ValueError in Keras 3"
        self.report(
            node,
            f"{method}(..., save_format={shown}) {outcome}"
            + ("; use model.export(path) for a SavedModel" if value == "tf" else ""),
            fix_data=fix,
            # with a .keras/.h5 path Keras 3 only logs a deprecation: a note, not an error
            severity=Severity.INFO if deprecated and method == "save" else None,
        )

    def _values(self, expr: ast.expr, at: ast.AST) -> list[ast.AST]:
        name = self.context.dotted(expr)
        if name is None:
            return [expr]
        return self.context.bindings.values(name, at, self.context.scope.node)

    def _falsy(self, expr: ast.expr, at: ast.AST) -> bool:
        """Every value the argument can hold is None / False / "" (or it is a parameter whose
        default is one and no call in this file passes anything else)."""
        values = self._values(expr, at)
        if not values and isinstance(expr, ast.Name):
            values = [d for d in _defaults(self.context.scope.node, expr.id) if d is not None]
        return bool(values) and all(isinstance(v, ast.Constant) and not v.value for v in values)

    def _path(self, expr: ast.expr, at: ast.AST) -> str | None:
        """The path's known tail, through a module constant (`KERAS_MODEL_PATH = "m.h5"`)."""
        found = path_literal(expr)
        if found is None and isinstance(expr, ast.Name):
            tails = {path_literal(v) for v in self._values(expr, at) if isinstance(v, ast.expr)}
            if len(tails) == 1:
                found = tails.pop()
        return found

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import rename_method, without_keyword

        trimmed = without_keyword(node, "save_format")
        return rename_method(trimmed, "export") if data["action"] == "export" else trimmed


def _defaults(function: ast.AST, name: str) -> list[ast.expr | None]:
    """The default of parameter ``name`` of ``function`` ([] when it has none)."""
    arguments = getattr(function, "args", None)
    if not isinstance(arguments, ast.arguments):
        return []
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs: list[tuple[ast.arg, ast.expr | None]] = list(
        zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True)
    )
    pairs += list(zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True))
    return [default for arg, default in pairs if arg.arg == name]
