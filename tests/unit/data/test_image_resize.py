"""data.image.resize: stretch | pad | crop keep (or not) the aspect ratio; any channel count is normalised."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tfpilot.config.schema import DataConfig
from tfpilot.data import load_source
from tfpilot.data.image_resize import decode_and_resize


def wide_image() -> np.ndarray:
    """8 rows x 16 columns: left half white, right half black, grayscale."""
    image = np.zeros((8, 16, 1), np.uint8)
    image[:, :8] = 255
    return image


def resize(mode: str) -> np.ndarray:
    data = tf.io.encode_png(wide_image())
    return decode_and_resize(data, height=8, width=8, channels=1, mode=mode).numpy()[..., 0]


def test_pad_keeps_the_aspect_ratio_with_black_bands() -> None:
    padded = resize("pad")
    # 16x8 into 8x8 keeps ratio 2:1 -> a 4-row image centred between black bands of 2 rows.
    assert (padded[:2] == 0).all() and (padded[-2:] == 0).all()
    assert padded[2:6, :3].min() > 200 and padded[2:6, -3:].max() < 50


def test_crop_keeps_the_aspect_ratio_and_cuts_the_centre() -> None:
    cropped = resize("crop")
    # The centre 8 columns of the 16: 4 white then 4 black, every row.
    assert cropped[:, :3].min() > 200 and cropped[:, -3:].max() < 50
    assert (cropped == cropped[0]).all()


def test_stretch_squeezes_the_whole_width() -> None:
    stretched = resize("stretch")
    assert stretched[:, :3].min() > 200 and stretched[:, -3:].max() < 50
    assert not np.array_equal(stretched, resize("pad"))


@pytest.mark.parametrize("mode", ["stretch", "pad", "crop"])
def test_mixed_sizes_and_colour_modes_become_one_shape(tmp_path: Path, mode: str) -> None:
    rng = np.random.default_rng(0)
    shapes = {"gray.png": (20, 9, 1), "rgb.jpg": (7, 31, 3), "rgba.png": (12, 12, 4), "graya.png": (5, 40, 2)}
    for label in ("a", "b"):
        for name, shape in shapes.items():
            pixels = rng.integers(0, 256, size=shape, dtype=np.uint8)
            path = tmp_path / label / name
            path.parent.mkdir(parents=True, exist_ok=True)
            encoded = tf.io.encode_jpeg(pixels) if name.endswith(".jpg") else tf.io.encode_png(pixels)
            path.write_bytes(encoded.numpy())
    for channels in (1, 3):
        config = DataConfig(
            kind="image_folder", path=tmp_path, image={"height": 16, "width": 16, "channels": channels, "resize": mode}
        )
        source = load_source(config)
        assert len(source) == 8
        for path in source.records["path"]:
            image = source.decode({"path": tf.constant(path)})["image"]
            assert image.shape == (16, 16, channels) and image.dtype == tf.uint8
