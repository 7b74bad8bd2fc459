"""TFP307: `.cache()` after `.shuffle()`."""

from __future__ import annotations

import ast

from tfpilot.lint.patterns import is_constant, keyword
from tfpilot.lint.rule import Invalid, Rule


def _reshuffles(call: ast.Call) -> bool:
    """shuffle() reshuffles every epoch unless told reshuffle_each_iteration=False."""
    flag = keyword(call, "reshuffle_each_iteration")
    if flag is None:
        return not (len(call.args) >= 3 and is_constant(call.args[2], False))
    return not is_constant(flag.value, False)


class CacheAfterShuffle(Rule):
    """``.cache()`` after ``.shuffle()`` records the first epoch's order and replays it.

    Every later epoch then sees the examples in exactly the same order, which is the
    opposite of what the shuffle was for. Cache first, then shuffle, so each epoch reshuffles
    the cached elements. A shuffle with ``reshuffle_each_iteration=False`` (a fixed train/test
    split) is meant to keep its order, and ``take(1).cache().repeat()`` replays one element on
    purpose: neither is reported.
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
        """
import tensorflow as tf

shuffled = tf.data.Dataset.range(100).shuffle(100, seed=42, reshuffle_each_iteration=False)
test = shuffled.skip(80).batch(10).cache()
fake = shuffled.batch(10).take(1).cache().repeat()
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
        if not pipeline.is_dataset:
            return
        steps = pipeline.steps
        for position in range(len(steps) - 1, -1, -1):
            step = steps[position]
            if step.method == "take" and step.call.args and is_constant(step.call.args[0], 1):
                return  # take(1).cache(): one element replayed on purpose (a fake-data loop)
            if step.method == "shuffle":
                if _reshuffles(step.call):
                    self.report(node, ".cache() after .shuffle(): every epoch replays the first epoch's order")
                    return
                # reshuffle_each_iteration=False: a fixed split or order, meant to stay as it is
