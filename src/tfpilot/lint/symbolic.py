"""Which expressions are Keras symbolic tensors (``KerasTensor``) while a functional model is built.

``inputs = keras.Input((784,))``, ``x = Dense(64)(inputs)``, ``z = encoder(inputs)[2]``,
``1 + z_log_var``: these hold no values, only shapes. Keras 2 let TensorFlow ops and
``keras.backend`` functions run on them (wrapping each in a TFOpLambda layer) and let
``model.add_loss`` take one; Keras 3 refuses both ("A KerasTensor cannot be used as input to a
TensorFlow function", NotImplementedError from ``add_loss``). ``is_symbolic`` follows a name to
the values that reach its use (``lint.paths.reaching_values``), so a name rebound to a real
tensor, or a parameter of a Lambda layer's function, is not symbolic.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from tfpilot.lint.apis import keras_name
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.paths import reaching_values

if TYPE_CHECKING:
    from tfpilot.lint.context import FileContext

__all__ = [
    "assume_symbolic",
    "first_symbolic_argument",
    "is_symbolic",
    "is_layer_class",
    "is_tensorflow_op",
    "passed_argument",
    "symbolic_argument",
    "symbolic_parameter",
]

_MAX_DEPTH = 8
_INPUTS = frozenset({"Input", "layers.Input", "Input.Input"})
# Keras 2 backend functions that were TensorFlow ops (tf.keras.backend.* in TF 2.21 still are)
_BACKEND_OPS = frozenset(
    {
        "abs", "argmax", "argmin", "batch_dot", "batch_flatten", "binary_crossentropy", "cast",
        "categorical_crossentropy", "clip", "concatenate", "cumsum", "dot", "elu", "equal", "exp",
        "expand_dims", "flatten", "gather", "greater", "l2_normalize", "less", "log", "max",
        "maximum", "mean", "min", "minimum", "one_hot", "ones_like", "permute_dimensions", "pow",
        "prod", "relu", "repeat_elements", "reshape", "shape", "sigmoid", "sign", "softmax",
        "softplus", "sparse_categorical_crossentropy", "sqrt", "square", "squeeze", "stack", "std",
        "sum", "tanh", "tile", "transpose", "var", "zeros_like",
    }
)  # fmt: skip


def is_tensorflow_op(call: ast.Call, context: FileContext) -> str | None:
    """``tf.square`` / ``K.square`` (a TensorFlow op by way of the Keras 2 backend): its dotted
    name as written, else None. Keras' own ``keras.ops`` and layers are not TensorFlow ops."""
    qualname = context.qualname(call.func)
    if not qualname:
        return None
    found = keras_name(qualname)
    if found is not None:
        path = found[1]
        if path.startswith("backend.") and path.split(".", 1)[1] in _BACKEND_OPS:
            return context.dotted(call.func) or qualname
        return None
    if qualname.startswith("tensorflow.") and not qualname.startswith(("tensorflow.compat.", "tensorflow.keras")):
        last = qualname.rsplit(".", 1)[-1]
        if last[:1].islower() and last not in ("function", "name_scope", "device", "print", "py_function"):
            return context.dotted(call.func) or qualname
    return None


def is_symbolic(node: ast.AST, context: FileContext, scope: ast.AST, depth: int = 0) -> bool:
    """``node`` certainly holds a KerasTensor where it is used inside ``scope`` (a function or
    the module)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, ast.Name):
        values, complete = reaching_values(node.id, node, scope)
        if not complete and not values:
            # nothing in the function binds it before this use: a parameter a caller gives a KerasTensor
            return symbolic_parameter(node.id, scope, context, depth)
        return complete and bool(values) and all(_symbolic_value(v, context, scope, depth) for v in values)
    if isinstance(node, ast.BinOp):
        return is_symbolic(node.left, context, scope, depth + 1) or is_symbolic(node.right, context, scope, depth + 1)
    if isinstance(node, ast.UnaryOp):
        return is_symbolic(node.operand, context, scope, depth + 1)
    if isinstance(node, ast.Subscript):
        return is_symbolic(node.value, context, scope, depth + 1)
    if not isinstance(node, ast.Call):
        return False
    found = keras_name(context.qualname(node.func))
    if found is not None and found[1] in _INPUTS:
        return True
    arguments = [*node.args, *(k.value for k in node.keywords if k.arg is not None)]
    if not any(_symbolic_argument(a, context, scope, depth) for a in arguments):
        return False
    # a layer or model called on a symbolic tensor, a Keras function or a Keras 2 era op
    if isinstance(node.func, ast.Call):
        return _is_keras_layer(node.func, context, scope)
    if found is not None:
        return found[1].startswith(("ops.", "losses.", "backend.", "activations."))
    if is_tensorflow_op(node, context) is not None:
        return True
    if isinstance(node.func, ast.Name):
        values, complete = reaching_values(node.func.id, node, scope)
        return (
            complete
            and bool(values)
            and all(isinstance(v, ast.Call) and _is_keras_layer(v, context, scope) for v in values)
        )
    return False


def symbolic_argument(argument: ast.expr, context: FileContext, scope: ast.AST) -> bool:
    """``argument`` (or an element of it, a list or tuple) holds a KerasTensor where it is used in ``scope``."""
    return _symbolic_argument(argument, context, scope, 0)


def first_symbolic_argument(call: ast.Call, context: FileContext, scope: ast.AST) -> ast.expr | None:
    """The first argument of ``call`` (an element of a list or tuple argument too) that holds a KerasTensor."""
    arguments = [*call.args, *(k.value for k in call.keywords if k.arg is not None)]
    flat = [e for a in arguments for e in (a.elts if isinstance(a, (ast.List, ast.Tuple)) else [a])]
    return next((e for e in flat if is_symbolic(e, context, scope)), None)


def _symbolic_value(value: ast.AST, context: FileContext, scope: ast.AST, depth: int) -> bool:
    if isinstance(value, ast.AugAssign):
        # `loss *= 784`: symbolic if either side is
        if is_symbolic(value.value, context, scope, depth + 1):
            return True
        target = value.target
        return isinstance(target, ast.Name) and is_symbolic(
            ast.copy_location(ast.Name(id=target.id, ctx=ast.Load()), value), context, scope, depth + 1
        )
    if isinstance(value, ast.Assign) and isinstance(value.value, ast.Call):
        # `z_mean, z_log_var = encoder(x)`: a callable given a KerasTensor returns KerasTensors or has
        # raised already (Keras 3 refuses TF ops on them), so each unpacked element holds one. Callables
        # whose result is no tensor (`len`, `isinstance`, a shape helper) are left out.
        call = value.value
        if is_symbolic(call, context, scope, depth + 1):
            return True
        return (
            isinstance(call.func, ast.Name)
            and call.func.id not in _NO_TENSOR_RESULT
            and "shape" not in call.func.id.lower()
            and any(_symbolic_argument(a, context, scope, depth) for a in call.args)
        )
    return isinstance(value, ast.expr) and is_symbolic(value, context, scope, depth + 1)


# Builtins (and the like) whose result is a Python value even when given a KerasTensor.
_NO_TENSOR_RESULT = frozenset(
    {
        "len",
        "int",
        "float",
        "str",
        "bool",
        "list",
        "tuple",
        "dict",
        "set",
        "print",
        "isinstance",
        "getattr",
        "hasattr",
        "type",
        "id",
        "range",
        "zip",
        "enumerate",
        "sorted",
        "reversed",
        "map",
        "filter",
        "max",
        "min",
        "sum",
        "any",
        "all",
        "repr",
        "vars",
        "dir",
    }
)


def _symbolic_argument(argument: ast.AST, context: FileContext, scope: ast.AST, depth: int) -> bool:
    if isinstance(argument, (ast.List, ast.Tuple)):
        return any(is_symbolic(e, context, scope, depth + 1) for e in argument.elts)
    return is_symbolic(argument, context, scope, depth + 1)


def _is_keras_layer(call: ast.Call, context: FileContext, scope: ast.AST | None = None) -> bool:
    """``Dense(64)``, ``keras.Model(inputs, outputs)``, ``keras.Sequential([...])``; also a layer
    class of this file (``ResBlock(64)``: its bases are Keras layers) and a layer made through a
    ``functools.partial`` of a layer class (``conv = partial(Conv2D, kernel_size=3)``, then
    ``conv(filters=64)``), the way model-building functions often spell their layers."""
    found = keras_name(context.qualname(call.func))
    if found is not None:
        path = found[1]
        return path.startswith("layers.") or path in ("Model", "models.Model", "Sequential", "models.Sequential")
    if context.qualname(call.func) == "functools.partial":
        return bool(call.args) and is_layer_class(call.args[0], context)
    if not isinstance(call.func, ast.Name):
        return False
    if is_layer_class(call.func, context):
        return True
    if scope is None:
        return False
    # `conv_f(filters=64)` where `conv_f = functools.partial(Conv2D, ...)` in this scope
    values, complete = reaching_values(call.func.id, call, scope)
    return (
        complete
        and bool(values)
        and all(
            isinstance(v, ast.Call) and context.qualname(v.func) == "functools.partial" and _is_keras_layer(v, context)
            for v in values
        )
    )


def is_layer_class(node: ast.expr, context: FileContext) -> bool:
    """``Conv2D`` / ``keras.layers.Dense`` (a Keras layer or model class), or a class of this
    file whose bases make it one."""
    found = keras_name(context.qualname(node))
    if found is not None:
        path = found[1]
        return path.startswith("layers.") or path in ("Model", "models.Model", "Sequential", "models.Sequential")
    if isinstance(node, ast.Name):
        classes = context.class_defs(node.id)
        return bool(classes) and all(context.class_kind(k) in ("keras-layer", "keras-model") for k in classes)
    return False


# (id of a function node, parameter) that a caller in another file gives a KerasTensor: set by that
# caller's check for the time it reads the function (assume_symbolic), as the callers of a function of
# the same file are found by reading this file.
_ASSUMED: set[tuple[int, str]] = set()


class assume_symbolic:  # noqa: N801 - used as `with assume_symbolic(function, name):`
    """While reading ``function`` for the call being checked, its parameter ``name`` holds a KerasTensor."""

    def __init__(self, function: ast.AST, name: str) -> None:
        self._key = (id(function), name)
        self._added = False

    def __enter__(self) -> None:
        self._added = self._key not in _ASSUMED
        _ASSUMED.add(self._key)

    def __exit__(self, *_: object) -> None:
        if self._added:
            _ASSUMED.discard(self._key)


def symbolic_parameter(name: str, scope: ast.AST, context: FileContext, depth: int = 0) -> bool:
    """``def conv_block(x): ... tf.nn.relu(x)`` called as ``conv_block(inputs)`` while a functional model
    is built: the parameter holds a KerasTensor on that call, so a TensorFlow op on it raises in Keras 3
    as it would in the caller's own body. A caller in this file that certainly passes one is enough
    (each call runs the body); a function of another module is read by its caller (assume_symbolic)."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or depth > _MAX_DEPTH:
        return False
    if (id(scope), name) in _ASSUMED:
        return True
    answers = _file_cache(context).parameters
    key = (id(scope), name)
    known = answers.get(key)
    if known is not None:
        return known
    answers[key] = False  # while its callers are read: a recursive call says no
    found = answers[key] = _passed_a_keras_tensor(name, scope, context, depth)
    return found


class _FileCache:
    """What this module worked out for one file, kept on its FileContext so that it goes with it (a global
    cache kept every linted file's tree alive, and the garbage collector's passes over them cost more than
    the answers saved)."""

    def __init__(self) -> None:
        # (id of a function node, parameter) -> whether a caller of this file gives it a KerasTensor
        self.parameters: dict[tuple[int, str], bool] = {}
        # a module-level function's name -> its calls in the file, each with its enclosing scope
        self.calls: dict[str, list[tuple[ast.Call, ast.AST]]] = {}


def _file_cache(context: FileContext) -> _FileCache:
    cache = getattr(context, "_symbolic_cache", None)
    if cache is None:
        cache = _FileCache()
        setattr(context, "_symbolic_cache", cache)  # noqa: B010 - a dynamic attribute, mypy would refuse it otherwise
    return cache


def _passed_a_keras_tensor(
    name: str, scope: ast.FunctionDef | ast.AsyncFunctionDef, context: FileContext, depth: int
) -> bool:
    if context.source.count(scope.name + "(") < 2:
        return False  # the definition is the only place the name is followed by "(": nothing in this file calls it
    arguments = scope.args
    positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    if name not in positional and name not in {a.arg for a in arguments.kwonlyargs}:
        return False
    for call, call_scope in _calls_of(context, scope.name):
        if call_scope is scope:
            continue  # recursion: the outer call decides
        given = passed_argument(call, positional, name)
        if given is not None and _symbolic_argument(given, context, call_scope, depth + 1):
            return True
    return False


def passed_argument(call: ast.Call, positional: list[str], name: str) -> ast.expr | None:
    """What ``call`` gives the parameter ``name`` (by position or keyword), or None."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    index = positional.index(name) if name in positional else -1
    if 0 <= index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index]
    return None


def _calls_of(context: FileContext, name: str) -> list[tuple[ast.Call, ast.AST]]:
    """Calls of the module-level function ``name`` in the file, each with its enclosing function (or the
    module). A name the file defines more than once (a method or nested function of that name) would mix
    callers: none then. Calls inside a class body or a lambda are left out (a method's or a lambda's callers
    pass what only running the code tells). Only the top-level statements whose text calls the name are read."""
    calls = _file_cache(context).calls
    if name in calls:
        return calls[name]
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\s*\(")
    definitions = len(re.findall(rf"\bdef\s+{re.escape(name)}\s*\(", context.source))
    lines = {number for number, text in enumerate(context.lines, 1) if name in text and pattern.search(text)}
    found: list[tuple[ast.Call, ast.AST]] = []
    if definitions == 1 and lines:
        for statement in context.tree.body:
            span = range(statement.lineno, (statement.end_lineno or statement.lineno) + 1)
            if not any(line in span for line in lines):
                continue
            containers: list[ast.AST] = []
            sites: list[ast.Call] = []
            for node in walk_nodes(statement):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
                    sites.append(node)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                    containers.append(node)
            for call in sites:
                scope = _innermost(containers, call) or context.tree
                if not isinstance(scope, (ast.ClassDef, ast.Lambda)):
                    found.append((call, scope))
    calls[name] = found
    return found


def _innermost(containers: list[ast.AST], node: ast.AST) -> ast.AST | None:
    """The innermost container whose source span holds ``node`` (a call in a function's default arguments or
    decorators counts as that function's: rare, and harmless here)."""
    line, column = getattr(node, "lineno", 0), getattr(node, "col_offset", 0)
    best: ast.AST | None = None
    for container in containers:
        start = (container.lineno, container.col_offset)  # type: ignore[attr-defined]
        stop = (container.end_lineno or container.lineno, container.end_col_offset or 0)  # type: ignore[attr-defined]
        if start <= (line, column) < stop and (best is None or start >= (best.lineno, best.col_offset)):  # type: ignore[attr-defined]
            best = container
    return best
