"""TFP303: `.shuffle()` after `.batch()`."""

from __future__ import annotations

import ast

from tfpilot.lint.rule import Invalid, Rule


class ShuffleAfterBatch(Rule):
    """Shuffling after batching shuffles whole batches, not examples.

    The same examples stay together in the same batch every epoch, so the gradient noise that
    shuffling is meant to provide is mostly gone, and any ordering in the source (sorted by
    class, by date) survives inside each batch.
    """

    code = "TFP303"
    name = "shuffle-after-batch"
    message = ".shuffle() after .batch() shuffles batches, not examples"
    fix_hint = "Shuffle before batching: ds.shuffle(buffer_size).batch(batch_size)"
    category = "tf.data"
    tokens = ("shuffle",)
    calls = frozenset({"shuffle"})
    VALID = [
        """
import tensorflow as tf

ds = tf.data.Dataset.range(100).shuffle(100).batch(10)
""",
        """
import random

items = [1, 2, 3]
random.shuffle(items)
""",
        """
import tensorflow as tf

def make(dataset, batch_size=None):
    if batch_size is not None:
        dataset = dataset.batch(batch_size)
    else:
        dataset = dataset.shuffle(1024)
    return dataset
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

ds = tf.data.Dataset.range(100).batch(10).shuffle(100)
""",
            line=4,
        ),
        Invalid(
            """
import tensorflow as tf

ds = tf.data.Dataset.range(100)
ds = ds.batch(10)
ds = ds.shuffle(100)
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "shuffle":
            return
        pipeline = self.context.pipeline(func.value)
        if not pipeline.is_dataset:
            return
        batched = max(
            (i for i in (pipeline.index("batch"), pipeline.index("padded_batch")) if i is not None),
            default=None,
        )
        if batched is None:
            return
        unbatched = pipeline.index("unbatch")
        if unbatched is None or unbatched < batched:
            self.report(node, ".shuffle() after .batch() shuffles whole batches: examples keep their batch-mates")
