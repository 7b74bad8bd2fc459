"""The bundled example dataset: scikit-learn's 8x8 handwritten digits (shipped inside the
scikit-learn wheel, so nothing is downloaded) written out as PNG class folders, so the example
exercises the real path of reading and decoding image files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["prepare_digits"]


def prepare_digits(root: str | Path) -> Path:
    """Write digits/<class>/<index>.png under ``root`` once; later calls reuse them."""
    import tensorflow as tf
    from sklearn.datasets import load_digits

    root = Path(root)
    done = root / ".complete"
    if done.exists():
        return root
    digits = load_digits()
    # The data set stores intensities 0..16; scale to the 0..255 range a real PNG holds.
    images = np.clip(np.round(digits.images * (255.0 / 16.0)), 0, 255).astype(np.uint8)
    for index, (image, label) in enumerate(zip(images, digits.target, strict=False)):
        folder = root / str(int(label))
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{index:04d}.png"
        tmp = folder / f".{index:04d}.png.tmp"
        tmp.write_bytes(tf.io.encode_png(image[..., None]).numpy())
        os.replace(tmp, target)
    done.write_text(f"{len(images)} images\n")
    return root
