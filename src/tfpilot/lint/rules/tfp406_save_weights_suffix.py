"""TFP406: `save_weights()` to a file name that does not end in .weights.h5."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from tfpilot.findings import Severity
from tfpilot.lint.apis import is_keras_path
from tfpilot.lint.paths import possible_tails, possible_values
from tfpilot.lint.patterns import is_constant, keyword
from tfpilot.lint.rule import Invalid, Rule

if TYPE_CHECKING:
    from tfpilot.lint.context import FileContext


class SaveWeightsSuffix(Rule):
    """Keras 3 ``save_weights`` requires a file name ending in ``.weights.h5``.

    Keras 2 wrote a TF checkpoint for other names (``"ckpt/model"``); Keras 3 raises
    ValueError ("The filename must end in `.weights.h5`"), and ``load_weights`` cannot read the
    old TF checkpoints either. For TF-format checkpoints use tf.train.Checkpoint.
    """

    code = "TFP406"
    name = "save-weights-suffix"
    message = "save_weights() file name must end in .weights.h5 in Keras 3"
    fix_hint = "Name the file '*.weights.h5', or use tf.train.Checkpoint / CheckpointManager for TF checkpoints"
    severity = Severity.ERROR
    category = "saving"
    keras3_only = True
    tokens = ("save_weights", "load_weights", "ModelCheckpoint")
    calls = frozenset({"save_weights", "load_weights", "ModelCheckpoint"})
    VALID = [
        """
model.save_weights("checkpoints/model.weights.h5")
""",
        """
import keras

path = "ckpt/best.weights.h5"
callback = keras.callbacks.ModelCheckpoint(path, save_weights_only=True)
whole = keras.callbacks.ModelCheckpoint("ckpt/best.keras")
for name in names:
    model.save_weights(name)
""",
    ]
    INVALID = [
        Invalid(
            """
model.save_weights("checkpoints/model")
""",
            line=2,
        ),
        Invalid(
            """
model.save_weights(f"{run_dir}/epoch_{epoch}.h5")
""",
            line=2,
        ),
        # the path held in a variable
        Invalid(
            """
checkpoint_path = "training_1/cp.ckpt"
model.save_weights(checkpoint_path)
""",
            line=3,
        ),
        # Keras 3's ModelCheckpoint refuses it when the callback is built, before training
        Invalid(
            """
import keras

checkpoint_path = "training_1/cp.ckpt"
callback = keras.callbacks.ModelCheckpoint(filepath=checkpoint_path, save_weights_only=True, verbose=1)
""",
            line=5,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        accepted: tuple[str, ...] = (".weights.h5",)
        if isinstance(func, ast.Attribute) and func.attr in ("save_weights", "load_weights") and node.args:
            if self._own_save_weights(func.value, node, func.attr):
                return  # `agent.save_weights(actor_path, critic_path)`: the project's own method
            target: ast.AST | None = node.args[0]
            what = func.attr
            if what == "load_weights":
                accepted = (".weights.h5", ".keras", ".h5", ".hdf5")
        elif is_keras_path(self.context.qualname(func), "callbacks.ModelCheckpoint") and _weights_only(node):
            target = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "filepath"), None)
            what = "ModelCheckpoint(save_weights_only=True)"
        else:
            return
        # every value that may reach the call: one that cannot be read never hides one that can
        for path in possible_tails(target, self.context):
            if path is not None and not path.endswith(accepted):
                if what == "load_weights":
                    self.report(
                        node,
                        f"load_weights from {path!r}: Keras 3 reads only .weights.h5, .keras and legacy .h5 "
                        "files and raises ValueError on a TF checkpoint name",
                    )
                else:
                    self.report(node, f"{what} to {path!r}: Keras 3 requires a name ending in .weights.h5")
                return

    def _own_save_weights(self, receiver: ast.expr, at: ast.Call, method: str = "save_weights") -> bool:
        """The receiver is an instance of a class of this file that defines save_weights itself
        (its Keras calls inside that method are judged where they are)."""
        name = self.context.dotted(receiver)
        if name is None or name == "self" or name.startswith("self."):
            return False
        if isinstance(receiver, ast.Name):
            values = possible_values(receiver, self.context)
        else:
            values = self.context.bindings.values(name, at, self.context.scope.node)
        return bool(values) and all(
            isinstance(v, ast.Call)
            and isinstance(v.func, ast.Name)
            and _defines(self.context, v.func.id, set(), method)
            for v in values
        )


def _defines(context: FileContext, class_name: str, seen: set[str], method: str = "save_weights") -> bool:
    """``class_name`` (a class of this file) or one of its bases of this file defines save_weights."""
    if class_name in seen:
        return False
    seen.add(class_name)
    for klass in context.class_defs(class_name):
        if any(isinstance(d, ast.FunctionDef) and d.name == method for d in klass.body):
            return True
        if any(isinstance(b, ast.Name) and _defines(context, b.id, seen, method) for b in klass.bases):
            return True
    return False


def _weights_only(call: ast.Call) -> bool:
    flag = keyword(call, "save_weights_only")
    return flag is not None and is_constant(flag.value, True)
