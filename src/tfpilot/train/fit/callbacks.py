"""tfpilot's additions to `model.fit`, as Keras callbacks beside the user's own.

* GuardCallback: the host half of the NaN guard (the graph half, which applies the policy, is
  guarded_step.py). Every few dozen calls and at each epoch's end it reads the guard, records
  the events through NanGuard (findings, the stop error) and, the first time, says whether the
  batch itself held NaN or replays it with check_numerics to name the op.
* RunDirCallback: history.json and TensorBoard scalars after every epoch and a
  tf.train.CheckpointManager checkpoint of the model, its optimizers and the epoch (so
  `resume=True` continues after a crash), written atomically.

Neither implements on_train_batch_end, so Keras keeps dispatching batch callbacks
asynchronously as it does for model.fit without batch-level callbacks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from tfpilot.atomic import atomic_write_json
from tfpilot.errors import TrainError
from tfpilot.rundir import RunDir
from tfpilot.train.fit.guarded_step import GuardedStep, model_optimizers
from tfpilot.train.guard import NanGuard, nonfinite_inputs, under_check_numerics
from tfpilot.train.summaries import SummaryWriters

__all__ = ["GuardCallback", "RunDirCallback", "replay_train_step"]


def _python_logs(logs: dict[str, Any] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in (logs or {}).items():
        try:
            out[key] = float(keras.ops.convert_to_numpy(value))
        except (TypeError, ValueError):
            continue  # a non-scalar log (a custom train_step may return one) is not a history number
    return out


def _every_variable(model: keras.Model) -> list[Any]:
    seen: dict[int, Any] = {}
    for variable in [*model.variables, *model.metrics_variables]:
        seen.setdefault(id(variable), variable)
    for optimizer in model_optimizers(model):
        for variable in optimizer.variables:
            seen.setdefault(id(variable), variable)
    return list(seen.values())


def replay_train_step(model: keras.Model, train_step: Any, batch: Any) -> dict[str, Any]:
    """Run the model's own train_step on one batch with check_numerics; every variable is put
    back afterwards. Returns what check_numerics named (op, layer, the user's source line)."""
    variables = _every_variable(model)
    saved = [tf.identity(v) for v in variables]
    try:
        evidence, logs = under_check_numerics(lambda: tf.function(train_step)(batch), model=model)
    finally:
        for variable, value in zip(variables, saved, strict=True):
            variable.assign(value)
    return evidence if evidence is not None else {"reproduced": False, "replay_logs": _python_logs(logs)}


class GuardCallback(keras.callbacks.Callback):
    """The host half of the guard. The graph applies the policy itself (guarded_step.py), so the
    host reads the guard only every `read_every` calls and at the end of each epoch: to record
    the events, replay the first bad batch, and raise when the graph halted the run.

    It has no on_train_batch_end on purpose: a callback that has one makes Keras turn every
    batch's logs into Python numbers and stop dispatching batch callbacks asynchronously."""

    def __init__(
        self,
        *,
        step: GuardedStep,
        guard: NanGuard,
        train_step: Any,
        trained_steps: Callable[[], int],
        read_every: int = 32,
    ) -> None:
        """`train_step`: the model's own step (not the guarded one), for the check_numerics replay;
        `trained_steps`: the training steps run so far, the global step events are recorded at."""
        super().__init__()
        self.trained_steps = trained_steps
        self.step = step
        self.guard = guard
        self.train_step = train_step
        self.read_every = max(1, read_every)
        self._calls = 0
        self._epoch = 0
        # Steps-run counter at the start of each epoch: turns a step index into (epoch, batch).
        self._epoch_starts: dict[int, int] = {}
        self._last_bad = -2

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._epoch = epoch
        self._epoch_starts[epoch] = int(self.step.steps.numpy())

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._calls += 1
        if self._calls % self.read_every == 0:
            self._check()

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        # fit's validation: the first hook after the epoch's last training call
        self.step.settle_end_of_data()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.step.settle_end_of_data()
        self._check()

    def _locate(self, index: int) -> tuple[int, int]:
        if index < 0:
            return self._epoch, -1
        epoch = max((e for e, start in self._epoch_starts.items() if start <= index), default=self._epoch)
        return epoch, index - self._epoch_starts.get(epoch, 0)

    def _why_not_kept(self) -> str:
        if self.step.distributed:
            return (
                f"the batch is not kept under {type(self.step.strategy).__name__} (each replica sees a part of it); "
                "train the same data on one device to locate it"
            )
        return (
            "the batch is not kept under XLA (jit_compile) or with composite inputs; "
            "train with jit_compile=False to locate it"
        )

    def _check(self) -> None:
        steps, indices, halted = self.step.read()
        if not indices and not halted:
            return
        evidence = None
        if indices and self.guard.evidence is None:
            kept = self.step.bad_batch.batch()
            if kept is None:
                evidence = {"reproduced": False, "replay": self._why_not_kept()}
            else:
                evidence = nonfinite_inputs(kept) or replay_train_step(self.model, self.train_step, kept)
        global_step = self.trained_steps()
        for index in indices:
            if index < 0 or index != self._last_bad + 1:
                self.guard.note_progress()  # batches trained between this bad one and the last
            self._last_bad = index
            epoch, batch_index = self._locate(index)
            try:
                self.guard.on_nonfinite(
                    epoch=epoch, batch_index=batch_index, global_step=global_step, evidence=evidence
                )
            except TrainError:
                self.model.stop_training = True
                raise
        if halted:
            # The graph halted on an event recorded above; NanGuard raised for it. Reaching here
            # means the two disagree, which must not pass silently.
            self.model.stop_training = True
            raise TrainError("training stopped by the NaN guard (train.nan_policy); see findings.json")


class RunDirCallback(keras.callbacks.Callback):
    """history.json, TensorBoard epoch scalars (and weight histograms when asked) and the epoch
    checkpoint; `history` holds the rows of earlier (resumed) epochs.

    tfpilot's own writers rather than Keras' TensorBoard callback: that one implements
    on_train_batch_end, which makes Keras synchronise on every batch's logs."""

    def __init__(
        self,
        *,
        run: RunDir,
        manager: tf.train.CheckpointManager,
        epoch: tf.Variable,
        history: list[dict[str, Any]],
        histogram_every_epochs: int = 0,
        trained_steps: Callable[[], int],
        checkpoint_every_secs: float = 0.0,
    ) -> None:
        """`checkpoint_every_secs`: an epoch's end writes a checkpoint only when at least this long
        has passed since the last one (0: every epoch); the last epoch is always written."""
        super().__init__()
        self.trained_steps = trained_steps
        self.checkpoint_every_secs = checkpoint_every_secs
        self._last_save = time.monotonic()
        self._unsaved = False  # epochs ended since the last checkpoint
        self.run = run
        self.manager = manager
        self.epoch_variable = epoch
        self.history = history
        self.histogram_every_epochs = histogram_every_epochs
        self.writers = SummaryWriters(run)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        step = self.trained_steps()
        values = _python_logs(logs)
        self.history.append({"epoch": epoch, "step": step, **values})
        self.writers.scalars(
            self.writers.train, {f"epoch_{k}": v for k, v in values.items() if not k.startswith("val_")}, step=epoch
        )
        validation = {f"epoch_{k[4:]}": v for k, v in values.items() if k.startswith("val_")}
        if validation:
            self.writers.scalars(self.writers.validation, validation, step=epoch)
        if self.histogram_every_epochs and (epoch + 1) % self.histogram_every_epochs == 0:
            self.writers.histograms(self.model, None, step=epoch)
        self.writers.flush()
        self.epoch_variable.assign(epoch + 1)
        # The history goes first: a checkpoint that exists always has history at least as new.
        self.run.root.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.run.history_path, {"epochs": self.history})
        self._unsaved = True
        if time.monotonic() - self._last_save >= self.checkpoint_every_secs:
            self._save()

    def _save(self) -> None:
        # A checkpoint costs tens of milliseconds on a small model and most of a second on a large
        # one, every epoch: as much as the training itself in runs of short epochs. Time-based
        # saving (Estimator's save_checkpoints_secs) bounds both the cost and the work a kill loses.
        self.manager.save(checkpoint_number=int(self.epoch_variable.numpy()))
        self._last_save = time.monotonic()
        self._unsaved = False

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._last_save = time.monotonic()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        # The end of training (the last epoch, or an early stop) always leaves a checkpoint of it.
        if self._unsaved:
            self._save()
        self.writers.close()
