"""TFP406: `save_weights()` to a file name that does not end in .weights.h5."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.patterns import path_literal
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
    tokens = ("save_weights",)
    calls = frozenset({"save_weights"})
    VALID = [
        """
model.save_weights("checkpoints/model.weights.h5")
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
    ]

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "save_weights" and node.args):
            return
        path = path_literal(node.args[0])
        if path is None or path.endswith(".weights.h5"):
            return
        self.report(node, f"save_weights({path!r}): Keras 3 requires a name ending in .weights.h5")
