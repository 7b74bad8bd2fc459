"""TFP604: tf.contrib."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.patterns import under_feature_check
from tfpilot.lint.rule import Invalid, Rule

_CONTRIB = "tensorflow.contrib"


def _is_contrib(name: str) -> bool:
    return name == _CONTRIB or name.startswith(_CONTRIB + ".")


class Contrib(Rule):
    """``tf.contrib`` was deleted in TF 2.0; importing it fails.

    Its modules moved to Keras (contrib.layers, contrib.slim), tf.data (contrib.data),
    tf.distribute, TensorFlow Addons (now largely in Keras) or nowhere. tf_upgrade_v2 cannot
    rewrite it, so every use needs a person.
    """

    code = "TFP604"
    name = "tf-contrib"
    message = "tf.contrib was removed in TF 2.0"
    fix_hint = (
        "Replace with the TF2 equivalent: contrib.layers/slim -> keras.layers, contrib.data -> "
        "tf.data, contrib.distribute -> tf.distribute, contrib.opt -> keras.optimizers"
    )
    severity = Severity.ERROR
    category = "tf1 -> tf2"
    tokens = ("contrib",)
    VALID = [
        """
import keras

layer = keras.layers.Dense(4)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow.contrib.slim as slim
""",
            line=2,
        ),
        Invalid(
            """
import tensorflow as tf

net = tf.contrib.layers.fully_connected(tf.zeros([1, 3]), 4)
""",
            line=4,
        ),
    ]

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _is_contrib(alias.name):
                self.report(node, f"`import {alias.name}` fails: tf.contrib was removed in TF 2.0")
                return

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            return
        if _is_contrib(module) or (module == "tensorflow" and any(a.name == "contrib" for a in node.names)):
            self.report(node, f"`from {module} import ...` fails: tf.contrib was removed in TF 2.0")

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        if not _is_contrib(qualname):
            return
        binding = self.context.root_binding(node) or ""
        if under_feature_check(self.context, "contrib"):
            return  # `if hasattr(tf, "contrib"): ...`: code that runs on TF1 and TF2 alike
        if not _is_contrib(binding):
            self.report(node, f"`{self.context.dotted(node)}` does not exist: tf.contrib was removed in TF 2.0")
