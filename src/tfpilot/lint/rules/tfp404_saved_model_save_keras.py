"""TFP404: tf.saved_model.save on a Keras 3 model."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.bindings import KERAS, PLAIN_CLASS, PLAIN_FUNCTION, TF_MODULE
from tfpilot.lint.patterns import is_keras_model_expr
from tfpilot.lint.rule import Invalid, Rule

_SAVED_MODEL_SAVE = frozenset({"tensorflow.saved_model.save", "tensorflow.compat.v2.saved_model.save"})


class SavedModelSaveOnKeras(Rule):
    """``tf.saved_model.save`` on a Keras 3 model writes a SavedModel that does not serve.

    It loads back in Python, but TF Serving's C++ loader (and ``saved_model_cli run``) fail on
    it, and a TFLite conversion of it outputs NaN without any error. ``model.export(path)`` or
    ``keras.export.ExportArchive`` (with an explicit input_signature) write a serving
    signature that the C++ loader and the TFLite converter handle.
    """

    code = "TFP404"
    name = "saved-model-save-on-keras"
    message = "tf.saved_model.save on a Keras 3 model fails in TF Serving and converts to a NaN TFLite model"
    fix_hint = "Use model.export(path), or keras.export.ExportArchive with add_endpoint(input_signature=...)"
    severity = Severity.ERROR
    category = "saving"
    keras3_only = True
    tokens = ("saved_model",)
    calls = frozenset({"save"})
    VALID = [
        """
import keras

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.export("serving/1")
""",
        """
import tensorflow as tf

class Adder(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def __call__(self, x):
        return x + 1

module = Adder()
tf.saved_model.save(module, "adder/1")
""",
        # `my_model` holds the tf.Module here; a Keras class of a similar name comes later in the file
        """
import keras
import tensorflow as tf

class SequentialModule(tf.Module):
    def __call__(self, x):
        return x

my_model = SequentialModule()
tf.saved_model.save(my_model, "module/1")

class SequentialModel(keras.Model):
    pass

my_model = SequentialModel()
my_model.export("model/1")
""",
    ]
    INVALID = [
        Invalid(
            """
import keras
import tensorflow as tf

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
tf.saved_model.save(model, "serving/1")
""",
            line=6,
        ),
        # a Keras model passed through a helper's parameter
        Invalid(
            """
import keras
import tensorflow as tf

def publish(thing, path):
    tf.saved_model.save(thing, path)

classifier = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
publish(classifier, "serving/1")
""",
            line=6,
        ),
    ]

    def report(self, node: ast.AST, message: str | None = None, **kwargs: Any) -> None:
        if kwargs.get("severity") is None and self._holds_hub_layers():
            # Keras 3 refuses hub.KerasLayer in its models (tensorflow/tensorflow#65419), so a file
            # that builds one runs on tf_keras, whose models tf.saved_model.save exports as they are
            super().report(
                node,
                f"{message or self.message} - a Keras 3 break only, and this file's models hold hub.KerasLayer, "
                "which needs Keras 2 (tf_keras), where tf.saved_model.save is the export",
                severity=Severity.INFO,
            )
            return
        super().report(node, message, **kwargs)

    def _holds_hub_layers(self) -> bool:
        return "KerasLayer" in self.context.source and any(
            value.split(".")[0] == "tensorflow_hub" for value in self.context.imports.values()
        )

    def visit_Call(self, node: ast.Call) -> None:
        if self.context.qualname(node.func) not in _SAVED_MODEL_SAVE or not node.args:
            return
        target = node.args[0]
        name = self.context.dotted(target)
        if name is not None:
            values = self.context.bindings.values(name, node, self.context.scope.node)
            kinds = {self.context.bindings.kind_of(value) for value in values}
            if kinds and kinds <= {TF_MODULE, PLAIN_CLASS, PLAIN_FUNCTION}:
                return  # a tf.Module (or no model at all): tf.saved_model.save is its API
            if kinds == {KERAS}:
                self.report(node)
                return
        if is_keras_model_expr(target, self.context):
            self.report(node)
