"""Runners: how a window of training steps is executed (the middle layer, as in Orbit).

The Trainer owns everything between calls (epochs, logs, checkpoints, early stopping, the NaN
policy, resume) and asks its runner to run up to N steps. Two runners share StepFunctions' loss,
metrics, guard and bookkeeping variables:

* CompiledRunner: the default strategy, MirroredStrategy and MultiWorkerMirroredStrategy. One
  tf.function call runs up to N synchronous steps over a distributed iterator and stops right
  after a non-finite step, so the host knows exactly which batch it was.
* CoordinatorRunner (ps.py): ParameterServerStrategy. N closures are scheduled on the workers
  through a ClusterCoordinator and joined; updates are asynchronous, so a non-finite step is
  counted (never applied) but cannot be tied to one batch.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from tfpilot.data.pipeline import Pipeline
from tfpilot.errors import TrainError
from tfpilot.train.sharding import replica_slices
from tfpilot.train.step import UNLOCATED, StepFunctions
from tfpilot.train.topology import Topology

__all__ = ["CompiledRunner", "Execution", "Runner"]


@dataclasses.dataclass(frozen=True)
class Execution:
    """What one runner call did."""

    steps_run: int
    # Steps of this call whose loss or gradient was not finite (their updates were not applied).
    nonfinite: int
    global_step: int
    # True when the non-finite step is the last one run (the compiled loop stops there), so its
    # batch is known and can be replayed; False under asynchronous parameter servers.
    located: bool


class Runner(abc.ABC):
    """Runs training steps for the Trainer; evaluation that needs the strategy lives here too."""

    # Steps one call may run when no log, checkpoint or hook boundary comes first.
    steps_per_execution: int = 1
    # Whether a resume can continue in the middle of an epoch at the exact batch it stopped at.
    resumes_within_epoch: bool = True

    def __init__(self, *, steps: StepFunctions, pipeline: Pipeline, topology: Topology) -> None:
        self.steps = steps
        self.pipeline = pipeline
        self.topology = topology
        self._local_call: Callable[[tf.Tensor], tf.Tensor] | None = None

    @abc.abstractmethod
    def begin_epoch(self, epoch: int, *, skip_batches: int) -> None:
        """Prepare the epoch's input, `skip_batches` batches in (a resumed or rolled-back epoch)."""

    @abc.abstractmethod
    def run(self, max_steps: int) -> Execution:
        """Run at most `max_steps` steps of the current epoch."""

    @abc.abstractmethod
    def evaluate(self, split: str) -> dict[str, float]:
        """Loss and metrics of a split, as the head names them."""

    @abc.abstractmethod
    def gradients(self, features: tf.Tensor, labels: tf.Tensor) -> list[tf.Tensor]:
        """The global gradient of one batch, never applied (histograms)."""

    def local_logits(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        """Model outputs of a split computed in this process only: no collective, so the chief of a
        multi-worker run can evaluate after the other workers have exited, and the coordinator of
        a parameter-server run reads the variables from the ps tasks."""
        if self._local_call is None:
            model = self.steps.model
            self._local_call = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
        outputs, labels = [], []
        for features, batch_labels in self.pipeline.evaluation(split, batch_size=512):
            outputs.append(self._local_call(features).numpy())
            labels.append(batch_labels.numpy())
        return np.concatenate(outputs), np.concatenate(labels)

    def local_metrics(self, split: str) -> dict[str, float]:
        logits, labels = self.local_logits(split)
        return self.steps.head.evaluate_arrays(labels, logits)


class CompiledRunner(Runner):
    """Synchronous steps in one compiled call (see step.py for the step and its guard)."""

    def __init__(
        self,
        *,
        steps: StepFunctions,
        pipeline: Pipeline,
        topology: Topology,
        strategy: tf.distribute.Strategy,
        steps_per_epoch: int,
        steps_per_execution: int,
        file_sharded: bool,
        min_rows: int,
        skipped_batches: Callable[[int], list[int]],
    ) -> None:
        """`min_rows`: a global batch with fewer rows than this is left out (some replica would get
        none); `skipped_batches(epoch)`: batch indices a rollback found non-finite, left out."""
        super().__init__(steps=steps, pipeline=pipeline, topology=topology)
        self.strategy = strategy
        self.steps_per_epoch = steps_per_epoch
        self.steps_per_execution = steps_per_execution
        self.file_sharded = file_sharded
        self.min_rows = min_rows
        self.skipped_batches = skipped_batches
        self._iterator: Any = None
        self._epoch = 0
        # Batches of the epoch's filtered input consumed so far, and the filter the iterator was
        # built with: a replay rebuilds exactly the same input at the same place.
        self._position = 0
        self._skipped_at_begin: list[int] = []

    # ------------------------------------------------------------------ input
    def _distribute(self, make, *, with_global_size: bool, min_rows: int = 0):
        """Single device: the global batches as they are. Distributed: every input pipeline reads
        the same global batches and keeps its replicas' slices (sharding.py), so every worker steps
        the same number of times on the examples one device would see."""
        if not self.topology.distributed:
            return make()
        replicas = self.topology.replicas
        return self.strategy.distribute_datasets_from_function(
            lambda ctx: replica_slices(
                make(), num_replicas=replicas, input_context=ctx, with_global_size=with_global_size, min_rows=min_rows
            )
        )

    def _skip_filter(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
        """Leave out global batches that a rollback already found non-finite (every worker sees the
        same global batches, so they all leave out the same ones)."""
        skipped = self._skipped_at_begin
        if not skipped:
            return dataset
        bad = tf.constant(skipped, tf.int64)
        return (
            dataset.enumerate()
            .filter(lambda index, batch: tf.logical_not(tf.reduce_any(tf.equal(index, bad))))
            .map(lambda index, batch: batch)
        )

    def train_dataset(self, epoch: int, skip_batches: int):
        if self.file_sharded:
            return self._file_sharded_dataset(epoch, skip_batches)

        def make():
            dataset = self._skip_filter(self.pipeline.train(epoch=epoch))
            return dataset.skip(skip_batches) if skip_batches else dataset

        return self._distribute(make, with_global_size=True, min_rows=self.min_rows)

    def _file_sharded_dataset(self, epoch: int, skip_batches: int):
        """Per worker: its own shards, full per-replica batches, repeated to steps_per_epoch."""
        rows = tf.constant(self.pipeline.batch_size, tf.int64)

        def per_worker(context: tf.distribute.InputContext) -> tf.data.Dataset:
            batches = self.pipeline.train(epoch=epoch, input_context=context, drop_remainder=True)
            dataset = self._skip_filter(batches.repeat().take(self.steps_per_epoch))
            dataset = dataset.skip(skip_batches) if skip_batches else dataset
            return dataset.map(lambda features, labels: (features, labels, rows))

        return self.strategy.distribute_datasets_from_function(per_worker)

    # ------------------------------------------------------------------ steps
    def begin_epoch(self, epoch: int, *, skip_batches: int) -> None:
        self._epoch, self._position = epoch, skip_batches
        self._skipped_at_begin = sorted(self.skipped_batches(epoch))
        self._iterator = iter(self.train_dataset(epoch, skip_batches))

    def _call(self, max_steps: int, *, locate: bool = False) -> tuple[int, int, int]:
        # The only host sync per compiled call: [steps run, non-finite, global step].
        function = self.steps.locating_train_function if locate else self.steps.train_function
        ran, bad, global_step = (int(v) for v in function(self._iterator, tf.constant(max_steps, tf.int64)).numpy())
        return ran, bad, global_step

    def run(self, max_steps: int) -> Execution:
        start = self._position
        ran, bad, global_step = self._call(max_steps)
        if bad == UNLOCATED:
            # Some step's gradient was not finite, and the call is back at its start state (see
            # StepFunctions.train_function): run the same batches again checking every gradient.
            # Whatever that run finds is the result, as if the call had checked every step.
            self._iterator = iter(self.train_dataset(self._epoch, start))
            ran, bad, global_step = self._call(ran, locate=True)
            if not bad:
                # Checking every step found nothing: the deferred check cannot tell this model's
                # good calls from bad ones, so every step is checked from now on.
                self.steps.defer_gradient_check = False
        self._position += ran
        if bad and self.steps.restores_call_on_nonfinite:
            global_step = self._replay_good_steps(start=start, good=ran - 1)
        return Execution(steps_run=ran, nonfinite=bad, global_step=global_step, located=True)

    def _replay_good_steps(self, *, start: int, good: int) -> int:
        """The call restored the state it started from (see StepFunctions._single_step): run its
        `good` steps again on the same batches, pass over the bad one, count it as a step (as the
        step that skips a bad update does) and leave the iterator after it. Returns the global
        step. The replay is deterministic (same batches, same state, same RNG state) except on
        kernels that are not; a step that turns non-finite only in the replay raises."""
        self._iterator = iter(self.train_dataset(self._epoch, start))
        if good:
            ran, bad, _ = self._call(good)
            if bad or ran != good:
                raise TrainError(
                    f"replaying {good} good step(s) before a non-finite step gave a different result (step {ran} "
                    "non-finite); the model or its input is not deterministic; set train.steps_per_execution: 1 "
                    "to guard each step without replays"
                )
        next(self._iterator)  # the bad batch: never applied
        return int(self.steps.global_step.assign_add(1).numpy())

    def evaluate(self, split: str) -> dict[str, float]:
        self.steps.reset_eval_metrics()
        # Every example is evaluated once; empty slices are harmless here (no training-mode layers).
        dataset = self._distribute(lambda: self.pipeline.evaluation(split), with_global_size=False)
        self.steps.eval_function(dataset)
        return self.steps.eval_logs()

    def gradients(self, features: tf.Tensor, labels: tf.Tensor) -> list[tf.Tensor]:
        # A collective (strategy.reduce): every worker computes them on the same batch.
        return self.steps.gradient_function(features, labels)
