"""TFP513: Python `if` / `while` on a tensor in a Keras 3 layer's `call()` (Keras 3 does not AutoGraph it)."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.rule import Invalid, Rule

# Calls whose result is certainly a tensor (never a Python bool or number), by qualified-name prefix.
_TENSOR_PREFIXES = (
    "tensorflow.random.",
    "tensorflow.math.",
    "tensorflow.reduce_",
    "tensorflow.shape",
    "tensorflow.size",
    "tensorflow.rank",
    "tensorflow.norm",
    "tensorflow.greater",
    "tensorflow.less",
    "tensorflow.equal",
    "tensorflow.logical_",
    "keras.ops.",
    "keras.random.",
    "tensorflow.keras.ops.",
)
# Python values even in a graph: tests about the program, and keras.ops' static shape, rank and dtype
# (`ops.shape(x)[1]` is an int where the dimension is known).
_PYTHON_VALUED = (
    "tensorflow.executing_eagerly",
    "tensorflow.is_tensor",
    "keras.ops.is_tensor",
    "keras.ops.shape",
    "keras.ops.ndim",
    "keras.ops.dtype",
    "tensorflow.keras.ops.shape",
    "tensorflow.keras.ops.ndim",
)


def _tensor_call(node: ast.AST, rule: Rule) -> ast.Call | None:
    """A call in the test whose value is certainly a tensor, or None."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            qualname = rule.context.qualname(inner.func) or ""
            if qualname.startswith(_PYTHON_VALUED):
                return None
            if qualname.startswith(_TENSOR_PREFIXES):
                return inner
    return None


def _own_statements(function: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of the function's body, not those of functions defined in it (a tf.cond branch)."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return found


class TensorBoolInCall(Rule):
    """Keras 3 runs a layer's ``call()`` as written, without AutoGraph, also inside ``tf.function``
    and ``model.fit``: a Python ``if`` or ``while`` on a tensor there raises
    ``OperatorNotAllowedInGraphError`` ("Using a symbolic tf.Tensor as a Python bool") when the model
    is built or traced (``test_lint_round15.py`` builds such a layer on the installed Keras). Keras 2
    (tf.keras) converted ``call()`` with AutoGraph, so TF 2.x code like StyleGAN2's
    ``if tf.random.uniform([]) < self.style_mixing_prob:`` breaks only on Keras 3. Reported where the
    test calls a TensorFlow / keras.ops function whose result is a tensor (``tf.random.uniform``,
    ``tf.reduce_*``, ``tf.shape(x)[0]``, ``keras.ops.*``), inside ``call`` of a class whose base is a
    Keras layer or model."""

    code = "TFP513"
    name = "tensor-bool-in-keras-call"
    message = "Python if/while on a tensor in a Keras layer's call(): Keras 3 does not AutoGraph call()"
    fix_hint = "Use tf.cond / keras.ops.cond (or tf.where / keras.ops.where) for a choice made on a tensor"
    severity = Severity.ERROR
    category = "keras 3"
    keras3_only = True
    tokens = ("def call",)
    VALID = [
        """
import tensorflow as tf


class Mix(tf.keras.layers.Layer):
    def call(self, x, training=None):
        if training:
            return x * 2
        return tf.cond(tf.random.uniform([]) < 0.5, lambda: x * 2, lambda: x)
""",
        """
import tensorflow as tf


class Helper:
    def call(self, x):
        if tf.reduce_sum(x) > 0:
            return x
        return -x
""",
        """
import tensorflow as tf


class Layer(tf.keras.layers.Layer):
    def call(self, x):
        if tf.executing_eagerly():
            print(x)
        return x
""",
        """
import keras
from keras import ops


class Pad(keras.layers.Layer):
    def call(self, x):
        if ops.shape(x)[1] < 8:
            x = ops.pad(x, [[0, 0], [0, 8 - ops.shape(x)[1]]])
        return x
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf


class Mixing(tf.keras.layers.Layer):
    def call(self, x):
        if tf.random.uniform([], 0.0, 1.0, dtype=tf.float32) < 0.9:
            return x * 2
        return x
""",
            line=7,
        ),
        Invalid(
            """
import keras
from keras import ops


class Clip(keras.layers.Layer):
    def call(self, x):
        while ops.max(x) > 1.0:
            x = x / 2.0
        return x
""",
            line=8,
        ),
    ]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name != "call":
            return
        klass = self.context.stack[-2] if len(self.context.stack) > 1 else None
        if not isinstance(klass, ast.ClassDef) or self.context.class_kind(klass) not in ("keras-layer", "keras-model"):
            return
        methods = {m.name: m for m in klass.body if isinstance(m, ast.FunctionDef)}
        # call() and the methods of the class it calls (`self.style_mixing(...)`): none is converted.
        todo, seen = [node], {node.name}
        while todo:
            function = todo.pop()
            for inner in _own_statements(function):
                if (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Attribute)
                    and isinstance(inner.func.value, ast.Name)
                    and inner.func.value.id == "self"
                    and inner.func.attr in methods
                    and inner.func.attr not in seen
                ):
                    seen.add(inner.func.attr)
                    todo.append(methods[inner.func.attr])
                if isinstance(inner, (ast.If, ast.While)) and _tensor_call(inner.test, self) is not None:
                    keyword = "if" if isinstance(inner, ast.If) else "while"
                    where = "call()" if function is node else f"{function.name}(), which call() runs"
                    self.report(
                        inner,
                        f"`{keyword} {ast.unparse(inner.test)}` in `{klass.name}.{where}`: the test is a tensor, and "
                        "Keras 3 runs call() without AutoGraph (also in tf.function and fit), so this raises "
                        "OperatorNotAllowedInGraphError when the model is built or traced",
                    )
