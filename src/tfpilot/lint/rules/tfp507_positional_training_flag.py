"""TFP507: a Keras model or layer called with its training flag as a positional argument."""

from __future__ import annotations

import ast
import builtins
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.bindings import KERAS
from tfpilot.lint.local_modules import imported_class
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.patterns import training_flag
from tfpilot.lint.rule import Invalid, Rule

_PYTHON_TYPES = (bool, int, float, str)


_BUILTINS = frozenset(dir(builtins))
# Methods of Python's own containers and strings, argparse's, and a Keras model's own methods:
# `d.get(key, 0)`, `s.replace("a", "b")`, `parser.add_argument("--lr", 0.1)`,
# `model.fit(x_train, y_train)` are no call of a model (whose call is `model(x, ...)`).
_PLAIN_METHODS = frozenset(
    name for kind in (dict, str, list, set, bytes) for name in dir(kind) if not name.startswith("_")
) | {
    "add_argument",
    "add_argument_group",
    "fit",
    "evaluate",
    "predict",
    "compile",
    "train_on_batch",
    "test_on_batch",
    "predict_on_batch",
    "save",
    "save_weights",
    "load_weights",
    "get_layer",
    "summary",
}


def _never_a_model(func: ast.expr, context: Any) -> bool:
    """A callee that cannot hold a model instance: a builtin (`print`, `range`), a container's or
    a string's method, or a name reached through an import (`tf.reduce_sum`, `np.clip`, `os.path.join`, `logging.info`). Checked first:
    what a local name holds is asked of the file's bindings index, whose build is the rule's cost."""
    if isinstance(func, ast.Name) and func.id in _BUILTINS and func.id not in context.imports:
        return True
    if isinstance(func, ast.Attribute) and func.attr in _PLAIN_METHODS:
        return True
    return context.qualname(func) is not None


def _python_value(argument: ast.expr, function: ast.AST, context: Any, depth: int) -> bool:
    """``argument`` is certainly a Python bool, number or string (which Keras 3 refuses as a
    positional argument; ``None`` passes): a literal, or a parameter of ``function`` that every call
    site of the file fills with one (or leaves at such a default)."""
    if isinstance(argument, ast.Constant):
        return isinstance(argument.value, _PYTHON_TYPES)
    if _python_expression(argument, context):
        return True
    if not (isinstance(argument, ast.Name) and isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))):
        return False
    if depth > 3:
        return False
    local = _local_python_value(argument.id, function, context)
    if local is not None:
        return local
    # the answer depends only on (function, parameter name, depth): every call of the file that
    # passes the same parameter on asks the same question, and each answer walks the function
    cache: dict[tuple[int, str, int], bool] = context.__dict__.setdefault("_tfp507_python_values", {})
    key = (id(function), argument.id, depth)
    known = cache.get(key)
    if known is None:
        known = cache[key] = _python_parameter(argument.id, function, context, depth)
    return known


# Builtins whose result is a Python number or string whatever they are given (`len(levels)`, `int(n / 2)`).
_PYTHON_RESULT = frozenset({"len", "int", "float", "bool", "str", "round"})


def _python_expression(node: ast.expr, context: Any, counters: frozenset[str] = frozenset()) -> bool:
    """A Python number computed in the line: `len(xs) - i` (``i`` one of ``counters``, the targets of the
    function's `for i in range(...)` loops), `min(len(xs) - i, 3)`, `int(n / 2)`; the builtins only where the
    file does not rebind them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, _PYTHON_TYPES)
    if isinstance(node, ast.Name):
        return node.id in counters
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in context.imports:
        if node.func.id in _PYTHON_RESULT:
            return True
        if node.func.id in ("min", "max") and node.args:
            return any(_python_expression(arg, context, counters) for arg in node.args)
        return False
    if isinstance(node, ast.BinOp):
        return _python_expression(node.left, context, counters) and _python_expression(node.right, context, counters)
    if isinstance(node, ast.UnaryOp):
        return _python_expression(node.operand, context, counters)
    return False


def _locals_of(function: ast.AST, context: Any) -> tuple[dict[str, list[ast.expr]], frozenset[str]]:
    """(each name an assignment of ``function`` binds -> the values assigned to it, the targets of its
    `for i in range(...)` loops, which are Python ints), from one walk per function."""
    cache: dict[int, tuple[dict[str, list[ast.expr]], frozenset[str]]] = context.__dict__.setdefault(
        "_tfp507_locals", {}
    )
    found = cache.get(id(function))
    if found is None:
        assigned: dict[str, list[ast.expr]] = {}
        counters: set[str] = set()
        for node in walk_nodes(function):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Name):
                        assigned.setdefault(target.id, []).append(node.value)
            elif (
                isinstance(node, ast.For)
                and isinstance(node.target, ast.Name)
                and isinstance(node.iter, ast.Call)
                and isinstance(node.iter.func, ast.Name)
                and node.iter.func.id == "range"
            ):
                counters.add(node.target.id)
        found = cache[id(function)] = (assigned, frozenset(counters))
    return found


def _local_python_value(name: str, function: ast.FunctionDef | ast.AsyncFunctionDef, context: Any) -> bool | None:
    """For a local of ``function`` (assigned in its body, no parameter): whether every assignment of it is a
    Python value (`capped = min(len(levels) - i, 3)`); None for a parameter or a name not assigned there."""
    if name in {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}:
        return None
    assigned, counters = _locals_of(function, context)
    values = assigned.get(name)
    if not values:
        return None
    return all(_python_expression(value, context, counters) for value in values)


def _stored_names(function: ast.AST, context: Any) -> set[str]:
    """Names assigned anywhere in ``function`` (its parameters rebound in the body), walked once."""
    cache: dict[int, set[str]] = context.__dict__.setdefault("_tfp507_stored_names", {})
    found = cache.get(id(function))
    if found is None:
        found = cache[id(function)] = {
            node.id for node in walk_nodes(function) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
        }
    return found


def _python_parameter(name: str, function: ast.FunctionDef | ast.AsyncFunctionDef, context: Any, depth: int) -> bool:
    argument = ast.Name(id=name, ctx=ast.Load())
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults = dict(
        zip([a.arg for a in positional[len(positional) - len(arguments.defaults) :]], arguments.defaults, strict=True)
    )
    defaults.update(
        {a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d is not None}
    )
    names = [a.arg for a in (*positional, *arguments.kwonlyargs)]
    if argument.id not in names:
        return False
    if argument.id in _stored_names(function, context):
        return False  # rebound in the body
    default = defaults.get(argument.id)
    default_is_python = isinstance(default, ast.Constant) and isinstance(default.value, _PYTHON_TYPES)
    sites = context.bindings.passed(function, argument.id)
    if sites == [] and not default_is_python:
        # a method the file never calls: a base class of the project calls it (`get_action` of
        # the parent passes its `test=False` on to the `_get_action_body` this class overrides)
        return _python_in_base(function, argument.id, context, depth)
    if sites is None:
        return False
    for value, owner in sites:
        if value is None:
            if not default_is_python:
                return False
        elif owner is None or not _python_value(value, owner, context, depth + 1):
            return False
    return True


def _python_in_base(function: ast.AST, name: str, context: Any, depth: int) -> bool:
    """The same method of a base class (of this file or of the project) receives a Python value
    for ``name`` at its call sites."""
    method = getattr(function, "name", "")
    holder = context.bindings.class_of(function)
    for klass in [holder] if holder is not None else []:
        for base in klass.bases:
            if not isinstance(base, ast.Name):
                continue
            found = (
                (context.class_defs(base.id)[-1], context)
                if context.class_defs(base.id)
                else imported_class(context, base.id)
            )
            if found is None:
                continue
            base_class, base_context = found
            for other in base_class.body:
                if isinstance(other, (ast.FunctionDef, ast.AsyncFunctionDef)) and other.name == method:
                    if _python_value(ast.Name(id=name, ctx=ast.Load()), other, base_context, depth + 1):
                        return True
    return False


def _kinds_in_base(attribute: str, klass: ast.ClassDef | None, context: Any) -> set[str]:
    """``self.actor`` that no method of this file assigns: what the base class of another module
    of the project assigns it (``SACAE(SAC)``: SAC's ``__init__`` builds the actor)."""
    kinds: set[str] = set()
    for base in klass.bases if klass is not None else ():
        found = imported_class(context, base.id) if isinstance(base, ast.Name) else None
        if found is None:
            continue
        base_class, other = found
        method = next((m for m in base_class.body if isinstance(m, ast.FunctionDef)), None)
        if method is None:
            continue
        values = [
            v
            for v in other.bindings.values(attribute, method, method)
            if not (isinstance(v, ast.Constant) and v.value is None)
        ]
        kinds |= {other.bindings.kind_of(v) for v in values}
    return kinds


class PositionalTrainingFlag(Rule):
    """Keras 3 takes only tensors as positional arguments of a layer or model call.

    Keras 2 passed ``model(x, is_training)`` on to ``call(self, x, training=None)``; Keras 3's
    ``Layer.__call__`` raises ``ValueError: Only input tensors may be passed as positional
    arguments`` before the call runs (a GAN's ``generator(z, is_training)`` stops at its first
    step), and so does any bool, number or string passed positionally (``self.actor(state, test)``).
    Reported where the callee is certainly a Keras model or layer: built by a Keras
    factory or a Keras subclass of this project, followed through parameters and attributes.
    """

    code = "TFP507"
    name = "positional-training-flag"
    message = "training flag passed positionally to a Keras model or layer: Keras 3 raises ValueError"
    fix_hint = "Pass it by keyword: model(x, training=is_training)"
    severity = Severity.ERROR
    category = "keras 3"
    keras3_only = True
    # a literal flag, a flag's name, a Keras file, or a method of a class whose Keras model is
    # built by a base class of another module
    tokens = ("train", "True", "False", "keras", "self.")
    VALID = [
        """
import keras

model = keras.Sequential([keras.layers.Dense(1)])
is_training = True
y = model(x, training=is_training)
pair = model(x, y)
""",
        # not a Keras object: a plain function may take its flag by position
        """
def network(x, is_training):
    return x

y = network(x, True)
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

class Generator(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(4)

    def call(self, x, training=None):
        return self.dense(x)

generator = Generator()

def g_loss(generator, z, is_training):
    return generator(z, is_training)

loss = g_loss(generator, z, True)
""",
            line=15,
        ),
        Invalid(
            """
import keras

dropout = keras.layers.Dropout(0.5)
y = dropout(x, True)
""",
            line=5,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        if len(node.args) < 2 or not isinstance(node.func, (ast.Name, ast.Attribute)):
            return
        if _never_a_model(node.func, self.context):
            return
        flag = next((found for found in map(training_flag, node.args[1:]) if found is not None), None)
        if flag is None:
            function = self.context.scope.node
            value = next(
                (argument for argument in node.args[1:] if _python_value(argument, function, self.context, 0)),
                None,
            )
            if value is None:
                return
            callee = self.context.dotted(node.func)
            if callee is None or callee == "self":
                return
            # `self.actor = None` in the branch that never calls it: what is called is the rest
            held = [
                v
                for v in self.context.bindings.values(callee, node, function)
                if not (isinstance(v, ast.Constant) and v.value is None)
            ]
            kinds = {self.context.bindings.kind_of(v) for v in held}
            if not held and callee.startswith("self."):
                kinds = _kinds_in_base(callee, self.context.current_class(), self.context)
            if kinds != {KERAS}:
                return
            text = ast.unparse(value)
            self.report(
                node,
                f"`{callee}(..., {text})`: `{text}` is a Python value, not a tensor; Keras 3 takes only tensors "
                "positionally and raises ValueError; pass it by keyword",
            )
            return
        callee = self.context.dotted(node.func)
        if callee is None or callee == "self":
            return
        if self.context.bindings.kinds(callee, node, self.context.scope.node) != {KERAS}:
            return
        self.report(
            node,
            f"`{callee}(..., {flag})`: Keras 3 takes only tensors positionally and raises ValueError; "
            f"pass training={flag}",
        )
