"""User model factories for test_softmax_output.py (imported as `_softmax_models:NAME`)."""

from __future__ import annotations

import keras


def _body(input_shape, num_classes):
    inputs = keras.Input(shape=tuple(input_shape))
    hidden = keras.layers.Dense(16, activation="relu", name="hidden")(inputs)
    return inputs, hidden


def logits(input_shape, num_classes):
    inputs, hidden = _body(input_shape, num_classes)
    return keras.Model(inputs, keras.layers.Dense(num_classes, name="out")(hidden))


def dense_softmax(input_shape, num_classes):
    inputs, hidden = _body(input_shape, num_classes)
    return keras.Model(inputs, keras.layers.Dense(num_classes, activation="softmax", name="out")(hidden))


def softmax_layer(input_shape, num_classes):
    inputs, hidden = _body(input_shape, num_classes)
    outputs = keras.layers.Softmax(name="probs")(keras.layers.Dense(num_classes, name="out")(hidden))
    return keras.Model(inputs, outputs)
