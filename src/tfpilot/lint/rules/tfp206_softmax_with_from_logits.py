"""TFP206: `from_logits=True` on a model whose last layer already applies softmax."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.apis import keras_name
from tfpilot.lint.patterns import is_constant, keyword, string_value
from tfpilot.lint.rule import Invalid, Rule

_PROBABILITY_ACTIVATIONS = frozenset({"softmax", "sigmoid"})


class SoftmaxWithFromLogits(Rule):
    """A loss with ``from_logits=True`` on softmax outputs applies softmax twice.

    The loss expects raw scores; given probabilities it squashes them again, so gradients are
    tiny and training plateaus early at a worse accuracy, with no error anywhere. Either end
    the model with a linear layer (logits) or keep the softmax and use ``from_logits=False``.
    """

    code = "TFP206"
    name = "softmax-with-from-logits"
    message = "from_logits=True on a model that already ends in softmax/sigmoid"
    fix_hint = "Drop the final softmax (output logits) or set from_logits=False"
    severity = Severity.ERROR
    category = "training loop"
    tokens = ("from_logits",)
    calls = frozenset({"Sequential", "Model"})
    VALID = [
        """
import keras

model = keras.Sequential([keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
""",
        """
import keras

model = keras.Sequential([keras.layers.Dense(10, activation="softmax")])
model.compile(loss=keras.losses.SparseCategoricalCrossentropy())
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

model = keras.Sequential([keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10, activation="softmax")])
model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
""",
            line=5,
        ),
        Invalid(
            """
import tensorflow as tf

inputs = tf.keras.Input((4,))
outputs = tf.keras.layers.Dense(3, activation="softmax")(inputs)
model = tf.keras.Model(inputs, outputs)
loss_fn = tf.keras.losses.CategoricalCrossentropy(from_logits=True)
""",
            line=7,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._probability_outputs: list[ast.Call] = []
        self._probability_names: dict[str, ast.Call] = {}
        self._model_outputs: set[str] = set()
        self._logit_losses: list[ast.keyword] = []

    def visit_Call(self, node: ast.Call) -> None:
        found = keras_name(self.context.qualname(node.func))
        if found is None:
            return
        path = found[1]
        if path in ("Sequential", "models.Sequential") and node.args and isinstance(node.args[0], ast.List):
            layers = node.args[0].elts
            if layers and isinstance(layers[-1], ast.Call) and self._is_probability_layer(layers[-1]):
                self._probability_outputs.append(layers[-1])
        elif path in ("Model", "models.Model"):
            outputs = node.args[1] if len(node.args) > 1 else getattr(keyword(node, "outputs"), "value", None)
            if isinstance(outputs, ast.Name):
                self._model_outputs.add(outputs.id)

    def visit_keyword(self, flag: ast.keyword) -> None:
        if flag.arg != "from_logits" or not is_constant(flag.value, True):
            return
        call = self.context.parent
        if isinstance(call, ast.Call):
            found = keras_name(self.context.qualname(call.func))
            if found is not None and found[1].startswith("losses."):
                self._logit_losses.append(flag)

    def visit_Assign(self, node: ast.Assign) -> None:
        value = node.value
        # `outputs = layers.Dense(3, activation="softmax")(features)`
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Call) and self._is_probability_layer(value.func):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self._probability_names[target.id] = value.func

    def _is_probability_layer(self, call: ast.Call) -> bool:
        found = keras_name(self.context.qualname(call.func))
        if found is None:
            return False
        layer = found[1].rsplit(".", 1)[-1]
        if layer == "Softmax":
            return True
        activation = keyword(call, "activation")
        if activation is not None:
            return string_value(activation.value) in _PROBABILITY_ACTIVATIONS
        if layer == "Activation" and call.args:
            return string_value(call.args[0]) in _PROBABILITY_ACTIVATIONS
        if layer == "Dense" and len(call.args) > 1:
            return string_value(call.args[1]) in _PROBABILITY_ACTIVATIONS
        return False

    def finish(self) -> None:
        outputs = list(self._probability_outputs)
        outputs += [call for name, call in self._probability_names.items() if name in self._model_outputs]
        if not outputs or not self._logit_losses:
            return
        line = outputs[0].lineno
        for flag in self._logit_losses:
            self.report(
                flag,
                f"from_logits=True but the model's last layer (line {line}) already applies "
                "softmax/sigmoid: the loss squashes probabilities a second time",
            )
