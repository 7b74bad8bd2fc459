"""Built-in architectures. Every model maps the preprocessed float input to class logits;
softmax lives in the loss (from_logits=True, numerically stable) and in the serving signature."""

from __future__ import annotations

import keras

from tfpilot.config.schema import ModelConfig

__all__ = ["mlp", "cnn"]


def mlp(config: ModelConfig, *, input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    inputs = keras.Input(shape=input_shape, name="features")
    x = keras.layers.Flatten()(inputs) if len(input_shape) > 1 else inputs
    for index, units in enumerate(config.hidden_units):
        x = keras.layers.Dense(units, activation=config.activation, name=f"dense_{index}")(x)
        if config.dropout:
            x = keras.layers.Dropout(config.dropout, name=f"dropout_{index}")(x)
    # float32 logits even under mixed_float16, so softmax and the loss stay numerically safe.
    logits = keras.layers.Dense(num_classes, name="logits", dtype="float32")(x)
    return keras.Model(inputs, logits, name="mlp")


def cnn(config: ModelConfig, *, input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    if len(input_shape) != 3:
        raise ValueError(f"cnn needs image input [height, width, channels], got shape {list(input_shape)}")
    inputs = keras.Input(shape=input_shape, name="features")
    x = inputs
    for index, filters in enumerate(config.filters):
        x = keras.layers.Conv2D(filters, 3, padding="same", use_bias=False, name=f"conv_{index}")(x)
        # BatchNormalization's moving statistics update only with training=True: the trainer passes it.
        x = keras.layers.BatchNormalization(name=f"bn_{index}")(x)
        x = keras.layers.Activation(config.activation)(x)
        if min(x.shape[1], x.shape[2]) >= 4:
            x = keras.layers.MaxPooling2D(2, name=f"pool_{index}")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    for index, units in enumerate(config.hidden_units):
        x = keras.layers.Dense(units, activation=config.activation, name=f"dense_{index}")(x)
        if config.dropout:
            x = keras.layers.Dropout(config.dropout)(x)
    # float32 logits even under mixed_float16, so softmax and the loss stay numerically safe.
    logits = keras.layers.Dense(num_classes, name="logits", dtype="float32")(x)
    return keras.Model(inputs, logits, name="cnn")
