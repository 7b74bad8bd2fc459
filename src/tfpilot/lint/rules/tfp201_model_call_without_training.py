"""TFP201: a model called without `training=` inside a GradientTape block."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.lint.naming import is_frozen_model_name
from tfpilot.lint.patterns import has_keyword, has_star_kwargs, is_model_call
from tfpilot.lint.rule import Invalid, Rule


class ModelCallWithoutTraining(Rule):
    """Inside a GradientTape the model must be called with ``training=True``.

    Without it, Keras runs the call in inference mode: Dropout is off and BatchNormalization
    normalises with its moving statistics and never updates them. The model still trains, but
    it is a different model from the one you designed, and validation numbers drift from
    training numbers for no visible reason. (A frozen teacher or target network is called with
    ``training=False`` on purpose: say so explicitly.)
    """

    code = "TFP201"
    name = "model-call-without-training"
    message = "model called inside a GradientTape block without training="
    fix_hint = "Call the model as model(x, training=True) in the training step (training=False for frozen models)"
    category = "training loop"
    tokens = ("GradientTape",)
    fixable = True
    VALID = [
        """
import tensorflow as tf

def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = tf.reduce_mean(tf.square(logits - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
""",
        """
import tensorflow as tf

def evaluate(model, x):
    return model(x)
""",
        """
import tensorflow as tf

restored_model = tf.saved_model.load("exported/1")
with tf.GradientTape() as tape:
    loss = restored_model(tf.constant(2.0))
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        logits = model(x)
        loss = tf.reduce_mean(tf.square(logits - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
""",
            line=6,
            fixed="""
import tensorflow as tf

def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = tf.reduce_mean(tf.square(logits - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
""",
        ),
        Invalid(
            """
import keras
import tensorflow as tf

class Classifier(keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = self.compute_loss(y=y, y_pred=self(x))
        return {"loss": loss}
""",
            line=9,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        context = self.context
        if not context.tapes or context.tapes[-1].scope is not context.scope:
            return
        if not node.args or has_keyword(node, "training") or has_star_kwargs(node):
            return
        if not is_model_call(node, context):
            return
        callee = context.dotted(node.func) or "model"
        frozen = is_frozen_model_name(callee)
        self.report(
            node,
            f"`{callee}(...)` inside a GradientTape block without `training=`: Dropout and "
            "BatchNormalization run in inference mode",
            fix_data=None if frozen else {"description": "training=True added"},
        )

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import add_keyword

        return add_keyword(node, "training", "True")
