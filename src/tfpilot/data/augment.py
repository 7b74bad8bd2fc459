"""Image augmentation with Keras preprocessing layers, in the training pipeline only.

It runs on training batches after the cache (cached images are the un-augmented ones, so each
epoch draws new transforms) and never in evaluation or the serving signature, which are built
from the preprocessor alone. Layers are seeded from (train seed, epoch): a rerun or a resumed run
sees the same augmented images as an uninterrupted one, and every epoch sees different ones.
"""

from __future__ import annotations

from typing import Any

import keras

from tfpilot.config.schema import AugmentConfig

__all__ = ["augmentation_layers"]


def augmentation_layers(
    config: AugmentConfig, *, image_shape: tuple[int, ...], seed: int, epoch: int
) -> keras.Sequential | None:
    """A Sequential of the configured random layers for one epoch, or None when augmentation is off."""
    if not config.enabled:
        return None
    base = seed * 1_000_003 + epoch * 7_919
    height, width = int(image_shape[0]), int(image_shape[1])
    layers: list[Any] = []
    if config.crop:
        layers += [
            keras.layers.ZeroPadding2D(config.crop),
            keras.layers.RandomCrop(height, width, seed=base + 1),
        ]
    if config.flip != "none":
        layers.append(keras.layers.RandomFlip(config.flip, seed=base + 2))
    if config.rotation:
        layers.append(keras.layers.RandomRotation(config.rotation, fill_mode="reflect", seed=base + 3))
    if config.zoom:
        layers.append(keras.layers.RandomZoom(config.zoom, fill_mode="reflect", seed=base + 4))
    if config.translation:
        layers.append(
            keras.layers.RandomTranslation(config.translation, config.translation, fill_mode="reflect", seed=base + 5)
        )
    # Images reach this point scaled to [0, 1] by the preprocessor.
    if config.contrast:
        layers.append(keras.layers.RandomContrast(config.contrast, value_range=(0.0, 1.0), seed=base + 6))
    if config.brightness:
        layers.append(keras.layers.RandomBrightness(config.brightness, value_range=(0.0, 1.0), seed=base + 7))
    return keras.Sequential(layers, name=f"augment_epoch_{epoch}")
