"""TFP211: a Keras BatchNormalization momentum written in PyTorch's convention (0.1 for 0.9)."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.rule import Invalid, Rule

# Keras' and TensorFlow's batch-norm layers, all with `moving = momentum * moving + (1 - momentum) * batch`.
_BATCH_NORMS = frozenset(
    {
        "keras.layers.BatchNormalization",
        "keras.layers.SyncBatchNormalization",
        "tensorflow.keras.layers.BatchNormalization",
        "tensorflow.keras.layers.experimental.SyncBatchNormalization",
        "tensorflow.compat.v1.layers.batch_normalization",
        "tensorflow.compat.v1.layers.BatchNormalization",
        "tensorflow.layers.batch_normalization",
        "tensorflow.layers.BatchNormalization",
        "tf_keras.layers.BatchNormalization",
    }
)
# Below this the moving statistics mostly follow the last batch: no Keras or TF example uses such a value on
# purpose, PyTorch's default is 0.1 (its momentum weighs the new batch, Keras' the old average).
_LOWEST_KERAS_MOMENTUM = 0.5


def _batch_norm(qualname: str | None) -> bool:
    if qualname is None:
        return False
    if qualname in _BATCH_NORMS:
        return True
    # `from keras import layers; layers.BatchNormalization` and keras.src paths resolve to the same class name
    return qualname.split(".")[0] in ("keras", "tensorflow", "tf_keras") and qualname.endswith(
        (".BatchNormalization", ".SyncBatchNormalization")
    )


class BatchNormTorchMomentum(Rule):
    """Keras keeps ``momentum`` of the old moving average at every step; PyTorch keeps ``1 - momentum``.

    Code ported from PyTorch (``nn.BatchNorm2d(momentum=0.1)``, its default) that writes
    ``BatchNormalization(momentum=0.1)`` makes the moving mean and variance 90% the last training
    batch: inference then normalises with one batch's noisy statistics instead of the dataset's
    (``test_lint_tf_premises.py`` runs one step on the installed Keras: a moving mean of 0 moves to
    4.5 after one batch of 5s). Reported where the momentum is a literal below 0.5, as a keyword or
    BatchNormalization's second positional argument; a note until it earns a warning.
    """

    code = "TFP211"
    name = "batchnorm-torch-momentum"
    message = "BatchNormalization momentum below 0.5: Keras' momentum weighs the old average (PyTorch's the new batch)"
    fix_hint = "Write 1 - PyTorch's momentum: BatchNormalization(momentum=0.9) for PyTorch's momentum=0.1"
    severity = Severity.INFO
    category = "training loop"
    tokens = ("momentum",)
    calls = frozenset({"BatchNormalization", "SyncBatchNormalization", "batch_normalization"})
    VALID = [
        """
import keras

norm = keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5)
""",
        """
import torch

norm = torch.nn.BatchNorm2d(64, momentum=0.1)
""",
    ]
    INVALID = [
        Invalid(
            """
from tensorflow import keras

def block(x):
    x = keras.layers.Conv2D(64, 3, padding="same")(x)
    return keras.layers.BatchNormalization(momentum=0.1, epsilon=1e-5)(x)
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        qualname = self.context.qualname(node.func)
        if not _batch_norm(qualname):
            return
        # The layer takes (axis, momentum, ...); TF1's functional batch_normalization (inputs, axis, momentum, ...).
        position = 2 if str(qualname).endswith("batch_normalization") else 1
        keyword = next((k.value for k in node.keywords if k.arg == "momentum"), None)
        value = keyword if keyword is not None else (node.args[position] if len(node.args) > position else None)
        if not isinstance(value, ast.Constant) or not isinstance(value.value, (int, float)):
            return
        if isinstance(value.value, bool) or not 0 <= value.value < _LOWEST_KERAS_MOMENTUM:
            return
        momentum = value.value
        self.report(
            node,
            f"BatchNormalization(momentum={momentum}): Keras keeps {momentum:g} of the old moving average per step, "
            f"so the moving mean and variance are {1 - momentum:.0%} the last batch and inference normalises with one "
            f"batch's statistics; PyTorch's momentum={momentum:g} is Keras' momentum={1 - momentum:g}",
        )
