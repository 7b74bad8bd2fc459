"""TFP103: tf.Variable created on every call of a traced function."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.rule import Invalid, Rule

_VARIABLE_CLASSES = frozenset(
    {"tensorflow.Variable", "tensorflow.compat.v1.Variable", "keras.Variable", "tensorflow.keras.Variable"}
)


def _is_creation_guard(test: ast.expr) -> bool:
    """``if self.v is None``, ``if not self.built``, ``if not hasattr(self, "v")``."""
    for node in walk_nodes(test):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            return True
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return True
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("hasattr", "getattr"):
            return True
    return False


_APPLY = frozenset({"apply_gradients", "minimize", "apply"})
_ONCE_METHODS = frozenset({"__init__", "build", "compile", "setup", "__post_init__"})
# Methods named to set an object up (`_setup_actor`, `build_optimizer`) are called once, from
# __init__ here or in a base class of another file.
_SETUP_PREFIXES = ("setup", "set_up", "build", "init", "create", "compile")
_OPTIMIZER_CLASSES = frozenset(
    {"SGD", "Adam", "AdamW", "Adamax", "Adagrad", "Adadelta", "Nadam", "RMSprop", "Ftrl", "Lion", "Adafactor"}
)


def _decorator(node: ast.expr) -> ast.expr:
    return node.func if isinstance(node, ast.Call) else node


def _self_attribute(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _is_optimizer(qualname: str | None) -> bool:
    if not qualname or "optimizers" not in qualname:
        return False
    return qualname.rsplit(".", 1)[-1] in _OPTIMIZER_CLASSES


def _called_from_once_methods(klass: ast.ClassDef) -> set[str]:
    """Methods that __init__ (or build ...) calls as ``self.name(...)``: they run once per object."""
    called: set[str] = set()
    for method in klass.body:
        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.name in _ONCE_METHODS:
            for node in walk_nodes(method):
                if isinstance(node, ast.Call) and (name := _self_attribute(node.func)):
                    called.add(name)
    return called


def _guarded(method: ast.AST, assignment: ast.AST) -> bool:
    """The assignment sits under `if self.opt is None:` (made once)."""
    for node in walk_nodes(method):
        if isinstance(node, ast.If) and _is_creation_guard(node.test):
            if any(inner is assignment for inner in walk_nodes(node)):
                return True
    return False


class VariableCreatedInTfFunction(Rule):
    """A tf.Variable created inside a tf.function is created again on every trace.

    tf.function only allows variables to be created on the first trace; later traces raise
    "tf.function only supports singleton tf.Variables created on the first call". When it does
    not raise, each trace gets a fresh, untrained variable. Create variables once, outside the
    function, or behind a guard that runs only on the first call.

    An optimizer is such a variable maker too: its slots are made on its first apply. A method
    that assigns ``self.opt = Adam(...)`` on every call while a tf.function method applies
    ``self.opt`` keeps training with the first optimizer, or fails when the step retraces.
    """

    code = "TFP103"
    name = "variable-created-in-tf-function"
    message = "tf.Variable created inside a traced function is created again on every trace"
    fix_hint = (
        "Create the variable once, outside the function (in __init__ or build), or guard the "
        "creation with `if self.v is None:`"
    )
    severity = Severity.ERROR
    category = "tf.function"
    tokens = ("Variable(", "optimizers")
    calls = frozenset({"Variable"})
    VALID = [
        """
import tensorflow as tf

class Scaler(tf.Module):
    def __init__(self):
        self.scale = tf.Variable(1.0)

    @tf.function
    def __call__(self, x):
        return x * self.scale
""",
        """
import tensorflow as tf

class Lazy(tf.Module):
    def __init__(self):
        self.v = None

    @tf.function
    def __call__(self, x):
        if self.v is None:
            self.v = tf.Variable(tf.zeros_like(x))
        return x + self.v
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

@tf.function
def accumulate(x):
    total = tf.Variable(0.0)
    total.assign_add(tf.reduce_sum(x))
    return total
""",
            line=6,
        ),
    ]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        """A method that makes ``self.opt = Adam(...)`` on every call, while a tf.function method
        applies ``self.opt``: the traced step keeps the optimizer it was traced with (the new one
        never trains anything), and a retrace builds the new one's slot variables inside the
        function (ValueError: singleton tf.Variables created on the first call)."""
        source = self.context.source
        if "apply_gradients" not in source and "minimize" not in source and ".apply(" not in source:
            return
        made: dict[str, tuple[ast.AST, str]] = {}  # attribute -> (assignment, the method making it)
        applied: dict[str, str] = {}  # attribute -> the tf.function method applying it
        for method in node.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            traced = any(self.context.qualname(_decorator(d)) == "tensorflow.function" for d in method.decorator_list)
            for inner in walk_nodes(method):
                if traced and isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
                    if inner.func.attr in _APPLY and (attribute := _self_attribute(inner.func.value)):
                        applied.setdefault(attribute, method.name)
                elif (
                    not traced
                    and method.name not in _ONCE_METHODS
                    and isinstance(inner, ast.Assign)
                    and len(inner.targets) == 1
                    and (attribute := _self_attribute(inner.targets[0]))
                    and isinstance(inner.value, ast.Call)
                    and _is_optimizer(self.context.qualname(inner.value.func))
                    and not _guarded(method, inner)
                ):
                    made.setdefault(attribute, (inner, method.name))
        once = _called_from_once_methods(node)
        for attribute, (assignment, maker) in made.items():
            step = applied.get(attribute)
            if step is not None and maker not in once and not maker.lstrip("_").startswith(_SETUP_PREFIXES):
                self.report(
                    assignment,
                    f"`self.{attribute}` gets a new optimizer on every call of `{maker}`, but the tf.function "
                    f"`{step}` applies it: the traced step keeps the optimizer it was traced with, and a retrace "
                    "creates the new one's slot variables inside the function (ValueError: tf.function only "
                    "supports singleton tf.Variables created on the first call); make the optimizer once, in "
                    "__init__, or make the tf.function anew with it",
                )

    def visit_Call(self, node: ast.Call) -> None:
        scope = self.context.scope
        if not scope.is_graph or self.context.qualname(node.func) not in _VARIABLE_CLASSES:
            return
        for ancestor in self.context.ancestors():
            if ancestor is scope.node:
                break
            if isinstance(ancestor, ast.If) and _is_creation_guard(ancestor.test):
                return
            if isinstance(ancestor, ast.With) and any(
                self.context.qualname(getattr(item.context_expr, "func", None)) == "tensorflow.init_scope"
                for item in ancestor.items
            ):
                return
        self.report(node, f"tf.Variable created inside a {scope.graph_reason}: it is created again on every trace")
