"""A rich progress bar as a TrainHook: live loss, metrics and steps/s.

When stdout is not a terminal (CI, nohup, a container log, `tfpilot launch`) a live bar is only
rendered when it stops, so nothing would appear until the process exits; plain lines are
printed instead, one per step log and one per epoch, each flushed as it is written."""

from __future__ import annotations

from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tfpilot.cli.render import console
from tfpilot.train.callbacks import TrainHook

__all__ = ["ProgressHook"]


class ProgressHook(TrainHook):
    def __init__(self) -> None:
        self.progress = Progress(
            TextColumn("[bold]epoch {task.fields[epoch]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[logs]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.task: Any = None
        self.plain = not console.is_terminal
        self.epoch_label = ""
        self.steps_per_epoch = 0
        self.epochs = 0

    def on_train_begin(self, *, epochs, steps_per_epoch, initial_epoch, initial_step):
        self.steps_per_epoch, self.epochs = steps_per_epoch, epochs
        if not self.plain:
            self.progress.start()
        if initial_epoch or initial_step:
            console.print(f"resuming at epoch {initial_epoch + 1}, step {initial_step} of that epoch")

    def on_epoch_begin(self, *, epoch):
        self.epoch_label = f"{epoch + 1}/{self.epochs}"
        if self.plain:
            return
        self.task = self.progress.add_task(
            "train", total=self.steps_per_epoch, epoch=f"{epoch + 1}/{self.epochs}", logs=""
        )
        self._epoch_start_step = None

    def after_execution(self, *, step, steps_run):
        if self.task is not None:
            self.progress.advance(self.task, steps_run)

    def on_step_logs(self, *, step, logs):
        shown = " ".join(f"{_short(k)} {logs[k]:.4f}" for k in ("loss", "accuracy", "mae", "rmse") if k in logs)
        text = f"{shown} lr {logs['learning_rate']:.2e} {logs['steps_per_second']:.0f} steps/s"
        if self.plain:
            self._line(f"epoch {self.epoch_label} step {step} {text}")
        elif self.task is not None:
            self.progress.update(self.task, logs=text)

    def on_epoch_end(self, *, epoch, logs):
        names = ("loss", "accuracy", "mae", "rmse", "val_loss", "val_accuracy", "val_mae", "val_rmse")
        parts = [f"{_short(k)} {logs[k]:.4f}" for k in names if k in logs]
        if self.plain:
            self._line(f"epoch {epoch + 1}/{self.epochs} done {' '.join(parts)}")
        elif self.task is not None:
            self.progress.update(self.task, completed=self.steps_per_epoch, logs=" ".join(parts))

    def _line(self, text: str) -> None:
        console.print(text, highlight=False, soft_wrap=True)
        console.file.flush()

    def on_train_end(self, *, logs):
        if not self.plain:
            self.progress.stop()
        if logs.get("stopped_early"):
            console.print(f"early stopping after {logs['epochs_run']} epochs")


def _short(name: str) -> str:
    # The progress line keeps its historical `acc` / `val_acc` labels.
    return name.replace("accuracy", "acc")
