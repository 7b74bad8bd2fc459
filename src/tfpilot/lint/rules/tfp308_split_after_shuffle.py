"""TFP308: a train/test split taken with `take()` / `skip()` from a dataset that reshuffles."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.rule import Invalid, Rule


class SplitAfterShuffle(Rule):
    """A `take()` / `skip()` split of a shuffled dataset mixes the splits every epoch.

    ``shuffle()`` reshuffles on every iteration by default (``reshuffle_each_iteration=True``),
    and ``ds.take(n)`` and ``ds.skip(n)`` each iterate the same shuffle anew: the test set's
    examples are a different random draw each time it is read, and most of them are in the
    training set's draw too. Test and validation scores are then measured on training examples
    (``test_lint_tf_premises.py`` shows the overlap on the installed TensorFlow, with and without
    a seed). Reported at the shuffle, where both ``take`` and ``skip`` are taken from it in one
    scope; ``reshuffle_each_iteration=False`` fixes the order once and is not reported.

    A note (info) until it earns a warning: on the labelled corpora its findings were 7 right of
    8 (the eighth a textbook's deliberate "wrong way"), under the 90% a warning needs.
    """

    code = "TFP308"
    name = "split-after-shuffle"
    message = "take()/skip() split of a dataset that reshuffles every iteration: the splits overlap"
    fix_hint = (
        "Split before shuffling, or shuffle once: ds.shuffle(n, reshuffle_each_iteration=False), "
        "then take()/skip(); shuffle the training split on its own afterwards"
    )
    severity = Severity.INFO
    category = "tf.data"
    tokens = (".skip(",)
    calls = frozenset({"take", "skip"})
    VALID = [
        # a window of a shuffled dataset, not a split
        """
import tensorflow as tf

shuffled = tf.data.Dataset.range(1000).shuffle(100).batch(10)
for batch in shuffled.skip(60).take(5):
    print(batch)
""",
        """
import tensorflow as tf

ds = tf.data.Dataset.range(1000).shuffle(1000, reshuffle_each_iteration=False)
test = ds.take(200)
train = ds.skip(200).shuffle(800)
""",
        """
import tensorflow as tf

ds = tf.data.Dataset.range(1000)
test = ds.take(200)
train = ds.skip(200).shuffle(800)
""",
        # a random subset, no split: nothing is shared with another part
        """
import tensorflow as tf

ds = tf.data.Dataset.range(1000).shuffle(1000)
preview = ds.take(5)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

ds = tf.data.Dataset.range(1000)
ds = ds.shuffle(1000)
test = ds.take(200)
valid = ds.skip(200).take(100)
train = ds.skip(300)
""",
            line=5,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        # (scope node, root name) -> the methods split off it and the shuffle they follow
        self._splits: dict[tuple[int, str], tuple[set[str], ast.Call]] = {}

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute):
            return
        # the split's head (`ds.take(n)`) and rest (`ds.skip(n)`) are taken from the name itself;
        # `ds.skip(a).take(b)` alone is a window (a middle part needs a head or rest beside it)
        root = func.value
        if not isinstance(root, ast.Name):
            return
        pipeline = self.context.pipeline(func.value)
        if not pipeline.is_dataset:
            return
        position = pipeline.index("shuffle")
        if position is None:
            return
        shuffle = pipeline.steps[position].call
        if not _reshuffles(shuffle):
            return
        key = (id(self.context.scope.node), root.id)
        methods, _shuffle = self._splits.setdefault(key, (set(), shuffle))
        methods.add(func.attr)

    def finish(self) -> None:
        reported: set[int] = set()
        for methods, shuffle in self._splits.values():
            if {"take", "skip"} <= methods and id(shuffle) not in reported:
                reported.add(id(shuffle))
                self.report(shuffle)


def _reshuffles(call: ast.Call) -> bool:
    """True unless ``reshuffle_each_iteration`` is given and not the literal True (the third
    positional argument is ``seed``, the keyword is how code turns reshuffling off)."""
    for keyword in call.keywords:
        if keyword.arg == "reshuffle_each_iteration":
            return isinstance(keyword.value, ast.Constant) and keyword.value.value is True
        if keyword.arg is None:
            return False  # **options: cannot tell
    return len(call.args) < 3
