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
from typing import TYPE_CHECKING

from tfpilot.lint.apis import keras_name
from tfpilot.lint.paths import reaching_values

if TYPE_CHECKING:
    from tfpilot.lint.context import FileContext

__all__ = ["is_symbolic", "is_tensorflow_op"]

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


def _symbolic_value(value: ast.AST, context: FileContext, scope: ast.AST, depth: int) -> bool:
    if isinstance(value, ast.AugAssign):
        # `loss *= 784`: symbolic if either side is
        if is_symbolic(value.value, context, scope, depth + 1):
            return True
        target = value.target
        return isinstance(target, ast.Name) and is_symbolic(
            ast.copy_location(ast.Name(id=target.id, ctx=ast.Load()), value), context, scope, depth + 1
        )
    return isinstance(value, ast.expr) and is_symbolic(value, context, scope, depth + 1)


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
        return bool(call.args) and _is_layer_class(call.args[0], context)
    if not isinstance(call.func, ast.Name):
        return False
    if _is_layer_class(call.func, context):
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


def _is_layer_class(node: ast.expr, context: FileContext) -> bool:
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
