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
    ``tf.compat.v1.nn.dropout`` still takes ``keep_prob`` and is left alone.

    Severity by form: ``keep_prob=`` raises TypeError on every TF 2 call whatever its value, so it
    is an error (round 19's held-out code had three, each stopping a script). The positional forms
    are a note until they earn a warning: of their two findings on the labelled corpora one was
    harmless (``keep_prob=0.5`` drops half either way). A second argument ``1 - p`` (``p`` not a
    keep probability) is TF1's way of turning a drop rate into a keep probability (BERT's
    ``tf.nn.dropout(x, 1.0 - dropout_prob)``): on TF 2 it drops ``1 - p``.
    """

    code = "TFP615"
    name = "dropout-keep-prob"
    message = "tf.nn.dropout's second argument is rate (the fraction dropped), not TF1's keep_prob"
    fix_hint = "Pass rate=1 - keep_prob: tf.nn.dropout(x, rate=1 - keep_prob)"
    severity = Severity.INFO
    category = "tf1 -> tf2"
    tokens = ("dropout",)
    calls = frozenset({"dropout"})
    VALID = [
        """
import tensorflow as tf

def layer(h, keep_prob):
    return tf.nn.dropout(h, rate=1 - keep_prob)
""",
        """
import tensorflow as tf

def layer(h, keep_prob):
    return tf.nn.dropout(h, 1 - keep_prob)
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
        Invalid(
            """
import tensorflow as tf

def layer(h):
    return tf.nn.dropout(h,
                         keep_prob=0.9)
""",
            line=6,
        ),
        Invalid(
            """
import tensorflow as tf

def layer(h, dropout_prob):
    return tf.nn.dropout(h, 1.0 - dropout_prob)
""",
            line=5,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        if self.context.qualname(node.func) != "tensorflow.nn.dropout":
            return
        keyword = next((keyword for keyword in node.keywords if keyword.arg == "keep_prob"), None)
        if keyword is not None:
            self.report(
                keyword,
                "`tf.nn.dropout(..., keep_prob=...)`: TF2 has no keep_prob (TypeError); pass rate=1 - keep_prob",
                severity=Severity.ERROR,
            )
            return
        if len(node.args) < 2:
            return
        argument = node.args[1]
        second = ast.unparse(argument)
        complement = _one_minus(argument)
        if complement is not None:
            if "keep" not in complement.lower():
                self.report(
                    node,
                    f"`tf.nn.dropout(..., {second})`: TF1's keep probability computed from a drop rate; TF2's second "
                    f"argument is the rate itself, so this drops {second} of the units; pass rate={complement}",
                )
        elif "keep" in second.lower():
            self.report(
                node,
                f"`tf.nn.dropout(..., {second})`: TF2's second argument is rate, the fraction dropped, so a keep "
                f"probability of 0.9 drops 90% of the units; pass rate=1 - {second}",
            )


def _one_minus(node: ast.expr) -> str | None:
    """``p`` of ``1 - p`` / ``1.0 - p`` (with ``p`` a keep probability that is TF2's right rate), else None."""
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Sub)
        and isinstance(node.left, ast.Constant)
        and node.left.value in (1, 1.0)
    ):
        return ast.unparse(node.right)
    return None
