"""The up-front image check says how far it is on the `tfpilot.progress` logger, and what it found."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf

from tfpilot.data.image_check import PROGRESS_LOGGER, undecodable_images


def test_large_checks_report_progress_and_the_result(tmp_path, caplog: pytest.LogCaptureFixture):
    paths = []
    for index in range(3):
        path = tmp_path / f"{index}.png"
        path.write_bytes(tf.io.encode_png(np.full((4, 4, 3), index, np.uint8)).numpy())
        paths.append(str(path))
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)  # a PNG header and nothing after it
    paths.append(str(broken))
    with caplog.at_level(logging.INFO, logger=PROGRESS_LOGGER):
        bad = undecodable_images(paths, channels=3, report_from=1)
    assert list(bad) == [str(broken)]
    lines = [r.getMessage() for r in caplog.records if r.name == PROGRESS_LOGGER]
    assert lines[0] == "checking 4 images: decoding each once before training"
    assert lines[-1].startswith("checked 4 images in ") and lines[-1].endswith(": 1 do not decode")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=PROGRESS_LOGGER):
        undecodable_images(paths, channels=3)  # a small folder: checked in a moment, no lines
    assert not [r for r in caplog.records if r.name == PROGRESS_LOGGER]
