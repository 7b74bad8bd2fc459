"""Preemption: SIGTERM makes every worker checkpoint and exit cleanly; rerunning with --resume continues.

Multi-worker runs use tf.distribute.experimental.PreemptionCheckpointHandler: a SIGTERM on any
worker is shared through the coordination service, all workers agree on the step at which to
save, save together (the save is collective) and exit. Single-process runs catch SIGTERM
themselves, finish the compiled call in flight, save and raise `Preempted`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

import tensorflow as tf

from tfpilot.errors import TrainError

__all__ = ["Preempted", "PreemptionWatcher", "PREEMPTED_EXIT_CODE"]

# Conventional "restart me" code (what PreemptionCheckpointHandler uses off Google Cloud).
PREEMPTED_EXIT_CODE = 42


class Preempted(TrainError):
    """Training saved a checkpoint and stopped because the process was asked to terminate."""

    exit_code = PREEMPTED_EXIT_CODE


class PreemptionWatcher:
    def __init__(
        self, *, strategy: tf.distribute.Strategy, manager: tf.train.CheckpointManager, multi_worker: bool
    ) -> None:
        self.handler = None
        self.requested = False
        self._previous = None
        if multi_worker:
            config = tf.distribute.experimental.TerminationConfig(exit_fn=self._exit, grace_period=0)
            self.handler = tf.distribute.experimental.PreemptionCheckpointHandler(
                strategy.cluster_resolver, manager, termination_config=config
            )
        elif threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum, frame) -> None:
        # Only set a flag: the compiled call in flight finishes, then the loop saves and stops.
        self.requested = True

    def _exit(self) -> None:
        raise Preempted("SIGTERM received: all workers saved a checkpoint and stopped; rerun with --resume to continue")

    def check(self, save: Callable[[], None]) -> None:
        """Call between compiled calls. Saves and raises Preempted when termination was requested."""
        if self.handler is not None:
            self.handler.save_checkpoint_if_preempted()
            return
        if self.requested:
            save()
            raise Preempted("SIGTERM received: saved a checkpoint and stopped; rerun with --resume to continue")

    def close(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)
            self._previous = None
