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
    ]

    def visit_Call(self, node: ast.Call) -> None:
        save_format = next((k for k in node.keywords if k.arg == "save_format"), None)
        if save_format is None:
            return
        func = node.func
        method = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if method not in ("save", "save_model", "save_weights"):
            return
        value = string_value(save_format.value)
        only_path = len(node.args) == 1 and len(node.keywords) == 1
        path = path_literal(node.args[0]) if node.args else None
        fix: dict[str, Any] | None = None
        if method == "save" and only_path and value == "tf":
            fix = {"action": "export", "description": "model.save(..., save_format='tf') -> model.export(...)"}
        elif (
            method == "save"
            and value in ("h5", "keras")
            and path
            and path.endswith(".h5" if value == "h5" else ".keras")
        ):
            fix = {"action": "drop", "description": "redundant save_format removed"}
        if path and path.endswith((".h5", ".hdf5", ".keras")):
            outcome = "is deprecated in Keras 3 (the file extension picks the format)"
        else:
            outcome = "raises ValueError in Keras 3"
        self.report(
            node,
            f"{method}(..., save_format={value!r}) {outcome}"
            + ("; use model.export(path) for a SavedModel" if value == "tf" else ""),
            fix_data=fix,
        )

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import rename_method, without_keyword

        trimmed = without_keyword(node, "save_format")
        return rename_method(trimmed, "export") if data["action"] == "export" else trimmed
