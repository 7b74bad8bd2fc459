"""TFP507: a Keras model or layer called with its training flag as a positional argument."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.bindings import KERAS
from tfpilot.lint.patterns import training_flag
from tfpilot.lint.rule import Invalid, Rule


class PositionalTrainingFlag(Rule):
    """Keras 3 takes only tensors as positional arguments of a layer or model call.

    Keras 2 passed ``model(x, is_training)`` on to ``call(self, x, training=None)``; Keras 3's
    ``Layer.__call__`` raises ``ValueError: Only input tensors may be passed as positional
    arguments`` before the call runs (a GAN's ``generator(z, is_training)`` stops at its first
    step). Reported where the callee is certainly a Keras model or layer: built by a Keras
    factory or a Keras subclass of this project, followed through parameters and attributes.
    """

    code = "TFP507"
    name = "positional-training-flag"
    message = "training flag passed positionally to a Keras model or layer: Keras 3 raises ValueError"
    fix_hint = "Pass it by keyword: model(x, training=is_training)"
    severity = Severity.ERROR
    category = "keras 3"
    keras3_only = True
    tokens = ("train", "True", "False")
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
        flag = next((found for found in map(training_flag, node.args[1:]) if found is not None), None)
        if flag is None:
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
