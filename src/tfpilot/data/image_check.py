"""Decode every image once before training, in parallel, and name the files that fail.

A file with a valid header but a truncated body passes any header sniffing and only fails when
tf.data decodes it, mid-epoch, with `jpeg::Uncompress failed` and no file name. Decoding with the
same op the pipeline uses (tf.io.decode_image), once, up front, finds it before any step runs.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import tensorflow as tf

__all__ = ["undecodable_images"]


def _problem(path: str, channels: int) -> str | None:
    try:
        data = tf.io.read_file(path)
        tf.io.decode_image(data, channels=channels, expand_animations=False, dtype=tf.uint8)
    except (tf.errors.InvalidArgumentError, tf.errors.NotFoundError, tf.errors.DataLossError) as exc:
        first = (exc.message or type(exc).__name__).strip().splitlines()[0]
        return first[:160]
    return None


def undecodable_images(paths: list[str], *, channels: int) -> dict[str, str]:
    """path -> first line of TensorFlow's decode error, for every file that does not decode (in input order)."""
    # Eager TF ops release the GIL, so threads decode in parallel.
    workers = max(1, min(16, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        problems = list(pool.map(lambda p: _problem(p, channels), paths))
    return {path: why for path, why in zip(paths, problems, strict=True) if why is not None}
