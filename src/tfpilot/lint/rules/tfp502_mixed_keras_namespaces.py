"""TFP502: `import keras` and `tf.keras` in the same file."""

from __future__ import annotations

import ast
import re
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.patterns import under_feature_check
from tfpilot.lint.rule import Invalid, Rule

_LEGACY_FLAG = re.compile(r"TF_USE_LEGACY_KERAS")


def _is_standalone_keras(module: str) -> bool:
    return module == "keras" or module.startswith("keras.")


def _is_tf_keras(module: str) -> bool:
    return module == "tensorflow.keras" or module.startswith("tensorflow.keras.")


class MixedKerasNamespaces(Rule):
    """Mixing ``keras`` and ``tf.keras`` in one file ties correctness to the environment.

    In TF 2.16+ both names are Keras 3 only while no ``tf_keras`` / TF_USE_LEGACY_KERAS is in
    play; with either, ``tf.keras`` becomes Keras 2 and objects from the two cannot be mixed
    (layers fail isinstance checks, models fail to compile or save). One spelling per project
    avoids the question.

    A note (info) in a file that does neither: on a plain TF 2.21 both spellings are the same
    Keras 3, so the mix works (2 of 2 labelled corpus findings were such files). A warning where
    the file itself imports ``tf_keras`` or sets ``TF_USE_LEGACY_KERAS``, so the two differ.
    """

    code = "TFP502"
    name = "mixed-keras-namespaces"
    message = "file uses both `import keras` and `tf.keras`"
    fix_hint = "Use `import keras` everywhere (tf.keras is Keras 3 itself in TF 2.16+)"
    category = "keras 3"
    tokens = ("keras",)
    VALID = [
        """
import keras
import tensorflow as tf

model = keras.Sequential([keras.layers.Dense(1)])
ds = tf.data.Dataset.range(3)
""",
    ]
    INVALID = [
        Invalid(
            """
import keras
import tensorflow as tf

model = keras.Sequential([tf.keras.layers.Dense(1)])
""",
            line=5,
        ),
        Invalid(
            """
from tensorflow.keras import layers
import keras

model = keras.Sequential([layers.Dense(1)])
""",
            line=2,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._standalone: ast.AST | None = None
        self._tf_keras: ast.AST | None = None

    def visit_Import(self, node: ast.Import) -> None:
        if under_feature_check(self.context, "version"):
            return  # `try: import keras` / `except ImportError:` fallbacks pick one Keras on purpose
        for alias in node.names:
            if _is_standalone_keras(alias.name):
                self._standalone = self._standalone or node
            elif _is_tf_keras(alias.name):
                self._tf_keras = self._tf_keras or node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or under_feature_check(self.context, "version"):
            return
        if _is_standalone_keras(module):
            self._standalone = self._standalone or node
        elif _is_tf_keras(module) or (module == "tensorflow" and any(a.name == "keras" for a in node.names)):
            self._tf_keras = self._tf_keras or node

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        if self._tf_keras is None and _is_tf_keras(qualname) and self.context.root_binding(node) == "tensorflow":
            if self._probe(node) or under_feature_check(self.context, "version"):
                return  # `getattr(tf.keras, "version", None)` and the branch it picks: choosing a Keras on purpose
            self._tf_keras = node

    def _probe(self, node: ast.AST) -> bool:
        parent = self.context.parent
        return (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Name)
            and parent.func.id in ("getattr", "hasattr")
            and bool(parent.args)
            and parent.args[0] is node
        )

    def finish(self) -> None:
        if self._standalone is not None and self._tf_keras is not None:
            legacy = "tf_keras" in {v.split(".")[0] for v in self.context.imports.values()} or bool(
                _LEGACY_FLAG.search(self.context.source)
            )
            line = getattr(self._standalone, "lineno", "?")
            if legacy:
                self.report(
                    self._tf_keras,
                    f"tf.keras used here and standalone `keras` imported on line {line}: this file brings in "
                    "Keras 2 (tf_keras / TF_USE_LEGACY_KERAS), so they are different libraries",
                )
            else:
                self.report(
                    self._tf_keras,
                    f"tf.keras used here and standalone `keras` imported on line {line}: the same Keras 3 on "
                    "TF 2.21, different libraries only where tf_keras / TF_USE_LEGACY_KERAS is in play",
                    severity=Severity.INFO,
                )
