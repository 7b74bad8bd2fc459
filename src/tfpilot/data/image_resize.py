"""Decoding and resizing one encoded image to the configured size, in-graph.

stretch ignores the aspect ratio; pad keeps it and fills the borders with black (letterbox);
crop keeps it, scales the short side to fit and cuts the centre. Any channel count (grayscale,
RGB, RGBA, palette) becomes data.image.channels in decode_image. Images already at the target
size are passed through untouched, so their pixels stay bit-exact.
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["decode_and_resize", "RESIZE_MODES"]

RESIZE_MODES = ("stretch", "pad", "crop")


def _resize(image: tf.Tensor, height: int, width: int, mode: str) -> tf.Tensor:
    if mode == "pad":
        return tf.image.resize_with_pad(image, height, width, antialias=True)
    if mode == "crop":
        shape = tf.cast(tf.shape(image)[:2], tf.float32)
        scale = tf.maximum(height / shape[0], width / shape[1])
        size = tf.cast(tf.math.ceil(shape * scale), tf.int32)
        scaled = tf.image.resize(image, size, antialias=True)
        return tf.image.resize_with_crop_or_pad(scaled, height, width)
    return tf.image.resize(image, [height, width], method="bilinear", antialias=True)


def decode_and_resize(data: tf.Tensor, *, height: int, width: int, channels: int, mode: str = "stretch") -> tf.Tensor:
    """Encoded PNG/JPEG/GIF/BMP bytes (scalar string) -> uint8 [height, width, channels]."""
    # expand_animations=False keeps a static rank-3 shape (first frame of a GIF).
    image = tf.io.decode_image(data, channels=channels, expand_animations=False, dtype=tf.uint8)
    image = tf.ensure_shape(image, [None, None, channels])
    same = tf.logical_and(tf.equal(tf.shape(image)[0], height), tf.equal(tf.shape(image)[1], width))
    return tf.cond(
        same,
        lambda: tf.reshape(image, [height, width, channels]),
        lambda: tf.cast(tf.clip_by_value(tf.round(_resize(image, height, width, mode)), 0, 255), tf.uint8),
    )
