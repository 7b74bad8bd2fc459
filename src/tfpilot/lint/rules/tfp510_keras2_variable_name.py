"""TFP510: a Keras weight picked by its Keras 2 name (`"embedding/embeddings:0"`)."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.lint.rule import Invalid, Rule

# collections of Keras variables: their `.name` is the short name in Keras 3
_WEIGHT_COLLECTIONS = frozenset(
    {"weights", "trainable_weights", "non_trainable_weights", "variables", "trainable_variables"}
)
_STRING_TESTS = frozenset({"endswith", "startswith", "find", "index", "count"})
_REGEX_TESTS = frozenset({"match", "search", "fullmatch"})


class Keras2VariableName(Rule):
    """Keras 3 variables are named ``kernel`` / ``embeddings``, not ``dense/kernel:0``.

    Keras 2 weights carried TensorFlow's scoped variable name with the output index
    (``embedding/embeddings:0``). A Keras 3 variable's ``name`` is the short name (``embeddings``;
    the scoped one is ``path``, without ``:0``), so a test of a weight's name against a ``...:0``
    string is never true on Keras 3: the weight is never found and the code fails later on the
    ``None`` or the empty list (``test_lint_tf_premises.py`` reads the names on the installed
    Keras). Reported where the tested variable is taken from a Keras weight collection
    (``for w in layer.weights``, ``[w for w in model.trainable_variables if ...]``) and the string
    ends in ``:0``; raw ``tf.Variable`` names still end in ``:0`` and are left alone.
    """

    code = "TFP510"
    name = "keras2-variable-name"
    message = "Keras 3 weight names have no scope and no ':0': this name test never matches"
    fix_hint = "Compare weight.path (e.g. 'embedding/embeddings') or pick the weight from its layer (layer.embeddings)"
    category = "keras 3"
    keras3_only = True
    tokens = (":0",)
    VALID = [
        """
import keras

layer = keras.layers.Embedding(100, 8)
vectors = [w for w in layer.weights if w.path.endswith("embeddings")]
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

layer = keras.layers.Embedding(100, 8)
vectors = [w for w in layer.weights if w.name.endswith("/embeddings:0")]
""",
            line=5,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        # names bound by a loop or comprehension over a Keras weight collection
        self._weight_names: set[str] = set()
        # names bound to a weight collection itself (`params = model.weights`)
        self._collections: set[str] = set()
        # names bound to a compiled regular expression that expects a `...:0` name
        self._scoped_patterns: set[str] = set()

    def visit_Assign(self, node: ast.Assign) -> None:
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if not names:
            return
        if self._collection(node.value):
            self._collections.update(names)
        elif (
            isinstance(node.value, ast.Call)
            and _regex_call(node.value, "compile")
            and node.value.args
            and _scoped_pattern(node.value.args[0])
        ):
            self._scoped_patterns.update(names)

    def visit_For(self, node: ast.For) -> None:
        self._note_target(node.target, node.iter)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._note_target(node.target, node.iter)

    def _collection(self, node: ast.expr) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr in _WEIGHT_COLLECTIONS) or (
            isinstance(node, ast.Name) and node.id in self._collections
        )

    def _note_target(self, target: ast.expr, iterated: ast.expr) -> None:
        if isinstance(target, ast.Name):
            if self._collection(iterated):
                self._weight_names.add(target.id)
            return
        if not isinstance(target, ast.Tuple) or not isinstance(iterated, ast.Call):
            return
        callee = iterated.func
        # `for i, w in enumerate(model.weights)`, `for value, w in zip(values, model.weights)`
        if isinstance(callee, ast.Name) and callee.id == "enumerate" and len(target.elts) == 2 and iterated.args:
            self._note_target(target.elts[1], iterated.args[0])
        elif isinstance(callee, ast.Name) and callee.id == "zip" and len(target.elts) == len(iterated.args):
            for element, source in zip(target.elts, iterated.args, strict=True):
                self._note_target(element, source)

    def visit_Compare(self, node: ast.Compare) -> None:
        if not self._weight_names:
            return
        sides = [node.left, *node.comparators]
        if any(self._weight_name(side) for side in sides) and any(_scoped_literal(side) for side in sides):
            self.report(node, self._message(node))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute):
            return
        if func.attr in _STRING_TESTS:
            if self._weight_name(func.value) and any(_scoped_literal(a) for a in node.args):
                self.report(node, self._message(node))
        elif func.attr in _REGEX_TESTS:
            # re.match(r"...:0", w.name) or PATTERN.match(w.name) with PATTERN = re.compile(r"...:0")
            if _regex_call(node, func.attr) and len(node.args) >= 2:
                pattern, subject = node.args[0], node.args[1]
                scoped = _scoped_pattern(pattern)
            elif isinstance(func.value, ast.Name) and func.value.id in self._scoped_patterns and node.args:
                subject, scoped = node.args[0], True
            else:
                return
            if scoped and self._weight_name(subject):
                self.report(node, self._message(node))

    def _weight_name(self, node: ast.expr) -> bool:
        if not (isinstance(node, ast.Attribute) and node.attr == "name"):
            return False
        value = node.value
        if isinstance(value, ast.Subscript):  # model.weights[0].name
            return self._collection(value.value)
        return isinstance(value, ast.Name) and value.id in self._weight_names

    @staticmethod
    def _message(node: ast.AST) -> str:
        return (
            f"`{ast.unparse(node)}`: Keras 3 weight names are short ('embeddings', no scope, no ':0'; the "
            "scoped name is `.path`), so this test never matches on Keras 3"
        )


def _regex_call(node: ast.expr, function: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == function
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "re"
    )


def _scoped_pattern(node: ast.expr) -> bool:
    """A regular expression that only matches a name ending in TensorFlow's `:0`."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    return node.value.rstrip("$").endswith(":0")


def _scoped_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(":0")
