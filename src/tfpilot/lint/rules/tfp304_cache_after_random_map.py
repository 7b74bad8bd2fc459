"""TFP304: `.cache()` after a map that applies random augmentation."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.lint.apis import keras_name
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.rule import Invalid, Rule

_RANDOM_PREFIXES = ("tensorflow.random.", "tensorflow.image.random_", "numpy.random.", "random.")
_SEEDING = ("tensorflow.random.set_seed", "numpy.random.seed", "random.seed")


class CacheAfterRandomMap(Rule):
    """Caching after random augmentation freezes the augmentation.

    ``.cache()`` stores the elements of the first epoch and replays them; if a random flip or
    crop ran before the cache, every epoch sees the same "random" images, and the augmentation
    does nothing but cost the first epoch.
    """

    code = "TFP304"
    name = "cache-after-random-map"
    message = ".cache() after a random augmentation map freezes the augmentation"
    fix_hint = "Cache the deterministic part, then augment: ds.map(decode).cache().map(augment)"
    category = "tf.data"
    tokens = ("cache",)
    calls = frozenset({"cache"})
    VALID = [
        """
import tensorflow as tf

def augment(image):
    return tf.image.random_flip_left_right(image)

ds = tf.data.Dataset.from_tensor_slices(tf.zeros([4, 8, 8, 3]))
ds = ds.cache().map(augment, num_parallel_calls=tf.data.AUTOTUNE)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

def augment(image):
    return tf.image.random_flip_left_right(image)

ds = tf.data.Dataset.from_tensor_slices(tf.zeros([4, 8, 8, 3]))
ds = ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE).cache()
""",
            line=8,
        ),
        Invalid(
            """
import keras
import tensorflow as tf

flip = keras.Sequential([keras.layers.RandomFlip("horizontal")])
ds = tf.data.Dataset.from_tensor_slices(tf.zeros([4, 8, 8, 3]))
ds = ds.map(lambda x: flip(x), num_parallel_calls=tf.data.AUTOTUNE)
ds = ds.cache()
""",
            line=8,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._random_callables: set[str] = set()
        self._random_definitions: dict[int, bool] = {}

    def visit_Assign(self, node: ast.Assign) -> None:
        # `augment = keras.Sequential([layers.RandomFlip(), ...])` is a random callable.
        value = node.value
        if not isinstance(value, ast.Call):
            return
        found = keras_name(self.context.qualname(value.func))
        if found is None or not (found[1].endswith("Sequential") or found[1].startswith("layers.Random")):
            return
        if self._contains_random(value):
            for target in node.targets:
                key = self.context.dotted(target)
                if key:
                    self._random_callables.add(key)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "cache":
            return
        pipeline = self.context.pipeline(func.value)
        if not pipeline.is_dataset:
            return
        for step in pipeline.steps:
            if step.method == "map" and step.call.args and self._is_random_function(step.call.args[0]):
                self.report(
                    node,
                    f".cache() after the random map on line {step.call.lineno}: every epoch replays "
                    "the first epoch's augmentation",
                )
                return

    def _is_random_function(self, function: ast.expr) -> bool:
        if isinstance(function, ast.Lambda):
            return self._contains_random(function.body)
        name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)
        if name is None:
            return False
        if name in self._random_callables:
            return True
        for definition in self.context.function_defs(name):
            known = self._random_definitions.get(id(definition))
            if known is None:
                known = self._random_definitions[id(definition)] = self._contains_random(definition)
            if known:
                return True
        return False

    def _contains_random(self, node: ast.AST) -> bool:
        for item in walk_nodes(node):
            if not isinstance(item, ast.Call):
                continue
            qualname = self.context.qualname(item.func)
            if qualname is not None:
                if qualname.startswith(_RANDOM_PREFIXES) and not qualname.startswith(_SEEDING):
                    return True
                found = keras_name(qualname)
                if found is not None and found[1].rsplit(".", 1)[-1].startswith("Random"):
                    return True
            key = self.context.dotted(item.func)
            if key is not None and key in self._random_callables:
                return True
        return False
