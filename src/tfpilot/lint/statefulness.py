"""Does a tf.data map function stay sequential on TensorFlow 2.21?

TF 2.21 parallelises a stateless ``Dataset.map`` by itself: the ``map_parallelization`` static
optimization is on by default and rewrites ``MapDataset`` into ``ParallelMapDataset``
(tests/unit/lint/test_lint_tf_premises.py runs this on the installed TensorFlow). It leaves a map
alone when its function is *stateful*, because reordering stateful calls could change results:
``tf.py_function`` / ``numpy_function``, the stateful random ops (``tf.random.uniform``,
``tf.image.random_*``, a ``tf.random.Generator``), lookup tables, and Keras layers built on them
(``StringLookup``, ``TextVectorization``, the ``Random*`` augmentation layers). Only those maps
are worth a ``num_parallel_calls``.

``stateful_use`` answers for the function expression passed to ``map``: the first stateful call
it can see (its own body, the bodies of functions of this file it calls, the Keras layers and
``keras.Sequential`` pipelines it calls by name), or None when it sees none or cannot see the
function at all (imported from another module). None never means "certainly stateless": rules
stay quiet on it, which is the precise side.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tfpilot.lint.apis import keras_name

if TYPE_CHECKING:
    from tfpilot.lint.context import FileContext

__all__ = ["StatefulUse", "stateful_use", "PYTHON_CALLBACKS"]

PYTHON_CALLBACKS = frozenset(
    {
        "tensorflow.py_function",
        "tensorflow.numpy_function",
        "tensorflow.compat.v1.py_func",
        "tensorflow.compat.v1.py_function",
        "tensorflow.compat.v1.numpy_function",
    }
)
# Stateful random ops outside tf.random / tf.image's `random_*` families.
_STATEFUL_QUALNAMES = PYTHON_CALLBACKS | frozenset(
    {
        "tensorflow.nn.dropout",
        "tensorflow.random_crop",
        "tensorflow.compat.v1.random_crop",
        "tensorflow.random_shuffle",
    }
)
# Keras layers whose call holds a lookup table or draws stateful random numbers.
_STATEFUL_KERAS_LAYERS = frozenset(
    {
        "StringLookup",
        "IntegerLookup",
        "TextVectorization",
        "CategoryEncoding",
        "Dropout",
        "GaussianNoise",
        "GaussianDropout",
        "RandomFlip",
        "RandomRotation",
        "RandomZoom",
        "RandomCrop",
        "RandomContrast",
        "RandomTranslation",
        "RandomBrightness",
        "RandomHeight",
        "RandomWidth",
        "RandomGrayscale",
        "RandomHue",
        "RandomSaturation",
        "RandomSharpness",
        "RandomShear",
        "RandomColorJitter",
        "RandomColorDegeneration",
        "RandomPerspective",
        "RandomElasticTransform",
        "RandomErasing",
        "RandomGaussianBlur",
        "RandomInvert",
        "RandomPosterization",
        "RandAugment",
        "AugMix",
        "CutMix",
        "MixUp",
        "Solarization",
    }
)
_KERAS_CONTAINERS = frozenset({"Sequential", "models.Sequential"})
_MAX_DEPTH = 3


@dataclasses.dataclass(frozen=True)
class StatefulUse:
    what: str  # "tf.py_function", "keras.layers.RandomFlip", ...
    line: int


def stateful_use(function: ast.AST | None, context: FileContext, at: ast.AST) -> StatefulUse | None:
    """The first stateful call ``function`` (a map's argument) makes, or None (see module doc)."""
    return _Finder(context).function(function, at, 0)


class _Finder:
    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.seen: set[int] = set()

    def function(self, function: ast.AST | None, at: ast.AST, depth: int) -> StatefulUse | None:
        if function is None or depth > _MAX_DEPTH or id(function) in self.seen:
            return None
        self.seen.add(id(function))
        context = self.context
        if isinstance(function, ast.Lambda):
            return self.body([function.body], depth)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self.body(function.body, depth)
        if isinstance(function, ast.Call):
            qualname = context.qualname(function.func) or ""
            if qualname == "functools.partial" and function.args:
                return self.function(function.args[0], at, depth + 1)
            return self.layer(function)
        if isinstance(function, ast.Name):
            definition = context.resolve_function(function.id, at)
            if definition is not None:
                return self.function(definition, at, depth + 1)
            for value in context.bindings.values(function.id, at, context.scope.node):
                found = self.function(value, at, depth + 1)
                if found is not None:
                    return found
            return self.added_layers(function.id)
        return self.attribute(function, at, depth)

    def added_layers(self, name: str) -> StatefulUse | None:
        """``preprocessing.add(keras.layers.RandomFlip())`` anywhere in the file: a Sequential
        built up layer by layer (often under a flag) holds what any of its ``add`` calls add."""
        if f"{name}.add(" not in self.context.source:
            return None
        for node in ast.walk(self.context.tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == name
                and node.args
                and isinstance(node.args[0], ast.Call)
            ):
                found = self.layer(node.args[0])
                if found is not None:
                    return found
        return None

    def attribute(self, function: ast.AST, at: ast.AST, depth: int) -> StatefulUse | None:
        """``self.augment``: the method of the enclosing class, or what ``self.augment`` holds."""
        context = self.context
        if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
            if function.value.id == "self":
                definition = context.resolve_function(function.attr, at, method=True)
                if definition is not None:
                    return self.function(definition, at, depth + 1)
                for value in context.bindings.values(f"self.{function.attr}", at, context.scope.node):
                    found = self.function(value, at, depth + 1)
                    if found is not None:
                        return found
        return None

    def layer(self, call: ast.Call) -> StatefulUse | None:
        """A Keras layer constructor call: stateful by class, or a Sequential holding one."""
        found = keras_name(self.context.qualname(call.func))
        if found is None:
            return None
        path = found[1]
        if path.rsplit(".", 1)[-1] in _STATEFUL_KERAS_LAYERS:
            return StatefulUse(f"keras.{path}", call.lineno)
        if path in _KERAS_CONTAINERS and call.args and isinstance(call.args[0], (ast.List, ast.Tuple)):
            for element in call.args[0].elts:
                if isinstance(element, ast.Call):
                    inner = self.layer(element)
                    if inner is not None:
                        return inner
        return None

    def body(self, statements: Sequence[ast.AST], depth: int) -> StatefulUse | None:
        context = self.context
        for statement in statements:
            for node in ast.walk(statement):
                if not isinstance(node, ast.Call):
                    continue
                qualname = context.qualname(node.func) or ""
                what = _stateful_qualname(qualname)
                if what is not None:
                    return StatefulUse(what, node.lineno)
                if isinstance(node.func, ast.Attribute) and node.func.attr == "lookup" and not qualname:
                    return StatefulUse(".lookup() on a table", node.lineno)
                if isinstance(node.func, (ast.Name, ast.Attribute)) and not qualname.startswith("tensorflow."):
                    found = self.function(node.func, node, depth + 1)
                    if found is not None:
                        return found
        return None


def _stateful_qualname(qualname: str) -> str | None:
    if not qualname:
        return None
    if qualname in _STATEFUL_QUALNAMES:
        return "tf." + qualname.split(".", 1)[1]
    head, _, leaf = qualname.rpartition(".")
    if head in ("tensorflow.random", "tensorflow.compat.v1.random") and not leaf.startswith(
        ("stateless", "experimental", "set_", "get_", "Generator", "create_rng_state", "split", "fold_in")
    ):
        return f"tf.random.{leaf}"
    if head.endswith("tensorflow.image") and leaf.startswith("random_"):
        return f"tf.image.{leaf}"
    if head.startswith("tensorflow.lookup"):
        return f"tf.lookup.{leaf}"
    found = keras_name(qualname)
    if found is not None and found[1].rsplit(".", 1)[-1] in _STATEFUL_KERAS_LAYERS:
        return f"keras.{found[1]}"
    return None
