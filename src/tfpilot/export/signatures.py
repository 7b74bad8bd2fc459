"""Serving signatures with preprocessing inside the graph.

serving_default takes raw input (uint8 images, named CSV columns) exactly as a client sends it
and returns named outputs, so a TF Serving client never re-implements preprocessing.
"""

from __future__ import annotations

from collections.abc import Callable

import keras
import tensorflow as tf

from tfpilot.data.preprocessing import Preprocessor

__all__ = ["serving_outputs", "make_serving_fn", "make_logits_fn"]


def serving_outputs(logits: tf.Tensor, class_names: list[str]) -> dict[str, tf.Tensor]:
    logits = tf.cast(logits, tf.float32)
    class_id = tf.argmax(logits, axis=-1, output_type=tf.int64)
    return {
        "probabilities": tf.nn.softmax(logits, axis=-1),
        "class_id": class_id,
        "class_name": tf.gather(tf.constant(class_names, tf.string), class_id),
    }


def make_serving_fn(model: keras.Model, preprocessor: Preprocessor, class_names: list[str]) -> Callable:
    """fn(**raw_features) -> {probabilities, class_id, class_name}."""
    names = list(preprocessor.feature_spec)

    def serve(*tensors):
        features = dict(zip(names, tensors))
        return serving_outputs(model(preprocessor(features), training=False), class_names)

    return serve


def make_logits_fn(model: keras.Model, preprocessor: Preprocessor) -> Callable:
    names = list(preprocessor.feature_spec)

    def logits(*tensors):
        features = dict(zip(names, tensors))
        return {"logits": tf.cast(model(preprocessor(features), training=False), tf.float32)}

    return logits
