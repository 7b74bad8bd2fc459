"""The outer training loop: epochs, evaluation, checkpoints, summaries, early stopping, resume.

Layers (Orbit style): StepFunctions owns the step (loss, metrics, guard, bookkeeping variables); a
runner runs windows of steps (runner.py: one compiled call under the default, mirrored and
multi-worker strategies; ps.py: closures scheduled by a ClusterCoordinator under parameter
servers); the Trainer owns everything that happens between runner calls, the same for every
strategy; the Topology (replicas, workers, chief) is computed once; hooks observe without
changing behaviour.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tfpilot.atomic import atomic_write_json
from tfpilot.config.schema import RunConfig
from tfpilot.data.pipeline import Pipeline
from tfpilot.errors import TrainError
from tfpilot.findings import Finding, Severity
from tfpilot.models import build_model
from tfpilot.models.logits import SOFTMAX_REMOVED_ATTRIBUTE, strip_final_softmax
from tfpilot.rundir import RunDir
from tfpilot.train.autotune import choose_step_settings, tuned_finding
from tfpilot.train.callbacks import HookList, TrainHook
from tfpilot.train.checkpoint import CheckpointStore, TrainingState
from tfpilot.train.devices import nvidia_devices, unusable_gpu_finding
from tfpilot.train.early_stopping import EarlyStopping
from tfpilot.train.guard import NanGuard, replay_with_check_numerics
from tfpilot.train.heads import Head, head_for
from tfpilot.train.losses import class_weights
from tfpilot.train.optim import build_optimizer
from tfpilot.train.overfitting import overfitting_findings
from tfpilot.train.precision import precision_policy, wrap_for_mixed_precision
from tfpilot.train.preemption import PreemptionWatcher
from tfpilot.train.runner import CompiledRunner, Execution, Runner
from tfpilot.train.sharding import usable_batches
from tfpilot.train.step import StepFunctions
from tfpilot.train.strategy import make_strategy, uses_parameter_server
from tfpilot.train.summaries import SummaryWriters
from tfpilot.train.topology import Topology

__all__ = ["Trainer", "TrainResult", "seed_everything", "load_history"]


def seed_everything(seed: int, *, deterministic: bool) -> None:
    keras.utils.set_random_seed(seed)
    if deterministic:
        tf.config.experimental.enable_op_determinism()


@dataclasses.dataclass(frozen=True)
class EpochPlan:
    """How many global batches an epoch is, what it leaves out and why (findings)."""

    batches: int
    dropped_examples: int
    file_sharded: bool
    findings: list[Finding]


def plan_epoch(pipeline: Pipeline, topology: Topology, *, location: str) -> EpochPlan:
    """Every replica must get rows each step, and every worker must step the same number of
    full global batches (else one waits in a collective for ever): this decides the epoch."""
    findings: list[Finding] = []
    replicas = topology.replicas
    train_examples = pipeline.num_examples("train")
    batches, dropped = usable_batches(train_examples, batch_size=pipeline.batch_size, num_replicas=replicas)
    if dropped:
        findings.append(
            Finding(
                code="TRAIN-REMAINDER-DROPPED",
                severity=Severity.INFO,
                title="Last partial batch left out",
                message=(
                    f"{dropped} training example(s) of {train_examples} left out "
                    f"each epoch: the last global batch is smaller than the {replicas} replicas, so some "
                    "replica would get no rows"
                ),
                location=location,
                evidence={"dropped": dropped, "replicas": replicas},
                fix="change train.batch_size so the training split is not 1 example past a multiple of it",
            )
        )
    # Streamed shards under multi-worker: each worker reads its own shards (sharding by file),
    # so workers hold different numbers of examples; every worker repeats its shards and steps
    # the same number of full global batches. (Parameter-server workers shard their own input; see ps.py.)
    file_sharded = bool(pipeline.streams and topology.multi_worker and not topology.parameter_server)
    if file_sharded:
        batches = max(1, train_examples // pipeline.batch_size)
        dropped = 0
        findings.append(
            Finding(
                code="TRAIN-SHARDED-BY-FILE",
                severity=Severity.INFO,
                title="Each worker reads its own shards",
                message=(
                    f"streamed shards are sharded by file: every worker reads only its share of the "
                    f"{len(pipeline.shards('train'))} training shards and an epoch is {batches} "
                    f"full global batches of {pipeline.batch_size}; a worker whose shards hold fewer examples "
                    "starts over on them within the epoch"
                ),
                location=location,
                evidence={"shards": len(pipeline.shards("train")), "steps_per_epoch": batches},
                fix="write shards of equal size (`tfpilot data convert` does) so every worker sees each example once",
            )
        )
    return EpochPlan(batches=batches, dropped_examples=dropped, file_sharded=file_sharded, findings=findings)


@dataclasses.dataclass
class TrainResult:
    history: list[dict[str, float]]
    findings: list[Finding]
    stopped_early: bool
    best_epoch: int
    epochs_run: int
    global_step: int


class Trainer:
    """Train `config.model` on `pipeline` and write the run directory's training artifacts."""

    def __init__(
        self,
        config: RunConfig,
        *,
        pipeline: Pipeline,
        run: RunDir | None = None,
        model: keras.Model | None = None,
        hooks: list[TrainHook] | None = None,
    ) -> None:
        """Built in the order the parts depend on one another; each phase is one method below.
        `model` replaces the one `config.model` describes (tests, and `tfpilot train` resuming)."""
        self.config = config
        self.pipeline = pipeline
        self.hooks = HookList(hooks)
        self.findings: list[Finding] = []
        self._place(run)
        self._plan()
        # The task's head, with train.loss / train.metrics (checked against the task it trains here).
        self.head, weights = self._config_head()
        with self.strategy.scope():
            self._build_model_and_optimizer(model)
            self.steps = self._step_functions(weights)
            self.state = TrainingState()
        self._choose_step_settings()
        self.guard = NanGuard(
            policy=config.train.nan_policy.value, max_retries=config.train.nan_max_retries, location=str(self.run.root)
        )
        self.runner = self._make_runner()
        self.steps_per_execution = self.runner.steps_per_execution
        self._artifacts()

    # ------------------------------------------------------------------ construction phases
    def _place(self, run: RunDir | None) -> None:
        """Strategy, topology, seeds and the run directory this process writes."""
        train = self.config.train
        if uses_parameter_server(train.strategy):
            from tfpilot.train.ps import check_parameter_server_config

            check_parameter_server_config(self.config)  # before connecting to the cluster
        seed_everything(train.seed, deterministic=train.deterministic)
        self.strategy = make_strategy(train.strategy)
        self.topology = Topology.of(self.strategy)
        self.chief = self.topology.chief
        run = run or RunDir.at(self.config.run_path)
        # Non-chief workers write to a throwaway directory so they never race the chief's files.
        # `tfpilot launch --worker-dir` names the directory so its checkpoints can be inspected.
        worker_dir = os.environ.get("TFPILOT_WORKER_DIR")
        self.run = run if self.chief else RunDir.at(worker_dir or tempfile.mkdtemp(prefix="tfpilot-worker-"))
        gpu = unusable_gpu_finding(
            devices=nvidia_devices(),
            visible_gpus=len(tf.config.list_physical_devices("GPU")),
            built_with_cuda=tf.test.is_built_with_cuda(),
            location=str(self.run.root),
        )
        if gpu is not None:
            self.findings.append(gpu)

    def _plan(self) -> None:
        """How many steps an epoch is on this topology, and what that leaves out."""
        plan = plan_epoch(self.pipeline, self.topology, location=str(self.run.root))
        self.dropped_examples, self.file_sharded = plan.dropped_examples, plan.file_sharded
        self.findings.extend(plan.findings)
        self.steps_per_epoch = self.config.train.steps_per_epoch or plan.batches

    def _step_functions(self, weights: Any) -> StepFunctions:
        train = self.config.train
        return StepFunctions(
            model=self.model,
            optimizer=self.optimizer,
            strategy=self.strategy,
            clip_norm=train.clip_norm,
            l2=train.l2,
            label_smoothing=train.label_smoothing,
            num_classes=self.pipeline.num_classes,
            head=self.head,
            class_weights=weights,
            batch_size=self.pipeline.batch_size,
        )

    def _choose_step_settings(self) -> None:
        """train.jit_compile and steps_per_execution, fixed or `auto` (timed on whole steps), are set
        on the step functions in one place (autotune.py)."""
        train = self.config.train
        self.step_choice = choose_step_settings(
            self.steps, self.pipeline, train, planned_steps=self.steps_per_epoch * train.epochs
        )
        self.jit_timings = self.step_choice.timings
        if self.step_choice.tuned or self.step_choice.reused_from:
            self.findings.append(tuned_finding(self.step_choice, location=str(self.run.root)))

    def _artifacts(self) -> None:
        """Checkpoints, TensorBoard writers, early stopping and the history the run directory keeps."""
        train = self.config.train
        self.checkpoints = CheckpointStore(
            self.run.checkpoints,
            model=self.model,
            optimizer=self.optimizer,
            global_step=self.steps.global_step,
            state=self.state,
            max_to_keep=train.max_checkpoints,
            metrics=[self.steps.train_loss, *self.steps.train_metrics],
        )
        self.summaries = SummaryWriters(self.run, enabled=self.chief)
        self.early_stopping = EarlyStopping(train.early_stopping)
        self.history: list[dict[str, float]] = []

    def _config_head(self) -> tuple[Head, Any]:
        """The head and class weights `train:` describes (a user's own model brings its own)."""
        pipeline, train = self.pipeline, self.config.train
        head = head_for(
            pipeline.preprocessor,
            num_classes=pipeline.num_classes,
            label_smoothing=train.label_smoothing,
            train=train,
        )
        weights, weight_finding = class_weights(
            train.class_weight,
            labels=pipeline.source.labels[pipeline.indices["train"]],
            class_names=pipeline.class_names,
            head=head,
        )
        if weight_finding is not None:
            self.findings.append(weight_finding)
        return head, weights

    def _make_runner(self) -> Runner:
        if self.topology.parameter_server:
            from tfpilot.train.ps import CoordinatorRunner

            return CoordinatorRunner(
                steps=self.steps,
                pipeline=self.pipeline,
                topology=self.topology,
                strategy=self.strategy,
                steps_per_epoch=self.steps_per_epoch,
            )
        return CompiledRunner(
            steps=self.steps,
            pipeline=self.pipeline,
            topology=self.topology,
            strategy=self.strategy,
            steps_per_epoch=self.steps_per_epoch,
            steps_per_execution=self.step_choice.steps_per_execution,
            file_sharded=self.file_sharded,
            min_rows=self.topology.replicas if self.dropped_examples else 0,
            skipped_batches=lambda epoch: [index for e, index in self.guard.skipped if e == epoch],
        )

    def _build_model_and_optimizer(self, model: keras.Model | None) -> None:
        """Model and optimizer from config; call inside the strategy's scope (shared with the PS loop)."""
        config, pipeline, train = self.config, self.pipeline, self.config.train
        with precision_policy(train.mixed_precision):
            self.model = model or build_model(
                config.model,
                input_shape=pipeline.preprocessor.output_shape(),
                # One logit per class; one in all for binary (sigmoid) and regression.
                num_classes=self.head.output_units,
                vocab_size=pipeline.preprocessor.vocab_size,
            )
        self.model = strip_final_softmax(self.model)
        removed = getattr(self.model, SOFTMAX_REMOVED_ATTRIBUTE, None)
        if removed:
            self.findings.append(
                Finding(
                    code="TRAIN-SOFTMAX-OUTPUT",
                    severity=Severity.INFO,
                    title="Final softmax removed",
                    message=(
                        f"the model ends in a softmax ({removed}); tfpilot trains on logits (cross-entropy "
                        "from_logits) and applies softmax once in the export signatures, so it trained and "
                        "exports the model without it"
                    ),
                    location=str(self.config.model.name),
                    evidence={"layer": removed},
                    fix="end the model with a linear Dense(num_classes) layer (logits) to silence this note",
                )
            )
        self.optimizer = wrap_for_mixed_precision(
            build_optimizer(
                train.optimizer, steps_per_epoch=self.steps_per_epoch, total_steps=self.steps_per_epoch * train.epochs
            ),
            train.mixed_precision,
        )

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, split: str) -> dict[str, float]:
        return self.runner.evaluate(split)

    def _multi_worker(self) -> bool:
        return self.topology.multi_worker

    def predict_classes(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        if self._multi_worker():
            logits, labels = self.runner.local_logits(split)
            return self.head.predicted_classes(logits), labels
        features, labels = self.pipeline.arrays(split)
        logits = self.model.predict(features, batch_size=512, verbose=0)
        return self.head.predicted_classes(logits), labels

    def _split_metrics(self, split: str) -> dict[str, float]:
        # Multi-worker: computed in this process only, so the chief can evaluate after the other
        # workers have exited (and the coordinator of a parameter-server run by itself).
        return self.runner.local_metrics(split) if self._multi_worker() else self.evaluate(split)

    def final_metrics(self) -> dict[str, Any]:
        metrics: dict[str, Any] = {}
        for split in ("train", "validation", "test"):
            if self.pipeline.num_examples(split) == 0:
                continue
            metrics[split] = {**self._split_metrics(split), "examples": self.pipeline.num_examples(split)}
        if "test" in metrics and self.head.task not in ("regression", "multilabel"):
            predicted, labels = self.predict_classes("test")
            num_classes = self.pipeline.num_classes
            confusion = np.zeros((num_classes, num_classes), dtype=int)
            np.add.at(confusion, (labels, predicted), 1)
            metrics["test"]["confusion_matrix"] = confusion.tolist()
        metrics["class_names"] = self.pipeline.class_names
        return metrics

    # ------------------------------------------------------------------ training
    def _learning_rate(self) -> float:
        return float(keras.ops.convert_to_numpy(self.optimizer.learning_rate))

    def _trainer_state(self) -> dict[str, Any]:
        return {"early_stopping": self.early_stopping.state(), "history": self.history}

    def _save_checkpoint(self) -> None:
        if self.chief or self.topology.multi_worker:
            # Every multi-worker process must take part in the save (it is collective); only the
            # chief's directory is real.
            self.checkpoints.save(step=int(self.steps.global_step.numpy()), trainer_state=self._trainer_state())

    def _handle_nonfinite(self, *, epoch: int, batch_index: int, global_step: int) -> str:
        """Replay the bad batch (first time only), then apply the policy. Returns the action."""
        evidence = None
        if self.guard.evidence is None:
            features, labels = next(iter(self.pipeline.train(epoch=epoch, skip_batches=batch_index).take(1)))
            evidence = replay_with_check_numerics(self.steps, features, labels)
        try:
            action = self.guard.on_nonfinite(
                epoch=epoch, batch_index=batch_index, global_step=global_step, evidence=evidence
            )
        except TrainError:
            self.findings.extend(self.guard.findings)
            raise
        if action == "rolled_back":
            path, state = self.checkpoints.restore_latest()
            if path is None:
                raise TrainError(
                    "train.nan_policy=rollback found no checkpoint to roll back to; this is a bug in tfpilot"
                )
            self.early_stopping.load(state.get("early_stopping", {}))
            restored_epoch = int(self.state.epoch.numpy())
            self.history = [h for h in state.get("history", []) if h["epoch"] < restored_epoch]
        return action

    def _handle_unlocated_nonfinite(self, *, epoch: int, count: int, global_step: int) -> None:
        """Non-finite steps whose batch is unknown (asynchronous parameter servers): they were not
        applied; apply the policy to each (stop, or skip within nan_max_retries)."""
        for _ in range(count):
            try:
                self.guard.on_nonfinite(epoch=epoch, batch_index=-1, global_step=global_step, evidence=None)
            except TrainError:
                self.findings.extend(self.guard.findings)
                raise

    def fit(self, *, resume: bool = False) -> TrainResult:
        train = self.config.train
        initial_epoch, skip = 0, 0
        if resume:
            path, state = self.checkpoints.restore_latest()
            if path is None:
                raise TrainError(
                    f"--resume given but `{self.run.checkpoints}` holds no checkpoint; run without --resume to start fresh",
                    exit_code=2,
                )
            initial_epoch, skip = int(self.state.epoch.numpy()), int(self.state.step_in_epoch.numpy())
            if skip and not self.runner.resumes_within_epoch:
                # The interrupted epoch starts over (its running metrics with it).
                skip = 0
                self.state.step_in_epoch.assign(0)
            self.early_stopping.load(state.get("early_stopping", {}))
            self.history = [h for h in state.get("history", []) if h["epoch"] < initial_epoch]
        elif self.chief and self.run.checkpoints.exists() and any(self.run.checkpoints.iterdir()):
            # A fresh run must not inherit another run's checkpoints (a later --resume would mix them).
            shutil.rmtree(self.run.checkpoints)
            self.checkpoints.manager = tf.train.CheckpointManager(
                self.checkpoints.checkpoint, str(self.run.checkpoints), max_to_keep=train.max_checkpoints
            )
        if train.nan_policy.value == "rollback" and self.checkpoints.latest is None:
            self._save_checkpoint()  # something to roll back to before the first epoch ends
        self.preemption = PreemptionWatcher(
            strategy=self.strategy,
            manager=self.checkpoints.manager,
            # The coordinator of a parameter-server run catches SIGTERM itself (it alone runs the loop).
            multi_worker=self.topology.multi_worker and not self.topology.parameter_server,
        )
        try:
            return self._fit_epochs(initial_epoch=initial_epoch, skip=skip)
        finally:
            self.preemption.close()

    def _fit_epochs(self, *, initial_epoch: int, skip: int) -> TrainResult:
        train = self.config.train
        self.hooks.on_train_begin(
            epochs=train.epochs, steps_per_epoch=self.steps_per_epoch, initial_epoch=initial_epoch, initial_step=skip
        )
        stopped_early = False
        epoch = initial_epoch
        step_in_epoch = skip
        global_step = int(self.steps.global_step.numpy())
        while epoch < train.epochs:
            self.state.epoch.assign(epoch)
            if step_in_epoch == 0:
                # A resumed (or rolled-back) epoch keeps the metrics restored with its checkpoint.
                self.steps.reset_train_metrics()
            self.hooks.on_epoch_begin(epoch=epoch)
            self.runner.begin_epoch(epoch, skip_batches=step_in_epoch)
            last_log_step, last_log_time = global_step, time.perf_counter()
            rolled_back = False
            while step_in_epoch < self.steps_per_epoch:
                self.hooks.before_execution(step=global_step)
                limit = min(
                    self.runner.steps_per_execution,
                    self.steps_per_epoch - step_in_epoch,
                    self._steps_to_boundary(global_step, last_log_step),
                )
                execution: Execution = self.runner.run(limit)
                ran, global_step = execution.steps_run, execution.global_step
                if ran == 0:
                    break
                step_in_epoch += ran
                self.state.step_in_epoch.assign(step_in_epoch)
                self.hooks.after_execution(step=global_step, steps_run=ran)
                if ran > execution.nonfinite:
                    # Steps of this call trained; a located non-finite step is the call's last.
                    self.guard.note_progress()
                if execution.nonfinite and not execution.located:
                    self._handle_unlocated_nonfinite(epoch=epoch, count=execution.nonfinite, global_step=global_step)
                elif execution.nonfinite:
                    action = self._handle_nonfinite(epoch=epoch, batch_index=step_in_epoch - 1, global_step=global_step)
                    if action == "rolled_back":
                        epoch, step_in_epoch = int(self.state.epoch.numpy()), int(self.state.step_in_epoch.numpy())
                        global_step = int(self.steps.global_step.numpy())
                        rolled_back = True
                        break
                self.preemption.check(self._save_checkpoint)
                if global_step - last_log_step >= train.summary_every_steps:
                    now = time.perf_counter()
                    logs = {
                        **self.steps.train_logs(),
                        "learning_rate": self._learning_rate(),
                        "grad_norm": float(self.steps.grad_norm.numpy()),
                        "steps_per_second": (global_step - last_log_step) / max(now - last_log_time, 1e-9),
                    }
                    self.summaries.scalars(self.summaries.train, logs, step=global_step)
                    self.hooks.on_step_logs(step=global_step, logs=logs)
                    last_log_step, last_log_time = global_step, now
                if train.checkpoint_every_steps and global_step % train.checkpoint_every_steps < ran:
                    self._save_checkpoint()
            if rolled_back:
                continue
            should_stop = self._end_epoch(epoch=epoch, global_step=global_step)
            epoch += 1
            step_in_epoch = 0
            if should_stop:
                stopped_early = True
                break
        if self.early_stopping.config is not None and self.early_stopping.config.restore_best:
            self.checkpoints.restore_best()
        self.findings.extend(self.guard.summary_findings())
        self.findings.extend(
            overfitting_findings(self.history, patience=train.overfit_patience, location=str(self.run.history_path))
        )
        result = TrainResult(
            history=self.history,
            findings=self.findings,
            stopped_early=stopped_early,
            best_epoch=self.early_stopping.best_epoch,
            epochs_run=len(self.history),
            global_step=int(self.steps.global_step.numpy()),
        )
        self.summaries.close()
        self.hooks.on_train_end(logs={"epochs_run": result.epochs_run, "stopped_early": stopped_early})
        return result

    def _steps_to_boundary(self, global_step: int, last_log_step: int) -> int:
        """Steps until the next step log, step checkpoint or hook boundary: a call running several
        steps ends exactly there, so logs and checkpoints fall on the same steps whatever
        steps_per_execution is."""
        train = self.config.train
        boundaries = [last_log_step + train.summary_every_steps]
        if train.checkpoint_every_steps:
            boundaries.append((global_step // train.checkpoint_every_steps + 1) * train.checkpoint_every_steps)
        hook_boundary = self.hooks.next_boundary(step=global_step)
        if hook_boundary is not None:
            boundaries.append(hook_boundary)
        return max(1, min(boundaries) - global_step)

    def _end_epoch(self, *, epoch: int, global_step: int) -> bool:
        """Validation, summaries, early stopping and the epoch checkpoint. Returns should_stop."""
        train = self.config.train
        logs = {f"{k}": v for k, v in self.steps.train_logs().items()}
        if self.pipeline.num_examples("validation"):
            logs.update({f"val_{k}": v for k, v in self.evaluate("validation").items()})
            self.summaries.scalars(
                self.summaries.validation, {k[4:]: v for k, v in logs.items() if k.startswith("val_")}, step=global_step
            )
        logs["learning_rate"] = self._learning_rate()
        logs["grad_norm"] = float(self.steps.grad_norm.numpy())
        self.summaries.scalars(
            self.summaries.train,
            {f"epoch_{name}": value for name, value in self.steps.train_logs().items()},
            step=global_step,
        )
        if train.histogram_every_epochs and (epoch + 1) % train.histogram_every_epochs == 0:
            # The gradients are a collective (strategy.reduce): every worker computes them on the
            # same batch; only the chief's writer is real (the others' are no-op writers).
            features, labels = next(iter(self.pipeline.train(epoch=epoch)))
            # The model runs in training mode here, which moves BatchNorm statistics and dropout's
            # seed state: put them back, so histograms never change what the model learns.
            layer_state = [(v, tf.convert_to_tensor(v)) for v in self.model.non_trainable_variables]
            gradients = self.runner.gradients(features, labels)
            for variable, value in layer_state:
                variable.assign(value)
            self.summaries.histograms(self.model, gradients, step=global_step)
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
        # The epoch is complete: the next resume starts at the following epoch.
        self.state.epoch.assign(epoch + 1)
        self.state.step_in_epoch.assign(0)
        self._save_checkpoint()
        self._write_history()
        self.hooks.on_epoch_end(epoch=epoch, logs=logs)
        return should_stop

    def _write_history(self) -> None:
        # Other workers write theirs to their own directory: `tfpilot launch --worker-dir` keeps it,
        # so every worker's metrics can be compared with the chief's.
        self.run.root.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.run.history_path, {"epochs": self.history})


def load_history(run: RunDir) -> list[dict[str, Any]]:
    if not run.history_path.exists():
        return []
    return json.loads(Path(run.history_path).read_text()).get("epochs", [])
