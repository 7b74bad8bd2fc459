"""Checkpoints that survive a crash: model, optimizer, global step, epoch and position in the epoch.

tf.train.CheckpointManager writes each checkpoint's files before it updates the `checkpoint`
index file, so a kill mid-save leaves the previous checkpoint as the latest one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import keras
import tensorflow as tf

from tfpilot.atomic import atomic_write_json

__all__ = ["TrainingState", "CheckpointStore"]


class TrainingState:
    """Counters saved with every checkpoint (epoch and the number of batches done in it)."""

    def __init__(self) -> None:
        self.epoch = tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch")
        self.step_in_epoch = tf.Variable(0, dtype=tf.int64, trainable=False, name="step_in_epoch")


class CheckpointStore:
    def __init__(
        self,
        directory: str | Path,
        *,
        model: keras.Model,
        optimizer: keras.optimizers.Optimizer,
        global_step: tf.Variable,
        state: TrainingState,
        max_to_keep: int,
        metrics: Sequence[keras.metrics.Metric] = (),
    ) -> None:
        self.directory = Path(directory)
        # The epoch's running metrics are saved too: a resume in the middle (or at the very end)
        # of an epoch continues them, so that epoch's logged loss covers all of its steps.
        metric_variables = [variable for metric in metrics for variable in metric.variables]
        self.checkpoint = tf.train.Checkpoint(
            model=model,
            optimizer=optimizer,
            global_step=global_step,
            epoch=state.epoch,
            step_in_epoch=state.step_in_epoch,
            **({"train_metrics": metric_variables} if metric_variables else {}),
        )
        self.manager = tf.train.CheckpointManager(self.checkpoint, str(self.directory), max_to_keep=max_to_keep)
        self.best = tf.train.CheckpointManager(
            tf.train.Checkpoint(model=model), str(self.directory / "best"), max_to_keep=1
        )
        self._trainer_state_path = self.directory / "trainer_state.json"

    @property
    def latest(self) -> str | None:
        return self.manager.latest_checkpoint

    def save(self, *, step: int, trainer_state: dict | None = None) -> str:
        # The JSON side file (early-stopping counters, history) goes first: a checkpoint that
        # exists always has state at least as new as itself.
        if trainer_state is not None:
            atomic_write_json(self._trainer_state_path, {"step": step, **trainer_state})
        return self.manager.save(checkpoint_number=step)

    def restore_latest(self) -> tuple[str | None, dict]:
        path = self.manager.latest_checkpoint
        if path is None:
            return None, {}
        self.checkpoint.restore(path).expect_partial()
        state = json.loads(self._trainer_state_path.read_text()) if self._trainer_state_path.exists() else {}
        return path, state

    def restore(self, path: str) -> None:
        self.checkpoint.restore(path).expect_partial()

    def save_best(self, *, step: int) -> None:
        self.best.save(checkpoint_number=step)

    def restore_best(self) -> bool:
        if self.best.latest_checkpoint is None:
            return False
        tf.train.Checkpoint(model=self.checkpoint.model).restore(self.best.latest_checkpoint).expect_partial()
        return True
