"""Asynchronous parameter-server training (`train.strategy: parameter_server`).

Keras 3's `model.fit` does not run under ParameterServerStrategy and the compiled loop of
StepFunctions drives replicas with strategy.run inside one tf.function, so this is a separate loop
in the style of TF's ParameterServerStrategy + ClusterCoordinator tutorial. It runs in the chief
(coordinator) process only; `tfpilot launch --ps M` starts the `ps` tasks (which hold the
variables) and `worker` tasks (which run the scheduled steps) as bare tf.distribute servers.

* Variables (model, optimizer, metrics, counters) are created under strategy.scope(), so they live
  on the ps tasks.
* Each epoch builds a per-worker dataset (coordinator.create_per_worker_dataset; the pipeline
  shards by worker and shuffles with the epoch's seed, and repeats so a worker never runs dry),
  schedules one closure per step and waits with coordinator.join().
* Updates are asynchronous: each worker applies the gradient of its own batch (no all-reduce).
  A non-finite loss or gradient norm is never applied; it is counted in graph and handled after
  the epoch's join.
* Evaluation, summaries, history, checkpoints and metrics are done by the chief alone.
"""

from __future__ import annotations

import copy
import os
import shutil
import time
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tfpilot.config.schema import JitCompile, NanPolicy, RunConfig
from tfpilot.data.pipeline import Pipeline
from tfpilot.errors import ConfigError, TrainError
from tfpilot.findings import Finding, Severity
from tfpilot.rundir import RunDir
from tfpilot.train.callbacks import HookList, TrainHook
from tfpilot.train.checkpoint import CheckpointStore, TrainingState
from tfpilot.train.early_stopping import EarlyStopping
from tfpilot.train.heads import head_for
from tfpilot.train.step import disable_optimizer_aggregation
from tfpilot.train.summaries import SummaryWriters
from tfpilot.train.trainer import Trainer, TrainResult, seed_everything

__all__ = ["ParameterServerTrainer", "parameter_server_strategy"]


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


def _check_supported(config: RunConfig) -> None:
    train = config.train
    unsupported = []
    if train.mixed_precision:
        unsupported.append("mixed_precision: true")
    if train.jit_compile == JitCompile.TRUE:
        unsupported.append("jit_compile: true")
    if train.nan_policy == NanPolicy.ROLLBACK:
        unsupported.append("nan_policy: rollback")
    if unsupported:
        raise ConfigError(
            f"train.strategy: parameter_server does not support {', '.join(unsupported)}; expected mixed_precision: "
            "false, jit_compile: false or auto, nan_policy: stop or skip_batch"
        )


class ParameterServerTrainer(Trainer):
    """The chief's loop under ParameterServerStrategy; same results/artifacts contract as Trainer."""

    def __init__(
        self,
        config: RunConfig,
        *,
        pipeline: Pipeline,
        run: RunDir | None = None,
        model: keras.Model | None = None,
        hooks: list[TrainHook] | None = None,
    ) -> None:
        _check_supported(config)
        self.config = config
        self.pipeline = pipeline
        self.chief = True  # only the chief runs Python code under ParameterServerStrategy
        self.run = run or RunDir.at(config.run_path)
        self.hooks = HookList(hooks)
        self.findings: list[Finding] = []
        self.jit_timings: dict[str, float] = {}
        train = config.train
        seed_everything(train.seed, deterministic=train.deterministic)
        self.strategy = parameter_server_strategy()
        if self.strategy.num_replicas_in_sync > 1:
            # The step applies each replica's own gradient without an in-worker all-reduce.
            raise TrainError(
                f"parameter_server workers have {self.strategy.num_replicas_in_sync} GPUs each; expected one replica per "
                "worker: give each worker one GPU (CUDA_VISIBLE_DEVICES) or use train.strategy: multi_worker",
                exit_code=2,
            )
        self.coordinator = tf.distribute.coordinator.ClusterCoordinator(self.strategy)
        self.steps_per_epoch = train.steps_per_epoch or pipeline.steps_per_epoch()
        self.steps_per_execution = 1
        # The coordinator's step is classification-only; the head still drives evaluation and the report.
        self.head = head_for(
            pipeline.preprocessor, num_classes=pipeline.num_classes, label_smoothing=train.label_smoothing
        )
        configured = [k for k in ("loss", "metrics", "class_weight") if getattr(train, k)]
        if configured:
            raise TrainError(
                f"train.strategy parameter_server does not take train.{', train.'.join(configured)} yet (its step is "
                "softmax cross-entropy and accuracy); use train.strategy: multi_worker (or default)",
                exit_code=2,
            )
        if self.head.task in ("regression", "binary", "multilabel"):
            raise TrainError(
                "train.strategy parameter_server trains softmax classification only; use train.strategy: multi_worker "
                f"(or default) for model.task {self.head.task}",
                exit_code=2,
            )
        with self.strategy.scope():
            # mixed_precision is refused above, so the shared builder adds no policy or loss scaling.
            self._build_model_and_optimizer(model)
            self.optimizer.build(self.model.trainable_variables)
            self.train_loss = keras.metrics.Mean(name="loss")
            self.train_accuracy = keras.metrics.SparseCategoricalAccuracy(name="accuracy")
            self.global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
            self.grad_norm = tf.Variable(0.0, dtype=tf.float32, trainable=False, name="grad_norm")
            self.nonfinite_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="nonfinite_steps")
            self.state = TrainingState()
        # One replica per worker and no synchronous peers: the optimizer's own all-reduce would be
        # an identity through merge_call, which a tf.cond branch in replica context refuses.
        disable_optimizer_aggregation(self.optimizer)
        self.checkpoints = CheckpointStore(
            self.run.checkpoints,
            model=self.model,
            optimizer=self.optimizer,
            global_step=self.global_step,
            state=self.state,
            max_to_keep=train.max_checkpoints,
        )
        self.summaries = SummaryWriters(self.run, enabled=True)
        self.early_stopping = EarlyStopping(train.early_stopping)
        self.history: list[dict[str, float]] = []
        self.skipped_steps = 0
        self._closure = self._build_closure()
        self._predict = tf.function(lambda x: self.model(x, training=False), reduce_retracing=True)

    # ------------------------------------------------------------------ the scheduled step
    def _per_example_loss(self, labels, logits):
        logits = tf.cast(logits, tf.float32)
        smoothing = self.config.train.label_smoothing
        if smoothing:
            one_hot = tf.one_hot(tf.cast(labels, tf.int32), self.pipeline.num_classes)
            return keras.losses.categorical_crossentropy(one_hot, logits, from_logits=True, label_smoothing=smoothing)
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(labels, tf.int32), logits=logits)

    def _build_closure(self):
        train = self.config.train
        variables = self.model.trainable_variables

        def forward(features, labels):
            with tf.GradientTape() as tape:
                logits = self.model(features, training=True)
                per_example = self._per_example_loss(labels, logits)
                # Asynchronous: each worker's update is a whole step, so average over its own batch.
                loss = tf.reduce_mean(per_example)
                if train.l2:
                    kernels = [v for v in variables if "kernel" in v.path or "embeddings" in v.path]
                    if kernels:
                        loss += train.l2 * tf.add_n([tf.nn.l2_loss(v) * 2.0 for v in kernels])
                if self.model.losses:
                    loss += tf.add_n([tf.cast(x, tf.float32) for x in self.model.losses])
            gradients = tape.gradient(loss, variables)
            gradients = [
                tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
                for g, v in zip(gradients, variables, strict=False)
            ]
            norm = tf.linalg.global_norm(gradients)
            finite = tf.logical_and(tf.math.is_finite(loss), tf.math.is_finite(norm))
            return loss, logits, norm, finite, gradients

        def apply(loss, labels, logits, norm, gradients):
            if train.clip_norm:
                gradients, _ = tf.clip_by_global_norm(gradients, train.clip_norm, use_norm=norm)
            self.optimizer.apply(gradients, variables)
            self.train_loss.update_state(loss)
            self.train_accuracy.update_state(labels, logits)
            self.grad_norm.assign(norm)

        @tf.function
        def closure(iterator):
            features, labels = next(iterator)
            loss, logits, norm, finite, gradients = self.strategy.run(forward, args=(features, labels))

            # As in StepFunctions: the cond sits in cross-replica context because optimizer.apply
            # uses merge_call, which is refused inside a branch built in replica context.
            def run_apply():
                self.strategy.run(apply, args=(loss, labels, logits, norm, gradients))
                return tf.constant(0, tf.int64)

            def skip():
                self.nonfinite_steps.assign_add(1)
                return tf.constant(1, tf.int64)

            skipped = tf.cond(finite, run_apply, skip)
            self.global_step.assign_add(1)
            return skipped

        return closure

    def _per_worker_iterator(self, epoch: int):
        # The dataset is built inside a tf.function traced for the workers; a copy with an empty
        # memo keeps that graph's datasets out of the pipeline the chief evaluates with.
        pipeline = copy.copy(self.pipeline)
        pipeline._cached = {}

        def dataset_fn(context):
            # Repeat so a worker whose shard is short never raises OutOfRange mid-epoch; the epoch
            # length is the number of scheduled steps.
            return pipeline.train(epoch=epoch, input_context=context).repeat()

        def per_worker_dataset_fn():
            return self.strategy.distribute_datasets_from_function(dataset_fn)

        return iter(self.coordinator.create_per_worker_dataset(per_worker_dataset_fn))

    # ------------------------------------------------------------------ evaluation on the chief
    def _split_metrics(self, split: str) -> dict[str, float]:
        logits, labels = self._local_logits(split)
        per_example = self._per_example_loss(tf.constant(labels), tf.constant(logits)).numpy()
        return {"loss": float(np.mean(per_example)), "accuracy": float(np.mean(np.argmax(logits, axis=-1) == labels))}

    def _local_logits(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        logits, labels = [], []
        for features, batch_labels in self.pipeline.evaluation(split, batch_size=512):
            logits.append(self._predict(features).numpy())
            labels.append(batch_labels.numpy())
        return np.concatenate(logits), np.concatenate(labels)

    def _multi_worker(self) -> bool:
        return True

    def evaluate(self, split: str) -> dict[str, float]:
        return self._split_metrics(split)

    # ------------------------------------------------------------------ training
    def _save_checkpoint(self) -> None:
        self.checkpoints.save(step=int(self.global_step.numpy()), trainer_state=self._trainer_state())

    def fit(self, *, resume: bool = False) -> TrainResult:
        train = self.config.train
        initial_epoch = 0
        if resume:
            path, state = self.checkpoints.restore_latest()
            if path is None:
                raise TrainError(
                    f"--resume given but `{self.run.checkpoints}` holds no checkpoint; run without --resume to start fresh",
                    exit_code=2,
                )
            # Resume at epoch granularity: a partial epoch is redone (updates are asynchronous anyway).
            initial_epoch = int(self.state.epoch.numpy())
            self.early_stopping.load(state.get("early_stopping", {}))
            self.history = [h for h in state.get("history", []) if h["epoch"] < initial_epoch]
        elif self.run.checkpoints.exists() and any(self.run.checkpoints.iterdir()):
            shutil.rmtree(self.run.checkpoints)
            self.checkpoints.manager = tf.train.CheckpointManager(
                self.checkpoints.checkpoint, str(self.run.checkpoints), max_to_keep=train.max_checkpoints
            )
        self.hooks.on_train_begin(
            epochs=train.epochs, steps_per_epoch=self.steps_per_epoch, initial_epoch=initial_epoch, initial_step=0
        )
        stopped_early = False
        for epoch in range(initial_epoch, train.epochs):
            self.state.epoch.assign(epoch)
            self.train_loss.reset_state()
            self.train_accuracy.reset_state()
            self.hooks.on_epoch_begin(epoch=epoch)
            iterator = self._per_worker_iterator(epoch)
            started = time.perf_counter()
            before = int(self.global_step.numpy())
            self.hooks.before_execution(step=before)
            for _ in range(self.steps_per_epoch):
                self.coordinator.schedule(self._closure, args=(iterator,))
            # join() re-raises the first error of any scheduled step (a worker that failed for good).
            self.coordinator.join()
            global_step = int(self.global_step.numpy())
            self.hooks.after_execution(step=global_step, steps_run=global_step - before)
            self._check_nonfinite(epoch=epoch, global_step=global_step)
            seconds = max(time.perf_counter() - started, 1e-9)
            self.summaries.scalars(
                self.summaries.train, {"steps_per_second": (global_step - before) / seconds}, step=global_step
            )
            if self._end_epoch(epoch=epoch, global_step=global_step):
                stopped_early = True
                break
        if self.early_stopping.config is not None and self.early_stopping.config.restore_best:
            self.checkpoints.restore_best()
        if self.skipped_steps:
            self.findings.append(
                Finding(
                    code="TRAIN-SKIPPED-BATCHES",
                    severity=Severity.WARNING,
                    title="Skipped non-finite steps",
                    message=f"{self.skipped_steps} parameter-server step(s) had a non-finite loss or gradient and were not applied",
                    location=str(self.run.root),
                    evidence={"skipped_steps": self.skipped_steps},
                    fix="lower the learning rate, enable train.clip_norm, or check the data for NaN/inf",
                )
            )
        self.findings.extend(self._overfitting_findings())
        result = TrainResult(
            history=self.history,
            findings=self.findings,
            stopped_early=stopped_early,
            best_epoch=self.early_stopping.best_epoch,
            epochs_run=len(self.history),
            global_step=int(self.global_step.numpy()),
        )
        self.summaries.close()
        self.hooks.on_train_end(logs={"epochs_run": result.epochs_run, "stopped_early": stopped_early})
        return result

    def _check_nonfinite(self, *, epoch: int, global_step: int) -> None:
        """Non-finite steps were not applied (in graph); apply nan_policy once the epoch has joined."""
        total = int(self.nonfinite_steps.numpy())
        new, self.skipped_steps = total - self.skipped_steps, total
        if not new:
            return
        if self.config.train.nan_policy == NanPolicy.STOP or total > self.config.train.nan_max_retries:
            finding = Finding(
                code="TRAIN-NONFINITE",
                severity=Severity.ERROR,
                title="Non-finite loss or gradient",
                message=f"{new} step(s) of epoch {epoch} had a non-finite loss or gradient norm (not applied); stopped at step {global_step}",
                location=str(self.run.root),
                evidence={"epoch": epoch, "nonfinite_steps": total, "global_step": global_step},
                fix="lower the learning rate, enable train.clip_norm, check the data, or set train.nan_policy: skip_batch",
            )
            self.findings.append(finding)
            raise TrainError(finding.message)

    def _end_epoch(self, *, epoch: int, global_step: int) -> bool:
        logs: dict[str, Any] = {
            "loss": float(self.train_loss.result()),
            "accuracy": float(self.train_accuracy.result()),
        }
        if self.pipeline.num_examples("validation"):
            validation = self.evaluate("validation")
            logs.update({f"val_{k}": v for k, v in validation.items()})
            self.summaries.scalars(self.summaries.validation, validation, step=global_step)
        logs["learning_rate"] = self._learning_rate()
        logs["grad_norm"] = float(self.grad_norm.numpy())
        self.summaries.scalars(
            self.summaries.train, {"epoch_loss": logs["loss"], "epoch_accuracy": logs["accuracy"]}, step=global_step
        )
        self.summaries.flush()
        self.history.append({"epoch": epoch, "step": global_step, **logs})
        should_stop = False
        if self.early_stopping.config is not None:
            monitor = self.early_stopping.config.monitor
            if monitor not in logs:
                raise TrainError(
                    f"`train.early_stopping.monitor` is `{monitor}`, which is not logged; expected one of {sorted(logs)}",
                    exit_code=2,
                )
            improved, should_stop = self.early_stopping.update(epoch=epoch, logs=logs)
            if improved and self.early_stopping.config.restore_best:
                self.checkpoints.save_best(step=global_step)
        self.state.epoch.assign(epoch + 1)
        self.state.step_in_epoch.assign(0)
        self._save_checkpoint()
        self._write_history()
        self.hooks.on_epoch_end(epoch=epoch, logs=logs)
        return should_stop
