"""TFP609: TF1 optimizers, initializers and graph collections."""

from __future__ import annotations

import ast

from tfpilot.lint.apis import TF1_TRAINING, plain_tf1_match
from tfpilot.lint.rule import Invalid, Rule


class Tf1TrainingApi(Rule):
    """TF1 training APIs (``tf.train.*Optimizer``, initializers, collections) need a graph.

    ``optimizer.minimize(loss)`` with a tensor loss, ``global_variables_initializer`` and
    ``tf.get_collection`` only make sense in a TF1 graph run by a session. In TF2 the Keras
    optimizers apply gradients from a GradientTape (or model.fit does), and variables
    initialise themselves when created.
    Reached through ``tf.compat.v1`` the API still exists on TF 2.21: this rule reports the
    removed TF1 spelling only and leaves compat.v1 files to TFP607's one note per file.
    """

    code = "TFP609"
    name = "tf1-training-api"
    message = "TF1 graph-mode training API"
    fix_hint = (
        "Use keras.optimizers (Adam, SGD, ...) with tf.GradientTape or model.fit; drop the "
        "initializers (TF2 variables initialise on creation) and graph collections"
    )
    category = "tf1 -> tf2"
    tokens = ("train.", "initializer", "variables", "collection", "GraphKeys", "default_graph")
    VALID = [
        """
import keras

optimizer = keras.optimizers.Adam(learning_rate=1e-3)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)
init = tf.global_variables_initializer()
""",
            line=4,
        ),
    ]

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        match = plain_tf1_match(qualname, TF1_TRAINING)
        if match is not None:
            self.report(node, f"`{self.context.dotted(node) or match}` is TF1 graph-mode training API")
