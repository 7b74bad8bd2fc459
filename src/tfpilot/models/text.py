"""The built-in text classifier: token ids -> Embedding(mask_zero) -> masked mean -> dense head -> logits.

Padding id 0 is masked from the embedding on, and the average is taken over real tokens only,
so a sequence gives the same logits however much padding a batch adds (padded and bucketed
batching, or a serving batch padded to its longest sentence). With numeric inputs beside the
text (a dict input {"tokens", "numeric"}) the numeric vector is concatenated after pooling.
"""

from __future__ import annotations

from typing import Any

import keras

from tfpilot.config.schema import ModelConfig
from tfpilot.models.factory import register_model

__all__ = ["text_classifier"]

DEFAULT_VOCAB_SIZE = 5000


def text_classifier(
    config: ModelConfig, *, input_shape: Any, num_classes: int, vocab_size: int | None = None
) -> keras.Model:
    """`input_shape` is (None,) / (max_length,) for ids, or {"tokens": ..., "numeric": (k,)}."""
    vocab_size = int(vocab_size or config.kwargs.get("vocab_size", DEFAULT_VOCAB_SIZE))
    if isinstance(input_shape, dict):
        token_shape = tuple(input_shape["tokens"])
        numeric_shape = tuple(input_shape.get("numeric", ()))
    else:
        token_shape, numeric_shape = tuple(input_shape), ()
    if len(token_shape) != 1:
        raise ValueError(f"the text model needs token ids of shape [length], got {list(token_shape)}")
    tokens = keras.Input(shape=token_shape, dtype="int32", name="tokens")
    x = keras.layers.Embedding(vocab_size, config.embedding_dim, mask_zero=True, name="embedding")(tokens)
    # GlobalAveragePooling1D honours the mask: sum over real tokens / number of real tokens.
    x = keras.layers.GlobalAveragePooling1D(name="masked_mean")(x)
    inputs: Any = tokens
    if numeric_shape:
        numeric = keras.Input(shape=numeric_shape, dtype="float32", name="numeric")
        x = keras.layers.Concatenate(name="concat")([x, keras.layers.Flatten()(numeric)])
        inputs = {"tokens": tokens, "numeric": numeric}
    for index, units in enumerate(config.hidden_units):
        x = keras.layers.Dense(units, activation=config.activation, name=f"dense_{index}")(x)
        if config.dropout:
            x = keras.layers.Dropout(config.dropout, name=f"dropout_{index}")(x)
    # float32 logits even under mixed_float16: softmax/cross-entropy stay numerically safe.
    logits = keras.layers.Dense(num_classes, name="logits", dtype="float32")(x)
    return keras.Model(inputs, logits, name="text")


def _factory(config: ModelConfig, *, input_shape: Any, num_classes: int, vocab_size: int | None = None) -> keras.Model:
    return text_classifier(config, input_shape=input_shape, num_classes=num_classes, vocab_size=vocab_size)


register_model("text", _factory)
