"""TFP602: tf.placeholder and feed_dict."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.apis import TF1_PLACEHOLDER, TF1_SESSION, plain_tf1_match
from tfpilot.lint.rule import Invalid, Rule

_TF1_GRAPH_INPUTS = TF1_PLACEHOLDER | TF1_SESSION


class PlaceholderFeedDict(Rule):
    """Placeholders and ``feed_dict`` feed a TF1 graph through a session.

    TF2 functions take tensors as arguments: the placeholder becomes a function parameter (with
    an ``input_signature`` when the shape must be fixed) and ``feed_dict`` becomes the call.
    Feeding NumPy through feed_dict also copies every batch through Python, which tf.data avoids.
    Through ``tf.compat.v1`` both still run on TF 2.21 (in graph mode); TFP607 notes that once
    per file, so a feed_dict in a file that reaches its sessions through compat.v1 is left alone.
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
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
x = tf.placeholder(tf.float32, [None, 3])
with tf.Session() as sess:
    sess.run(tf.reduce_sum(x), feed_dict={x: [[1.0, 2.0, 3.0]]})
""",
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

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._feeds: list[ast.keyword] = []
        self._plain_tf1 = False

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        match = plain_tf1_match(qualname, TF1_PLACEHOLDER)
        if match is not None:
            self.report(
                node,
                f"`{self.context.dotted(node) or match}` is a TF1 graph input; TF2 functions take tensors as arguments",
            )
        if not self._plain_tf1 and plain_tf1_match(qualname, _TF1_GRAPH_INPUTS) is not None:
            self._plain_tf1 = True

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg == "feed_dict":
            self._feeds.append(node)

    def finish(self) -> None:
        # A session reached through tf.compat.v1 takes feed_dict on TF 2.21; only a file that also
        # spells TF1 the removed way (tf.Session, tf.placeholder) or never mentions compat.v1 at
        # all (a helper handed some session) gets the claim.
        if not self._plain_tf1 and "compat.v1" in self.context.source:
            return
        for node in self._feeds:
            self.report(node, "feed_dict feeds a TF1 session; TF2 passes data as function arguments")
