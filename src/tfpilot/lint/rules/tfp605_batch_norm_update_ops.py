"""TFP605: TF1 batch normalization without the UPDATE_OPS control dependency."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.apis import TF1_BATCH_NORM, tf1_match
from tfpilot.lint.local_modules import sibling_mentions
from tfpilot.lint.patterns import keyword
from tfpilot.lint.rule import Invalid, Rule

_TRAIN_OP_HELPERS = (
    "contrib.training.create_train_op",
    "slim.learning.create_train_op",
    "tf_slim.learning.create_train_op",
    "contrib.layers.optimize_loss",
)
_HELPER_NAMES = ("create_train_op(", "optimize_loss(")


class BatchNormUpdateOps(Rule):
    """TF1 batch norm only updates its moving statistics if the train op depends on UPDATE_OPS.

    ``tf.layers.batch_normalization(training=True)`` puts the moving-mean/variance updates in
    the ``tf.GraphKeys.UPDATE_OPS`` collection. Unless the train op runs under
    ``tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS))``, the updates never
    run: training looks fine and inference uses the initial statistics (garbage predictions).
    Multi-GPU tower code is where this bites most often: each tower's batch norm adds its own
    update ops, and the train op built from the averaged gradients depends on none of them
    (TF-Slim's trainer gathers the first tower's UPDATE_OPS explicitly for this reason).
    Under TF 2.16+ with Keras 3, ``tf.compat.v1.layers.batch_normalization`` no longer exists
    at all ("not available with Keras 3"): the port to keras.layers.BatchNormalization is due.
    Not reported inside a method decorated with ``tf.compat.v1.keras.utils.track_tf1_style_variables``
    (the migration guide's shim): that code runs eagerly or in a tf.function, where the
    statistics update as the op runs, without any collection.
    """

    code = "TFP605"
    name = "tf1-batch-norm-update-ops"
    message = "TF1 batch normalization without the UPDATE_OPS control dependency"
    fix_hint = (
        "Wrap the train op: `with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)): "
        "train_op = optimizer.minimize(loss)`; in TF2 use keras.layers.BatchNormalization, which "
        "updates itself"
    )
    severity = Severity.ERROR
    category = "tf1 -> tf2"
    tokens = ("batch_norm",)
    VALID = [
        """
import tensorflow.compat.v1 as tf

def build(x, labels):
    y = tf.layers.batch_normalization(x, training=True)
    loss = tf.reduce_mean(tf.square(y - labels))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        return tf.train.AdamOptimizer().minimize(loss)
""",
        """
import keras

layer = keras.layers.BatchNormalization()
""",
        # a TF1-style layer tracked by a Keras layer runs eagerly: moving statistics update there
        """
import tensorflow as tf

class CompatBatchNorm(tf.keras.layers.Layer):
    @tf.compat.v1.keras.utils.track_tf1_style_variables
    def call(self, inputs, training=None):
        return tf.compat.v1.layers.batch_normalization(inputs, training=training)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow.compat.v1 as tf

def build(x, labels):
    y = tf.layers.batch_normalization(x, training=True)
    loss = tf.reduce_mean(tf.square(y - labels))
    return tf.train.AdamOptimizer().minimize(loss)
""",
            line=5,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._calls: list[tuple[ast.Call, str]] = []
        self._helper_runs_updates = False

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        parent = self.context.parent
        if qualname.endswith(_TRAIN_OP_HELPERS) and isinstance(parent, ast.Call) and parent.func is node:
            # TF1's train-op helpers make the train op depend on UPDATE_OPS themselves unless told
            # `update_ops=None` (contrib.training / slim create_train_op, contrib.layers.optimize_loss)
            updates = keyword(parent, "update_ops")
            if updates is None or not (isinstance(updates.value, ast.Constant) and updates.value.value is None):
                self._helper_runs_updates = True
            return
        match = tf1_match(qualname, TF1_BATCH_NORM)
        if match is not None and isinstance(parent, ast.Call) and parent.func is node:
            updates = keyword(parent, "updates_collections")
            if updates is not None and isinstance(updates.value, ast.Constant) and updates.value.value is None:
                return  # contrib batch_norm applying its updates in place
            if self._tracked_tf1_style():
                return  # runs eagerly / in a tf.function inside a Keras layer: the statistics update
            self._calls.append((parent, match))

    def _tracked_tf1_style(self) -> bool:
        """Inside a method decorated with ``tf.compat.v1.keras.utils.track_tf1_style_variables``."""
        for scope in self.context.scopes:
            for decorator in getattr(scope.node, "decorator_list", ()):
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if (self.context.qualname(target) or "").endswith("track_tf1_style_variables"):
                    return True
        return False

    def finish(self) -> None:
        if "UPDATE_OPS" in self.context.source or not self._calls or self._helper_runs_updates:
            return
        source = self.context.source
        if (
            ".minimize(" not in source
            and "apply_gradients(" not in source
            and any(sibling_mentions(self.context.path, word) for word in ("UPDATE_OPS", *_HELPER_NAMES))
        ):
            # a model module that builds no train op: the training module beside it makes the train op
            # depend on UPDATE_OPS (SimCLR's resnet.py and model.py, round 18), or builds it with a helper that
            # does (planespotting's model_layers.py beside model.py's create_train_op, round 20)
            return
        for call, name in self._calls:
            self.report(
                call,
                f"tf.{name} without a control dependency on UPDATE_OPS: its moving mean/variance "
                "never update, so inference uses the initial statistics",
            )
