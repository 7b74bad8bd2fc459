"""TFP503: tf_keras and TF_USE_LEGACY_KERAS (Keras 2)."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.apis import KERAS2_LIBRARIES
from tfpilot.lint.rule import Invalid, Rule

# Ways of *setting* the flag; reading it (os.environ.get) is how libraries honour it.
_SETTING_METHODS = frozenset({"setdefault", "putenv", "setenv"})
_FLAG = "TF_USE_LEGACY_KERAS"


class LegacyKeras(Rule):
    """``tf_keras`` and ``TF_USE_LEGACY_KERAS=1`` pin the code to Keras 2.

    Keras 2 receives only critical fixes, its SavedModel and optimizer behaviour differ from
    Keras 3, and the flag silently changes what ``tf.keras`` means for every other module in
    the process. It is a migration crutch; the TFP5xx findings list what to change to drop it.

    A note (info) in a file that imports a library built on Keras 2 (``tensorflow_hub``,
    TF Recommenders, TF-Agents, the Model Optimization toolkit, Decision Forests, TF Ranking,
    TF Probability's layers, the Model Garden, Hugging Face ``transformers``' TF models): there
    tf_keras is the library's documented requirement, not a choice the file can drop. One
    finding per file: the import and the flag are one decision.
    """

    code = "TFP503"
    name = "legacy-keras"
    message = "tf_keras / TF_USE_LEGACY_KERAS pins the code to Keras 2"
    fix_hint = "Migrate to Keras 3 (`import keras`) and remove tf_keras / TF_USE_LEGACY_KERAS"
    category = "keras 3"
    tokens = ("tf_keras", _FLAG)
    VALID = [
        """
import os
import keras

os.environ["KERAS_BACKEND"] = "tensorflow"
legacy = os.environ.get("TF_USE_LEGACY_KERAS", "0") == "1"
""",
    ]
    INVALID = [
        Invalid(
            """
import tf_keras as keras
""",
            line=2,
        ),
        Invalid(
            """
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"
""",
            line=4,
        ),
        # one decision, one finding: the flag and the import in one file
        Invalid(
            """
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"
import tf_keras
""",
            line=4,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._reported = False

    def visit_Import(self, node: ast.Import) -> None:
        if any(alias.name == "tf_keras" or alias.name.startswith("tf_keras.") for alias in node.names):
            self._report(node, "imports tf_keras (Keras 2)")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if not node.level and (module == "tf_keras" or module.startswith("tf_keras.")):
            self._report(node, "imports from tf_keras (Keras 2)")

    def visit_Constant(self, node: ast.Constant) -> None:
        if node.value != _FLAG:
            return
        parent = self.context.parent
        sets_flag = (
            (isinstance(parent, ast.Subscript) and parent.slice is node and isinstance(parent.ctx, ast.Store))
            or (
                isinstance(parent, ast.Call)
                and isinstance(parent.func, ast.Attribute)
                and parent.func.attr in _SETTING_METHODS
                and bool(parent.args)
                and parent.args[0] is node
            )
            or (isinstance(parent, ast.Dict) and any(key is node for key in parent.keys))
        )
        if sets_flag:
            self._report(node, f"{_FLAG} switches tf.keras to Keras 2 for the whole process")

    def _report(self, node: ast.AST, message: str) -> None:
        if self._reported:
            return
        self._reported = True
        tops = {value.split(".")[0] for value in self.context.imports.values()}
        needs = next((m for m in KERAS2_LIBRARIES if m in tops), None)
        if needs is None:
            self.report(node, message)
        else:
            self.report(
                node,
                f"{message}; required here: {needs} builds Keras 2 objects",
                severity=Severity.INFO,
            )
