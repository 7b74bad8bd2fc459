"""TFP611: tf.estimator, removed in TF 2.16."""

from __future__ import annotations

from tfpilot.findings import Severity
from tfpilot.lint.removed_modules import RemovedModuleRule
from tfpilot.lint.rule import Invalid


class TfEstimator(RemovedModuleRule):
    """``tf.estimator`` was removed in TF 2.16; every use fails with AttributeError.

    The Estimator API (``tf.estimator.Estimator``, ``DNNClassifier``, ``train_and_evaluate``,
    ``RunConfig``, feature columns fed to canned estimators) and the ``tensorflow_estimator``
    package are gone, in ``tf.compat.v1`` too (measured on TF 2.21:
    ``module 'tensorflow' has no attribute 'estimator'``). A ``model_fn`` becomes a Keras model
    trained with ``model.fit`` or a custom loop over ``tf.GradientTape``; ``input_fn`` becomes a
    tf.data pipeline; exporting becomes ``model.export``.
    """

    code = "TFP611"
    name = "tf-estimator"
    message = "tf.estimator was removed in TF 2.16"
    fix_hint = (
        "Port to Keras: build the model_fn's network as a keras.Model, train with model.fit (or a "
        "custom loop with tf.GradientTape), feed it the input_fn's tf.data pipeline, export with model.export"
    )
    severity = Severity.ERROR
    gone_in_tf216 = True
    category = "tf1 -> tf2"
    tokens = ("estimator",)
    removed = (
        "tensorflow.estimator",
        "tensorflow.compat.v1.estimator",
        "tensorflow.compat.v2.estimator",
        "tensorflow.keras.estimator",
        "tensorflow_estimator",
    )
    VALID = [
        """
import keras

model = keras.Sequential([keras.layers.Dense(10)])
model.compile(optimizer="adam", loss="mse")
estimator = "not the API"
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

classifier = tf.estimator.DNNClassifier(hidden_units=[10], feature_columns=columns)
""",
            line=4,
        ),
        Invalid(
            """
from tensorflow.estimator import RunConfig
""",
            line=2,
        ),
        Invalid(
            """
import tensorflow.compat.v1 as tf

spec = tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
""",
            line=4,
        ),
    ]

    def describe(self, name: str, shown: str) -> str:
        return (
            "tf.estimator was removed in TF 2.16 (tf.compat.v1 included); use a Keras model with "
            "model.fit or a custom training loop"
        )
