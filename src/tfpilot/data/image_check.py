"""Decode every image once before training, in parallel, and name the files that fail.

A file with a valid header but a truncated body passes any header sniffing and only fails when
tf.data decodes it, mid-epoch, with `jpeg::Uncompress failed` and no file name. Decoding with the
same op the pipeline uses (tf.io.decode_image), once, up front, finds it before any step runs.
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor

import tensorflow as tf

__all__ = ["undecodable_images", "decode_problem", "PROGRESS_LOGGER"]

# Long first-time work (checking a large image folder, tuning the step) says what it does and how
# far it is on this logger; the CLI shows its INFO lines on stderr (cli/render.show_log_lines).
PROGRESS_LOGGER = "tfpilot.progress"
_LOG = logging.getLogger(PROGRESS_LOGGER)
_REPORT_EVERY_S = 5.0
_QUIET_BELOW = 2000  # a small folder is checked in a second or two: no lines for it


def decode_problem(data: tf.Tensor | bytes, channels: int) -> str | None:
    """The first line of TensorFlow's decode error for encoded image bytes, or None when they decode."""
    try:
        tf.io.decode_image(data, channels=channels, expand_animations=False, dtype=tf.uint8)
    except (tf.errors.InvalidArgumentError, tf.errors.DataLossError) as exc:
        first = (exc.message or type(exc).__name__).strip().splitlines()[0]
        return first[:160]
    return None


def _problem(path: str, channels: int) -> str | None:
    try:
        data = tf.io.read_file(path)
    except tf.errors.NotFoundError as exc:
        return (exc.message or type(exc).__name__).strip().splitlines()[0][:160]
    return decode_problem(data, channels)


def undecodable_images(paths: list[str], *, channels: int, report_from: int = _QUIET_BELOW) -> dict[str, str]:
    """path -> first line of TensorFlow's decode error, for every file that does not decode (in input order)."""
    # Eager TF ops release the GIL, so threads decode in parallel.
    workers = max(1, min(16, os.cpu_count() or 1))
    total, loud = len(paths), len(paths) >= report_from
    start = last = time.monotonic()
    if loud:
        _LOG.info("checking %d images: decoding each once before training", total)
    problems: list[str | None] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for problem in pool.map(lambda p: _problem(p, channels), paths):
            problems.append(problem)
            now = time.monotonic()
            if loud and now - last >= _REPORT_EVERY_S:
                last = now
                rate = len(problems) / (now - start)
                _LOG.info(
                    "checked %d/%d images (%.0f/s, about %.0fs left)",
                    len(problems),
                    total,
                    rate,
                    (total - len(problems)) / rate,
                )
    if loud:
        bad = sum(problem is not None for problem in problems)
        _LOG.info("checked %d images in %.1fs: %d do not decode", total, time.monotonic() - start, bad)
    return {path: why for path, why in zip(paths, problems, strict=True) if why is not None}
