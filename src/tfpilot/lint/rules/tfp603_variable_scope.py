"""TFP603: tf.variable_scope / tf.get_variable."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.apis import TF1_VARIABLE_SCOPE, plain_tf1_match
from tfpilot.lint.rule import Invalid, Rule


class VariableScope(Rule):
    """Variable scopes and ``get_variable`` share variables by name through a global graph.

    TF2 has no global variable store: variables belong to the objects that create them
    (Keras layers, tf.Module). Code that relies on ``reuse=True`` to share weights silently
    creates new, separate variables under eager execution.
    Reached through ``tf.compat.v1`` the API still exists on TF 2.21: this rule reports the
    removed TF1 spelling only and leaves compat.v1 files to TFP607's one note per file.
    """

    code = "TFP603"
    name = "tf1-variable-scope"
    message = "tf.variable_scope / tf.get_variable rely on TF1's global variable store"
    fix_hint = (
        "Create variables in Keras layers (self.add_weight in build) or as tf.Module attributes; "
        "share weights by reusing the layer object; use tf.name_scope only for names"
    )
    severity = Severity.ERROR
    category = "tf1 -> tf2"
    tokens = ("variable_scope", "get_variable", "AUTO_REUSE", "get_local_variable")
    VALID = [
        """
import keras

class Dense(keras.layers.Layer):
    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], 4))
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

with tf.variable_scope("encoder", reuse=tf.AUTO_REUSE):
    w = tf.get_variable("w", [3, 4])
""",
            line=4,
        ),
    ]

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        match = plain_tf1_match(qualname, TF1_VARIABLE_SCOPE)
        if match is not None:
            self.report(node, f"`{self.context.dotted(node) or match}` relies on TF1's global variable store")
