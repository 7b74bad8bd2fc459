"""TFP406: `save_weights()` to a file name that does not end in .weights.h5."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.apis import is_keras_path
from tfpilot.lint.paths import possible_tails
from tfpilot.lint.patterns import is_constant, keyword
from tfpilot.lint.rule import Invalid, Rule


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
    tokens = ("save_weights", "ModelCheckpoint")
    calls = frozenset({"save_weights", "ModelCheckpoint"})
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
        if isinstance(func, ast.Attribute) and func.attr == "save_weights" and node.args:
            target: ast.AST | None = node.args[0]
            what = "save_weights"
        elif is_keras_path(self.context.qualname(func), "callbacks.ModelCheckpoint") and _weights_only(node):
            target = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "filepath"), None)
            what = "ModelCheckpoint(save_weights_only=True)"
        else:
            return
        # every value that may reach the call: one that cannot be read never hides one that can
        for path in possible_tails(target, self.context):
            if path is not None and not path.endswith(".weights.h5"):
                self.report(node, f"{what} to {path!r}: Keras 3 requires a name ending in .weights.h5")
                return


def _weights_only(call: ast.Call) -> bool:
    flag = keyword(call, "save_weights_only")
    return flag is not None and is_constant(flag.value, True)
