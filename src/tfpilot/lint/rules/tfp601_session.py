"""TFP601: tf.Session / InteractiveSession (TF1 graph mode)."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.apis import TF1_SESSION, plain_tf1_match
from tfpilot.lint.rule import Invalid, Rule


class Session(Rule):
    """TF2 runs eagerly and has no sessions.

    ``tf.Session`` does not exist in TF2 (AttributeError). ``tf.compat.v1.Session`` still runs
    on TF 2.21, so this rule leaves it to TFP607's one note per file: it runs graphs, usually
    with eager execution disabled, which also disables tf.function, Keras 3 and tf.data's
    Python iteration. The TF2 shape of the same code is: call functions directly, and wrap the
    training step in ``@tf.function`` for graph speed.
    """

    code = "TFP601"
    name = "tf1-session"
    message = "tf.Session is TF1 graph mode; TF2 has no sessions"
    fix_hint = "Call the model and functions directly; put the training step in a @tf.function"
    severity = Severity.ERROR
    category = "tf1 -> tf2"
    tokens = ("Session",)
    VALID = [
        """
import tensorflow as tf

@tf.function
def step(x):
    return x * 2

print(step(tf.constant(1.0)))
""",
        # TF 2.21 still has it through compat.v1: TFP607 notes the file once instead
        """
import tensorflow.compat.v1 as tf

sess = tf.InteractiveSession()
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

with tf.Session() as sess:
    print(sess.run(tf.constant(1.0)))
""",
            line=4,
        ),
        Invalid(
            """
import tensorflow as tf

sess = tf.InteractiveSession()
""",
            line=4,
        ),
    ]

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        match = plain_tf1_match(qualname, TF1_SESSION)
        if match is not None:
            self.report(
                node, f"`{self.context.dotted(node) or match}` is TF1 graph mode; TF2 runs eagerly and has no sessions"
            )
