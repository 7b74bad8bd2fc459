"""TFP307: `.cache()` after `.shuffle()`."""

from __future__ import annotations

import ast

from tfpilot.lint.rule import Invalid, Rule


class CacheAfterShuffle(Rule):
    """``.cache()`` after ``.shuffle()`` records the first epoch's order and replays it.

    Every later epoch then sees the examples in exactly the same order, which is the
    opposite of what the shuffle was for. Cache first, then shuffle, so each epoch reshuffles
    the cached elements.
    """

    code = "TFP307"
    name = "cache-after-shuffle"
    message = ".cache() after .shuffle() freezes the first epoch's order"
    fix_hint = "Cache before shuffling: ds.cache().shuffle(buffer_size)"
    category = "tf.data"
    tokens = ("cache",)
    calls = frozenset({"cache"})
    VALID = [
        """
import tensorflow as tf

ds = tf.data.Dataset.range(100).cache().shuffle(100).batch(10)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

ds = tf.data.Dataset.range(100).shuffle(100).cache().batch(10)
""",
            line=4,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "cache":
            return
        pipeline = self.context.pipeline(func.value)
        if pipeline.is_dataset and pipeline.index("shuffle") is not None:
            self.report(node, ".cache() after .shuffle(): every epoch replays the first epoch's order")
