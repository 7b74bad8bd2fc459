"""TFP306: `.repeat()` before `.shuffle()`."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.rule import Invalid, Rule


class RepeatBeforeShuffle(Rule):
    """``.repeat()`` before ``.shuffle()`` blurs epoch boundaries.

    The shuffle buffer then mixes the end of one epoch with the start of the next: some
    examples are seen twice before others are seen once, and "per epoch" validation no longer
    corresponds to one pass over the data. Shuffle first, then repeat.
    """

    code = "TFP306"
    name = "repeat-before-shuffle"
    message = ".repeat() before .shuffle() mixes examples across epochs"
    fix_hint = "Shuffle, then repeat: ds.shuffle(buffer_size).repeat()"
    severity = Severity.INFO
    category = "tf.data"
    tokens = ("repeat",)
    calls = frozenset({"shuffle"})
    VALID = [
        """
import tensorflow as tf

ds = tf.data.Dataset.range(100).shuffle(100).repeat().batch(10)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

ds = tf.data.Dataset.range(100).repeat().shuffle(100).batch(10)
""",
            line=4,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "shuffle":
            return
        pipeline = self.context.pipeline(func.value)
        if pipeline.is_dataset and pipeline.index("repeat") is not None:
            self.report(node, ".shuffle() after .repeat(): the buffer mixes examples of consecutive epochs")
