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
from typing import TYPE_CHECKING, Any

from tfpilot.lint.apis import keras_name
from tfpilot.lint.nodes import child_nodes, walk_nodes

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
        # What was read already: a function by itself, or a function under one set of literal arguments
        # (the same helper called with other literals is read again; with the same ones, never twice).
        self.seen: set[tuple[int, tuple[tuple[str, Any], ...]]] = set()

    def function(
        self, function: ast.AST | None, at: ast.AST, depth: int, call: ast.Call | None = None
    ) -> StatefulUse | None:
        """`call`: the call that reaches `function` (`preprocess(x, mode="eval")`), whose constant
        arguments decide which branches of its body run."""
        if function is None or depth > _MAX_DEPTH:
            return None
        context = self.context
        env: dict[str, Any] = {}
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and call is not None:
            # Judged per call: the same function may run its random branch for one map and not another.
            env = _constant_arguments(function, call)
        key = (id(function), tuple(sorted(env.items(), key=lambda item: item[0])))
        if key in self.seen:
            return None
        self.seen.add(key)
        if env and isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self.body(function.body, depth, env)
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
                return self.function(definition, at, depth + 1, call)
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
        for node in walk_nodes(self.context.tree):
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

    def body(self, statements: Sequence[ast.AST], depth: int, env: dict[str, Any] | None = None) -> StatefulUse | None:
        context = self.context
        for statement in statements:
            for node in _live_nodes(statement, env or {}):
                if not isinstance(node, ast.Call):
                    continue
                qualname = context.qualname(node.func) or ""
                what = _stateful_qualname(qualname)
                if what is not None:
                    return StatefulUse(what, node.lineno)
                if isinstance(node.func, ast.Attribute) and node.func.attr == "lookup" and not qualname:
                    return StatefulUse(".lookup() on a table", node.lineno)
                if isinstance(node.func, (ast.Name, ast.Attribute)) and not qualname.startswith("tensorflow."):
                    found = self.function(node.func, node, depth + 1, node if isinstance(node.func, ast.Name) else None)
                    if found is not None:
                        return found
        return None


_UNKNOWN = object()


def _constant_arguments(function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call) -> dict[str, Any]:
    """The parameters of `function` whose value at `call` is a literal (passed, or the default)."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    env: dict[str, Any] = {}
    for parameter, default in zip(
        positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True
    ):
        env[parameter.arg] = default.value if isinstance(default, ast.Constant) else _UNKNOWN
    for parameter, keyword_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        if keyword_default is not None:
            env[parameter.arg] = keyword_default.value if isinstance(keyword_default, ast.Constant) else _UNKNOWN
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return {}  # *args / **kwargs: which parameter gets what is unknown
    for parameter, value in zip(positional, call.args, strict=False):
        env[parameter.arg] = value.value if isinstance(value, ast.Constant) else _UNKNOWN
    for keyword in call.keywords:
        if keyword.arg is not None:
            env[keyword.arg] = keyword.value.value if isinstance(keyword.value, ast.Constant) else _UNKNOWN
    return {name: value for name, value in env.items() if value is not _UNKNOWN}


def _decided(test: ast.expr, env: dict[str, Any]) -> bool | None:
    """The value of an `if` test that only compares a parameter with a literal, when the parameter's is known."""
    if isinstance(test, ast.Name) and test.id in env:
        return bool(env[test.id])
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _decided(test.operand, env)
        return None if inner is None else not inner
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot))
    ):
        left, right = test.left, test.comparators[0]
        if isinstance(left, ast.Constant) and isinstance(right, ast.Name):
            left, right = right, left
        if isinstance(left, ast.Name) and left.id in env and isinstance(right, ast.Constant):
            equal = env[left.id] == right.value
            return equal if isinstance(test.ops[0], (ast.Eq, ast.Is)) else not equal
    return None


def _live_nodes(statement: ast.AST, env: dict[str, Any]) -> list[ast.AST]:
    """ast.walk of `statement`, leaving out the branches a known argument rules out
    (`if mode == "train": random_crop(...)` under `mode="eval"`)."""
    if not env:
        return list(walk_nodes(statement))
    found: list[ast.AST] = []
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, (ast.If, ast.IfExp)):
            decided = _decided(node.test, env)
            if decided is not None:
                taken = node.body if decided else node.orelse
                stack.extend(reversed(taken if isinstance(taken, list) else [taken]))
                continue
        stack.extend(reversed(list(child_nodes(node))))
    return found


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
