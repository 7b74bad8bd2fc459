"""Asynchronous parameter-server training (`train.strategy: parameter_server`): the coordinator runner.

Keras 3's `model.fit` does not run under ParameterServerStrategy, and the compiled runner drives
replicas with strategy.run inside one tf.function, so this runner schedules steps in the style of
TF's ParameterServerStrategy + ClusterCoordinator tutorial. The Trainer's loop is the same as
under every other strategy (epochs, step logs, checkpoints, early stopping, the NaN policy,
histograms, preemption); only how steps run differs. It runs in the chief (coordinator) process
only; `tfpilot launch --ps M` starts the `ps` tasks (which hold the variables) and `worker` tasks
(which run the scheduled steps) as bare tf.distribute servers.

* Variables (model, optimizer, metrics, counters) are created under strategy.scope() by
  StepFunctions, so they live on the ps tasks; the loss, metrics and guard are StepFunctions'.
* Each epoch builds a per-worker dataset (coordinator.create_per_worker_dataset; the pipeline
  shards by worker and shuffles with the epoch's seed, and repeats so a worker never runs dry).
  A call schedules one closure per step and waits with coordinator.join(); calls end only at log,
  checkpoint and hook boundaries, so workers run freely in between.
* Updates are asynchronous: each worker applies the gradient of its own batch (no all-reduce).
  A non-finite loss or gradient norm is never applied; it is counted in graph and handed to the
  NaN policy after the join (which batch it was is not known).
"""

from __future__ import annotations

import os

import tensorflow as tf

from tfpilot.config.schema import JitCompile, NanPolicy, RunConfig
from tfpilot.data.pipeline import Pipeline
from tfpilot.errors import ConfigError, TrainError
from tfpilot.train.runner import Execution, Runner
from tfpilot.train.step import StepFunctions
from tfpilot.train.topology import Topology

__all__ = ["CoordinatorRunner", "check_parameter_server_config", "parameter_server_strategy"]


def parameter_server_strategy() -> tf.distribute.ParameterServerStrategy:
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    cluster = resolver.cluster_spec().as_dict()
    if not os.environ.get("TF_CONFIG") or "ps" not in cluster or resolver.task_type != "chief":
        raise TrainError(
            "`train.strategy` is parameter_server but this process is not the chief of a cluster with ps tasks "
            f"(TF_CONFIG task `{resolver.task_type}`, jobs {sorted(cluster)}); start it with "
            "`tfpilot launch --workers N --ps M -- tfpilot train CONFIG`",
            exit_code=2,
        )
    return tf.distribute.ParameterServerStrategy(resolver)


def check_parameter_server_config(config: RunConfig) -> None:
    train = config.train
    unsupported = []
    if train.mixed_precision:
        unsupported.append("mixed_precision: true")
    if train.jit_compile in (JitCompile.TRUE, JitCompile.STACKED):
        unsupported.append(f"jit_compile: {train.jit_compile.value}")
    if train.nan_policy == NanPolicy.ROLLBACK:
        # A rollback replays the epoch from a checkpoint while other workers' updates are in flight.
        unsupported.append("nan_policy: rollback")
    if unsupported:
        raise ConfigError(
            f"train.strategy: parameter_server does not support {', '.join(unsupported)}; expected mixed_precision: "
            "false, jit_compile: false or auto, nan_policy: stop or skip_batch"
        )


class CoordinatorRunner(Runner):
    """Steps scheduled on the workers through a ClusterCoordinator."""

    # Workers shard and repeat their own input: the exact batch an interrupted epoch stopped at
    # does not exist, so a resumed epoch starts over.
    resumes_within_epoch = False

    def __init__(
        self,
        *,
        steps: StepFunctions,
        pipeline: Pipeline,
        topology: Topology,
        strategy: tf.distribute.ParameterServerStrategy,
        steps_per_epoch: int,
    ) -> None:
        super().__init__(steps=steps, pipeline=pipeline, topology=topology)
        if topology.replicas > 1:
            # The step applies each replica's own gradient without an in-worker all-reduce.
            raise TrainError(
                f"parameter_server workers have {topology.replicas} GPUs each; expected one replica per "
                "worker: give each worker one GPU (CUDA_VISIBLE_DEVICES) or use train.strategy: multi_worker",
                exit_code=2,
            )
        self.strategy = strategy
        self.coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        # Join only where the Trainer needs the host (logs, checkpoints, hooks, the epoch's end).
        self.steps_per_execution = steps_per_epoch
        self._iterator = None
        self._closure = self._build_closure()
        self._local_gradients = tf.function(
            lambda features, labels: steps.loss_and_gradients(features, labels)[3], reduce_retracing=True
        )
        self._nonfinite_seen = 0

    def _build_closure(self):
        steps, strategy = self.steps, self.strategy

        @tf.function
        def closure(iterator):
            features, labels = next(iterator)
            gradients, norm, finite, logits, per_example = strategy.run(steps.local_forward, args=(features, labels))

            # As in StepFunctions: the cond sits in cross-replica context because optimizer.apply
            # uses merge_call, which is refused inside a branch built in replica context.
            def apply():
                strategy.run(steps.apply_update, args=(gradients, labels, logits, per_example))
                return tf.constant(True)

            tf.cond(finite, apply, lambda: tf.constant(False))
            steps.record(norm, finite)

        return closure

    def begin_epoch(self, epoch: int, *, skip_batches: int) -> None:
        # The dataset is built inside a tf.function traced for the workers; a copy with an empty
        # memo keeps that graph's datasets out of the pipeline the chief evaluates with.
        pipeline = self.pipeline.with_empty_cache()

        def dataset_fn(context):
            # Repeat so a worker whose shard is short never raises OutOfRange mid-epoch; the epoch
            # length is the number of scheduled steps.
            return pipeline.train(epoch=epoch, input_context=context).repeat()

        def per_worker_dataset_fn():
            return self.strategy.distribute_datasets_from_function(dataset_fn)

        self._iterator = iter(self.coordinator.create_per_worker_dataset(per_worker_dataset_fn))

    def run(self, max_steps: int) -> Execution:
        for _ in range(max_steps):
            self.coordinator.schedule(self._closure, args=(self._iterator,))
        # join() re-raises the first error of any scheduled step (a worker that failed for good).
        self.coordinator.join()
        total = int(self.steps.nonfinite_steps.numpy())
        new, self._nonfinite_seen = total - self._nonfinite_seen, total
        return Execution(
            steps_run=max_steps, nonfinite=new, global_step=int(self.steps.global_step.numpy()), located=False
        )

    def evaluate(self, split: str) -> dict[str, float]:
        # strategy.run is only allowed inside scheduled closures: the chief evaluates by itself.
        return self.local_metrics(split)

    def gradients(self, features: tf.Tensor, labels: tf.Tensor) -> list[tf.Tensor]:
        # Computed in the chief from the variables on the ps tasks.
        return self._local_gradients(features, labels)
