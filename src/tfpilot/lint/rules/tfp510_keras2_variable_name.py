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

    def visit_For(self, node: ast.For) -> None:
        self._note_target(node.target, node.iter)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._note_target(node.target, node.iter)

    def _note_target(self, target: ast.expr, iterated: ast.expr) -> None:
        if (
            isinstance(iterated, ast.Attribute)
            and iterated.attr in _WEIGHT_COLLECTIONS
            and isinstance(target, ast.Name)
        ):
            self._weight_names.add(target.id)

    def visit_Compare(self, node: ast.Compare) -> None:
        if not self._weight_names:
            return
        sides = [node.left, *node.comparators]
        if any(self._weight_name(side) for side in sides) and any(_scoped_literal(side) for side in sides):
            self.report(node, self._message(node))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not self._weight_names or not isinstance(func, ast.Attribute) or func.attr not in _STRING_TESTS:
            return
        if self._weight_name(func.value) and any(_scoped_literal(a) for a in node.args):
            self.report(node, self._message(node))

    def _weight_name(self, node: ast.expr) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "name"
            and isinstance(node.value, ast.Name)
            and node.value.id in self._weight_names
        )

    @staticmethod
    def _message(node: ast.AST) -> str:
        return (
            f"`{ast.unparse(node)}`: Keras 3 weight names are short ('embeddings', no scope, no ':0'; the "
            "scoped name is `.path`), so this test never matches on Keras 3"
        )


def _scoped_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(":0")
