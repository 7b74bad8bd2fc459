"""TFP102: `.numpy()`, float(), int() or bool() of a tensor inside a traced function."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.rule import Invalid, Rule

_CONVERSIONS = frozenset({"float", "int", "bool"})
_NOT_TENSOR_PREFIXES = ("tensorflow.TensorShape", "tensorflow.config.", "tensorflow.distribute.")


class HostConversionInTfFunction(Rule):
    """Converting a tensor to a Python value inside a tf.function fails or freezes the value.

    While tracing, tensors are symbolic: ``.numpy()`` raises AttributeError, ``float(t)`` and
    ``int(t)`` raise TypeError, and ``bool(t)`` raises "using a tf.Tensor as a Python bool is not
    allowed". Code that seems to work usually does so because it was called eagerly in a test.
    """

    code = "TFP102"
    name = "host-conversion-in-tf-function"
    message = "converting a tensor to a Python value inside a traced function fails while tracing"
    fix_hint = (
        "Keep values as tensors inside the function (tf.cast, tf.math, tf.cond); inspect them with "
        "tf.print, and call .numpy() on the function's result outside it"
    )
    severity = Severity.ERROR
    category = "tf.function"
    tokens = ("numpy()", "float(", "int(", "bool(")
    calls = frozenset({"numpy", "float", "int", "bool"})
    VALID = [
        """
import tensorflow as tf

@tf.function
def step(x):
    n = int(x.shape[0])
    return tf.cast(tf.reduce_sum(x), tf.float32) / n
""",
        """
import tensorflow as tf

@tf.function
def step(x):
    return tf.reduce_mean(x)

loss = float(step(tf.ones(3)))
value = step(tf.ones(3)).numpy()
""",
        # a train_step called by hand on a model that is never fit runs eagerly
        """
import keras
import tensorflow as tf

class Probe(keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self(x) - y))
        self.losses_seen.append(loss.numpy())

probe = Probe()
for batch in batches:
    probe.train_step(batch)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

@tf.function
def step(x):
    loss = tf.reduce_mean(x)
    if loss.numpy() > 1.0:
        loss = loss / 2
    return loss
""",
            line=7,
        ),
        Invalid(
            """
import tensorflow as tf

@tf.function
def step(x):
    total = tf.reduce_sum(x)
    return float(total)
""",
            line=7,
        ),
        Invalid(
            """
import tensorflow as tf

@tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
def repeat(count):
    return tf.zeros([int(count)])
""",
            line=6,
        ),
        # the same step is compiled once the model is fit
        Invalid(
            """
import keras
import tensorflow as tf

class Probe(keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self(x) - y))
        self.losses_seen.append(loss.numpy())

probe = Probe()
probe.train_step(first_batch)
probe.fit(dataset)
""",
            line=10,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        scope = self.context.scope
        if not scope.is_graph:
            return
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "numpy" and not node.args:
            self.report(
                node,
                f".numpy() in a {scope.graph_reason}: symbolic tensors have no value while tracing",
            )
            return
        if (
            isinstance(func, ast.Name)
            and func.id in _CONVERSIONS
            and func.id not in self.context.imports
            and len(node.args) == 1
            and self._is_tensor(node.args[0])
        ):
            self.report(
                node,
                f"{func.id}() of a tensor in a {scope.graph_reason} fails while tracing; use tf.cast instead",
            )

    def _is_tensor(self, node: ast.AST) -> bool:
        scope = self.context.scope
        if isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Name):
            if node.id in scope.tensor_names:
                return True
            return scope.has_input_signature and node.id in scope.params and node.id not in ("self", "cls")
        if isinstance(node, ast.Call):
            qualname = self.context.qualname(node.func)
            return (
                qualname is not None
                and qualname.startswith(("tensorflow.", "keras.ops."))
                and not (qualname.startswith(_NOT_TENSOR_PREFIXES))
            )
        return False
