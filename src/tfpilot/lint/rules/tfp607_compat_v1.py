"""TFP607: tf.compat.v1 and switching TF2 behaviour off."""

from __future__ import annotations

import ast

from tfpilot.lint.apis import TF1_COVERED, TF1_MODE_SWITCHES, tf1_match, tf1_name
from tfpilot.lint.rule import Invalid, Rule

_COMPAT_V1 = "tensorflow.compat.v1"


def _is_compat_v1(name: str) -> bool:
    return name == _COMPAT_V1 or name.startswith(_COMPAT_V1 + ".")


class CompatV1(Rule):
    """``tf.compat.v1`` keeps TF1 semantics alive inside a TF2 program.

    It is how tf_upgrade_v2 makes old code run, not a destination: compat.v1 APIs need graph
    mode (``disable_eager_execution`` / ``disable_v2_behavior``), which turns off eager
    execution, tf.function semantics and Keras 3 for the whole process, and they get no new
    features or fixes.
    """

    code = "TFP607"
    name = "tf-compat-v1"
    message = "tf.compat.v1 keeps TF1 semantics alive"
    fix_hint = "Port to the TF2 API; `tfpilot migrate SRC DEST` rewrites what it can and lists the rest"
    category = "tf1 -> tf2"
    tokens = ("compat", "disable_v2_behavior", "disable_eager_execution", "enable_eager_execution")
    VALID = [
        """
import tensorflow as tf

x = tf.constant(1.0)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
""",
            line=2,
        ),
        Invalid(
            """
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
""",
            line=4,
        ),
        Invalid(
            """
import tensorflow as tf

init = tf.compat.v1.initializers.glorot_uniform()
""",
            line=4,
        ),
    ]

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _is_compat_v1(alias.name):
                self.report(node, f"`import {alias.name}` runs this module on TF1 APIs")
                return

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            return
        if _is_compat_v1(module) or (module == "tensorflow.compat" and any(a.name == "v1" for a in node.names)):
            self.report(node, f"`from {module} import ...` runs this module on TF1 APIs")

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        if not _is_compat_v1(qualname):
            return
        name = tf1_name(qualname) or ""
        if tf1_match(qualname, TF1_MODE_SWITCHES) is not None:
            self.report(node, f"tf.{name}() switches TF2 behaviour off for the whole process")
            return
        if _is_compat_v1(self.context.root_binding(node) or ""):
            return  # reached through a compat.v1 import, which is reported once
        if tf1_match(qualname, TF1_COVERED) is None:
            self.report(node, f"`{self.context.dotted(node)}` is a TF1 API kept alive by tf.compat.v1")
