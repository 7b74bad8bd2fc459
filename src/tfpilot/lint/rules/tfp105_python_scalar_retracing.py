"""TFP105: a tf.function called with a Python number that changes every call."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.rule import Invalid, Rule

_SCALAR_NODES = (ast.Name, ast.BinOp, ast.UnaryOp, ast.Constant, ast.operator, ast.unaryop)


class PythonScalarRetracing(Rule):
    """Each new Python value passed to a tf.function traces a new graph.

    tf.function specialises on Python arguments: ``train_step(x, step)`` with ``step`` from
    ``range`` traces once per step, so training runs at tracing speed and memory grows with
    every cached graph. Tensors are traced by shape and dtype, so passing ``tf.constant(step)``
    (or giving the function an input_signature) traces once.
    """

    code = "TFP105"
    name = "python-scalar-retracing"
    message = "tf.function called with a Python number that changes every call: each value retraces"
    fix_hint = (
        "Pass a tensor instead (tf.constant(step) / tf.convert_to_tensor), keep the counter in a "
        "tf.Variable, or give the function an input_signature"
    )
    category = "tf.function"
    tokens = ("function",)
    VALID = [
        """
import tensorflow as tf

@tf.function
def train_step(x, step):
    return x * tf.cast(step, tf.float32)

for step in range(100):
    train_step(tf.ones(3), tf.constant(step))
""",
        """
import tensorflow as tf

@tf.function(input_signature=[tf.TensorSpec([], tf.int64)])
def scaled(step):
    return step * 2

for step in range(100):
    scaled(step)
""",
        # the same Python number every call: one trace
        """
import tensorflow as tf

@tf.function
def scale(x, factor):
    return x * factor

scale(tf.ones(3), 2)
scale(tf.zeros(3), 2)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

@tf.function
def train_step(x, step):
    return x * tf.cast(step, tf.float32)

for step in range(100):
    train_step(tf.ones(3), step)
""",
            line=9,
        ),
        Invalid(
            """
import tensorflow as tf

def warmup(x, lr):
    return x * lr

warmup = tf.function(warmup)
for epoch in range(10):
    warmup(tf.ones(3), lr=0.1 * epoch)
""",
            line=9,
        ),
        # different Python constants across calls (the tf.function guide's `double(1); double(2)`)
        Invalid(
            """
import tensorflow as tf

@tf.function
def double(a):
    return a + a

double(1)
double(2)
""",
            line=8,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        # calls outside loops with a number literal: (function, argument slot) -> [(call, value)]
        self._constants: dict[tuple[str, str], list[tuple[ast.Call, object]]] = {}

    def finish(self) -> None:
        reported: set[int] = set()
        for (name, slot), calls in self._constants.items():
            if self.context.graph_functions.get(name):
                continue  # input_signature: one trace whatever the value
            values = sorted({repr(value) for _, value in calls})
            if len(values) < 2:
                continue
            for call, value in calls:
                if id(call) in reported:
                    continue
                reported.add(id(call))
                self.report(
                    call,
                    f"`{name}` is a tf.function called with Python numbers ({', '.join(values)}) for `{slot}`: "
                    f"one trace per value; this call with {value!r}",
                    severity=Severity.INFO,
                )

    def _collect_constants(self, node: ast.Call, name: str) -> None:
        slots = [(str(i), a) for i, a in enumerate(node.args)] + [(k.arg or "", k.value) for k in node.keywords]
        for slot, argument in slots:
            value = _number(argument)
            if value is not None:
                self._constants.setdefault((name, slot if not slot.isdigit() else f"argument {slot}"), []).append(
                    (node, value)
                )

    def visit_Call(self, node: ast.Call) -> None:
        loops = self.context.function_loops()
        if not loops:
            func = node.func
            if isinstance(func, ast.Name) and self.context.is_graph_function_name(func.id):
                self._collect_constants(node, func.id)
            return
        func = node.func
        if isinstance(func, ast.Name):
            name = func.id
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            name = func.attr
        else:
            return
        if not self.context.is_graph_function_name(name) or self.context.graph_functions.get(name):
            return
        loop_variables = _python_loop_variables(loops)
        if not loop_variables:
            return
        for argument in [*node.args, *(k.value for k in node.keywords)]:
            used = _python_scalar_names(argument) & loop_variables
            if used:
                variable = sorted(used)[0]
                self.report(
                    node,
                    f"`{name}` is a tf.function called with the Python value `{variable}`, which "
                    "changes every iteration: each new value traces a new graph",
                )
                return


def _number(node: ast.AST) -> object | None:
    """The value of an int/float literal (``3``, ``-0.5``); None for anything else, bools too."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return -inner if isinstance(inner, (int, float)) else None
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def _python_loop_variables(loops: list[ast.AST]) -> set[str]:
    """Names bound by ``for i in range(...)`` or the index of ``for i, x in enumerate(...)``."""
    names: set[str] = set()
    for loop in loops:
        if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call):
            continue
        iterator = loop.iter.func
        if not isinstance(iterator, ast.Name):
            continue
        if iterator.id == "range" and isinstance(loop.target, ast.Name):
            names.add(loop.target.id)
        elif iterator.id == "enumerate" and isinstance(loop.target, ast.Tuple) and loop.target.elts:
            first = loop.target.elts[0]
            if isinstance(first, ast.Name):
                names.add(first.id)
    return names


def _python_scalar_names(node: ast.AST) -> set[str]:
    """Names in an expression built only from names, numbers and arithmetic (no calls)."""
    names: set[str] = set()
    for item in walk_nodes(node):
        if not isinstance(item, _SCALAR_NODES) and not isinstance(item, ast.expr_context):
            return set()
        if isinstance(item, ast.Name):
            names.add(item.id)
    return names
