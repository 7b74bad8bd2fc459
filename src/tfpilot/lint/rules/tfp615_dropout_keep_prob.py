"""TFP615: TF1's `keep_prob` passed to TF2's `tf.nn.dropout`, whose second argument is `rate`."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.rule import Invalid, Rule


class DropoutKeepProb(Rule):
    """TF2's ``tf.nn.dropout(x, rate)`` takes the fraction to *drop*; TF1's took ``keep_prob``.

    ``tf.nn.dropout(h, keep_prob)`` with ``keep_prob = 0.9`` ran in TF1 keeping 90% of the units;
    in TF2 the same call drops 90% of them and scales the rest by 10, silently (a training run
    that learns far worse, not an error). The keyword ``keep_prob=`` itself raises TypeError.
    ``test_lint_tf_premises.py`` runs both on the installed TensorFlow. Reported where the second
    positional argument's name says it is a keep probability, or ``keep_prob=`` is passed;
    ``tf.compat.v1.nn.dropout`` still takes ``keep_prob`` and is left alone. A note until it earns
    a warning: of its two findings on the labelled corpora one was harmless (``keep_prob=0.5``
    drops half either way).
    """

    code = "TFP615"
    name = "dropout-keep-prob"
    message = "tf.nn.dropout's second argument is rate (the fraction dropped), not TF1's keep_prob"
    fix_hint = "Pass rate=1 - keep_prob: tf.nn.dropout(x, rate=1 - keep_prob)"
    severity = Severity.INFO
    category = "tf1 -> tf2"
    tokens = ("keep",)
    calls = frozenset({"dropout"})
    VALID = [
        """
import tensorflow as tf

def layer(h, keep_prob):
    return tf.nn.dropout(h, rate=1 - keep_prob)
""",
        """
import tensorflow.compat.v1 as tf

def layer(h, keep_prob):
    return tf.nn.dropout(h, keep_prob)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

def layer(h, keep_prob):
    return tf.nn.dropout(h, keep_prob)
""",
            line=5,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        if self.context.qualname(node.func) != "tensorflow.nn.dropout":
            return
        if any(keyword.arg == "keep_prob" for keyword in node.keywords):
            self.report(
                node, "`tf.nn.dropout(..., keep_prob=...)`: TF2 has no keep_prob (TypeError); pass rate=1 - keep_prob"
            )
            return
        if len(node.args) < 2:
            return
        second = ast.unparse(node.args[1])
        if "keep" in second.lower():
            self.report(
                node,
                f"`tf.nn.dropout(..., {second})`: TF2's second argument is rate, the fraction dropped, so a keep "
                f"probability of 0.9 drops 90% of the units; pass rate=1 - {second}",
            )
