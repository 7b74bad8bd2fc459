"""A kill between the last step checkpoint and the end of an epoch: `--resume` records that epoch
with the metrics of all of its steps (restored with the checkpoint), never an empty or partial one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _train_helpers import blobs, build, tiny_config

from tfpilot.train.callbacks import TrainHook


class Killed(Exception):
    pass


class KillAfterStep(TrainHook):
    """Raises right after global step `step` ran, before that step's checkpoint is written."""

    def __init__(self, step: int) -> None:
        self.step = step

    def after_execution(self, *, step: int, steps_run: int) -> None:
        if step == self.step:
            raise Killed


def _config(root: Path):
    # 140 training examples, batch 16: 9 steps per epoch; a checkpoint after every step.
    return tiny_config(root, name="resume", epochs=2, checkpoint_every_steps=1)


def test_resumed_epoch_logs_the_same_metrics_as_an_uninterrupted_run(tmp_path: Path) -> None:
    features, labels = blobs(200)
    uninterrupted = build(_config(tmp_path / "a"), features, labels).fit().history

    # Killed after the 9th (last) step of epoch 0: the latest checkpoint is at step 8 of 9.
    with pytest.raises(Killed):
        build(_config(tmp_path / "b"), features, labels, hooks=[KillAfterStep(9)]).fit()
    resumed = build(_config(tmp_path / "b"), features, labels).fit(resume=True).history

    assert [row["epoch"] for row in resumed] == [0, 1]
    for row, reference in zip(resumed, uninterrupted, strict=True):
        assert row["step"] == reference["step"]
        for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
            np.testing.assert_allclose(row[key], reference[key], atol=1e-6, err_msg=f"epoch {row['epoch']} {key}")
    assert resumed[0]["loss"] > 0 and resumed[0]["accuracy"] > 0
