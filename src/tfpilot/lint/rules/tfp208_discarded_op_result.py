"""TFP208: the result of a pure TensorFlow op thrown away (`tf.clip_by_norm(g, 5)` on its own line)."""

from __future__ import annotations

import ast

from tfpilot.lint.rule import Invalid, Rule

# Ops that return a new tensor and change nothing else: called as a statement they do nothing.
# (Arithmetic such as tf.matmul is left out: timing loops call it for its cost on purpose.)
_PURE_OPS = frozenset(
    {
        "tensorflow.clip_by_norm",
        "tensorflow.clip_by_value",
        "tensorflow.clip_by_global_norm",
        "tensorflow.cast",
        "tensorflow.reshape",
        "tensorflow.squeeze",
        "tensorflow.expand_dims",
        "tensorflow.transpose",
        "tensorflow.concat",
        "tensorflow.stack",
        "tensorflow.one_hot",
    }
)
_PURE_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in _PURE_OPS)


class DiscardedOpResult(Rule):
    """A pure TensorFlow op whose result is thrown away does nothing.

    TensorFlow tensors are immutable: ``tf.clip_by_norm(g, 5.0)`` returns a clipped copy and
    leaves ``g`` as it was, so a loop of such calls before ``apply_gradients`` clips nothing and
    the update uses the raw gradients. Reported for clipping, casting and reshaping ops called as
    a statement inside a function or loop (at a notebook's top level a bare expression displays
    its value, so it is left alone there).
    """

    code = "TFP208"
    name = "discarded-op-result"
    message = "result of a pure TensorFlow op is discarded: the call changes nothing"
    fix_hint = "Assign the result: g = tf.clip_by_norm(g, 5.0) (or grads = [tf.clip_by_norm(g, 5.0) for g in grads])"
    category = "training loop"
    tokens = (
        "clip_by_",
        "cast(",
        "reshape(",
        "squeeze(",
        "expand_dims(",
        "transpose(",
        "concat(",
        "stack(",
        "one_hot(",
    )
    VALID = [
        """
import tensorflow as tf

def clip(grads):
    return [tf.clip_by_norm(g, 5.0) for g in grads]
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

def clip(grads):
    for g in grads:
        tf.clip_by_norm(g, 5.0)
    return grads
""",
            line=6,
        ),
    ]

    def visit_Expr(self, node: ast.Expr) -> None:
        call = node.value
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            return
        if call.func.attr not in _PURE_NAMES or self.context.qualname(call.func) not in _PURE_OPS:
            return
        if isinstance(self.context.scope.node, ast.Module) and not self.context.loops:
            return
        name = ast.unparse(call.func)
        self.report(
            call,
            f"`{name}(...)` returns a new tensor and changes nothing else; its result is discarded here, so "
            "the call has no effect (assign it)",
        )
