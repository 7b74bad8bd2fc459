"""TFP303: `.shuffle()` after `.batch()`."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.rule import Invalid, Rule


class ShuffleAfterBatch(Rule):
    """Shuffling after batching shuffles whole batches, not examples.

    The same examples stay together in the same batch every epoch, so the gradient noise that
    shuffling is meant to provide is mostly gone, and any ordering in the source (sorted by
    class, by date) survives inside each batch.

    A note (info), not a warning: the batch order still changes every epoch, and on real code
    batching first is mostly deliberate (a vectorised map over whole batches, a cache of
    batches, pairs already shuffled in Python), where the fixed batch-mates are harmless. A
    ``batch()`` that is followed by another ``batch()`` after the shuffle is not a batch at all
    but a window (``chars.batch(seq_len + 1)`` cuts text into sequences) and is not reported.
    """

    code = "TFP303"
    name = "shuffle-after-batch"
    message = ".shuffle() after .batch() shuffles batches, not examples"
    fix_hint = "Shuffle before batching: ds.shuffle(buffer_size).batch(batch_size)"
    severity = Severity.INFO
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
        # the first batch() cuts characters into sequences; the sequences are shuffled, then batched
        """
import tensorflow as tf

chars = tf.data.Dataset.from_tensor_slices(tf.range(1000))
sequences = chars.batch(101, drop_remainder=True)
dataset = sequences.map(lambda s: (s[:-1], s[1:]))
dataset = dataset.shuffle(10000).batch(64, drop_remainder=True)
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
        if unbatched is not None and unbatched > batched:
            return
        if self._batched_after(node):
            return  # the earlier batch() was a window: shuffling windows before batching is right
        self.report(node, ".shuffle() after .batch() shuffles whole batches: examples keep their batch-mates")

    def _batched_after(self, node: ast.Call) -> bool:
        """``....shuffle(n).batch(b)``: the chain that continues this shuffle batches again."""
        stack = self.context.stack
        position = len(stack) - 1  # stack[-1] is the shuffle call
        while position >= 2:
            attribute, call = stack[position - 1], stack[position - 2]
            if not (isinstance(attribute, ast.Attribute) and isinstance(call, ast.Call) and call.func is attribute):
                return False
            if attribute.attr in ("batch", "padded_batch"):
                return True
            position -= 2
        return False
