"""TFP612: tf.layers (and tf.compat.v1.layers), which do not exist with Keras 3."""

from __future__ import annotations

from tfpilot.findings import Severity
from tfpilot.lint.removed_modules import RemovedModuleRule
from tfpilot.lint.rule import Invalid

# TF1 functional layers -> their Keras layer class (the arguments mostly carry over).
_KERAS_LAYER = {
    "dense": "Dense",
    "dropout": "Dropout",
    "flatten": "Flatten",
    "batch_normalization": "BatchNormalization",
    "conv1d": "Conv1D",
    "conv2d": "Conv2D",
    "conv3d": "Conv3D",
    "conv2d_transpose": "Conv2DTranspose",
    "conv3d_transpose": "Conv3DTranspose",
    "separable_conv1d": "SeparableConv1D",
    "separable_conv2d": "SeparableConv2D",
    "max_pooling1d": "MaxPooling1D",
    "max_pooling2d": "MaxPooling2D",
    "max_pooling3d": "MaxPooling3D",
    "average_pooling1d": "AveragePooling1D",
    "average_pooling2d": "AveragePooling2D",
    "average_pooling3d": "AveragePooling3D",
}


class TfLayers(RemovedModuleRule):
    """``tf.layers`` is gone, and ``tf.compat.v1.layers`` does not work with Keras 3.

    TF2 removed ``tf.layers``; tf_upgrade_v2 rewrites it to ``tf.compat.v1.layers``, which in
    TF 2.16+ is a lazy loader that raises ``AttributeError: `dense` is not available with
    Keras 3`` (measured on TF 2.21). Use Keras layers (``tf.layers.dense(x, 10)`` ->
    ``keras.layers.Dense(10)(x)``, created once and reused), or keep legacy graph code running on
    Keras 2 with ``pip install tf_keras`` and ``TF_USE_LEGACY_KERAS=1``.
    """

    code = "TFP612"
    name = "tf-layers"
    message = "tf.layers / tf.compat.v1.layers do not exist with Keras 3"
    fix_hint = (
        "Use keras.layers (tf.layers.dense(x, n) -> keras.layers.Dense(n)(x), the layer created once); "
        "legacy graph code can run on tf_keras with TF_USE_LEGACY_KERAS=1"
    )
    severity = Severity.ERROR
    category = "tf1 -> tf2"
    tokens = ("layers",)
    removed = ("tensorflow.layers", "tensorflow.compat.v1.layers")
    VALID = [
        """
import keras
import tensorflow as tf

hidden = keras.layers.Dense(64, activation="relu")
outputs = tf.keras.layers.Dense(10)(hidden(tf.zeros([1, 3])))
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

hidden = tf.layers.dense(inputs, 64, activation=tf.nn.relu)
""",
            line=4,
        ),
        Invalid(
            """
import tensorflow.compat.v1 as tf

net = tf.layers.conv2d(images, 32, 3)
""",
            line=4,
        ),
        Invalid(
            """
from tensorflow.compat.v1 import layers

net = layers.max_pooling2d(images, 2, 2)
""",
            line=2,
        ),
    ]

    def describe(self, name: str, shown: str) -> str:
        function = name.rsplit(".", 1)[-1]
        replacement = _KERAS_LAYER.get(function)
        if replacement is None and function[:1].isupper():
            replacement = function  # tf.layers.Dense, the class form
        target = f"use `keras.layers.{replacement}`" if replacement else "use the matching `keras.layers` class"
        return f"tf.layers is gone and tf.compat.v1.layers does not work with Keras 3; {target} (or tf_keras)"
