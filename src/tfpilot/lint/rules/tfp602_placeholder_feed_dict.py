"""TFP602: tf.placeholder and feed_dict."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.apis import TF1_PLACEHOLDER, tf1_match
from tfpilot.lint.rule import Invalid, Rule


class PlaceholderFeedDict(Rule):
    """Placeholders and ``feed_dict`` feed a TF1 graph through a session.

    TF2 functions take tensors as arguments: the placeholder becomes a function parameter (with
    an ``input_signature`` when the shape must be fixed) and ``feed_dict`` becomes the call.
    Feeding NumPy through feed_dict also copies every batch through Python, which tf.data avoids.
    """

    code = "TFP602"
    name = "tf1-placeholder"
    message = "tf.placeholder / feed_dict are TF1 graph inputs"
    fix_hint = (
        "Turn placeholders into function arguments (@tf.function with an input_signature) and "
        "feed data with tf.data instead of feed_dict"
    )
    severity = Severity.ERROR
    category = "tf1 -> tf2"
    tokens = ("placeholder", "feed_dict")
    VALID = [
        """
import tensorflow as tf

@tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
def predict(x):
    return tf.reduce_sum(x, axis=1)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
""",
            line=4,
        ),
        Invalid(
            """
def run(sess, train_op, x, batch):
    sess.run(train_op, feed_dict={x: batch})
""",
            line=3,
        ),
    ]

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        match = tf1_match(qualname, TF1_PLACEHOLDER)
        if match is not None:
            self.report(
                node,
                f"`{self.context.dotted(node) or match}` is a TF1 graph input; TF2 functions take tensors as arguments",
            )

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg == "feed_dict":
            self.report(node, "feed_dict feeds a TF1 session; TF2 passes data as function arguments")
