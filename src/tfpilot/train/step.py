"""One training step: loss, gradients, NaN check, clipping, update, metrics (the step body).

How steps are run - several per tf.function call, stacked under XLA, the per-call NaN snapshot
and the deferred gradient check - is compiled_loop.py (CompiledLoop, which StepFunctions mixes in),
as Keras keeps `train_step` apart from the function that loops over it.

The NaN guard's in-graph half of the step: finiteness of the loss and of the global gradient
norm is checked in the graph and a non-finite step is not applied (weights stay good); the loop
stops at that step so the host can replay exactly that batch (see guard.py).

Distribution. Each step is two `strategy.run` calls joined by a cross-replica `tf.cond`:

1. forward (replica context): loss, gradients, one all-reduce of [loss, *gradients] so every
   replica sees the global gradient; its norm is logged and used for clipping and the finiteness
   check, so all replicas take the same branch;
2. apply (replica context, only when finite): optimizer.apply on the already-reduced gradients.

Keras 3's optimizer.apply all-reduces (SUM) the gradients it is given when it runs in a replica
context, so passing it our reduced gradients would count them num_replicas times; the optimizer's
own aggregation is switched off instead (Keras 2 called this `experimental_aggregate_gradients=
False`). The cond sits in cross-replica context because optimizer.apply uses merge_call, which
MirroredStrategy refuses inside a control-flow branch built in replica context.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from tfpilot import _tf_private
from tfpilot.train.compiled_loop import MAX_STACK_BYTES, UNLOCATED, CompiledLoop
from tfpilot.train.heads import ClassificationHead, Head

__all__ = [
    "MAX_STACK_BYTES",
    "UNLOCATED",
    "StepFunctions",
    "disable_optimizer_aggregation",
    "is_default_strategy",
    "metric_results",
]

# Bookkeeping variables hold the same value on every replica (computed from all-reduced values).
_SAME = tf.VariableAggregation.ONLY_FIRST_REPLICA


def is_default_strategy(strategy: tf.distribute.Strategy) -> bool:
    """True for the no-op strategy TF uses when none is set (one device, no merge_call)."""
    return type(strategy).__name__ == "_DefaultDistributionStrategy"


def _inner_optimizer(optimizer: keras.optimizers.Optimizer) -> keras.optimizers.Optimizer:
    # LossScaleOptimizer delegates the update to the optimizer it wraps.
    return getattr(optimizer, "inner_optimizer", optimizer)


def disable_optimizer_aggregation(optimizer: keras.optimizers.Optimizer) -> bool:
    """Make optimizer.apply use the gradients it is given as the global gradient.

    Returns False when this Keras version has no such hook, in which case callers must pass
    per-replica (unreduced) gradients and let the optimizer sum them.
    """
    changed = False
    for target in {id(optimizer): optimizer, id(_inner_optimizer(optimizer)): _inner_optimizer(optimizer)}.values():
        changed = _tf_private.disable_all_reduce(target) or changed
    return changed


class StepFunctions(CompiledLoop):
    def __init__(
        self,
        *,
        model: keras.Model,
        optimizer: keras.optimizers.Optimizer,
        strategy: tf.distribute.Strategy,
        clip_norm: float | None,
        l2: float,
        label_smoothing: float,
        num_classes: int,
        steps_per_execution: int = 1,
        jit_compile: bool = False,
        head: Head | None = None,
        class_weights: np.ndarray | None = None,
        batch_size: int | None = None,
        stack_batches: bool = False,
    ) -> None:
        """`batch_size`: rows of a full training batch. `stack_batches`: XLA steps on one device
        run several batches per XLA launch (see _stacked_steps); the tuner (autotune.py) sets it
        by timing, since it is 1.2x faster on an MLP and 10x slower on a small CNN."""
        self.model = model
        self.optimizer = optimizer
        self.strategy = strategy
        self.clip_norm = clip_norm
        self.l2 = l2
        self.label_smoothing = label_smoothing
        self.num_classes = num_classes
        self.steps_per_execution = steps_per_execution
        self.jit_compile = jit_compile
        self.batch_size = batch_size
        self.stack_batches = stack_batches
        # Cleared by the runner when a call's deferred check failed and checking every step found
        # nothing (a weight that is legitimately not finite, or a kernel that is not
        # deterministic): every later call would otherwise run twice.
        self.defer_gradient_check = True
        # The task's loss and metrics (classification by default; see heads.py).
        self.head = head or ClassificationHead(num_classes=num_classes, label_smoothing=label_smoothing)
        # train.class_weight: per-class factors on the training loss only (as Keras fit's class_weight).
        self.class_weights = None if class_weights is None else tf.constant(class_weights, tf.float32)
        self.distributed = not is_default_strategy(strategy)
        with strategy.scope():
            # Metrics are updated inside the step and reset by the outer loop every epoch.
            self.train_loss = keras.metrics.Mean(name="loss")
            self.train_metrics = self.head.make_metrics()
            self.eval_loss = keras.metrics.Mean(name="loss")
            self.eval_metrics = self.head.make_metrics()
            self.global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step", aggregation=_SAME)
            self.grad_norm = tf.Variable(0.0, dtype=tf.float32, trainable=False, name="grad_norm", aggregation=_SAME)
            self.nonfinite_steps = tf.Variable(
                0, dtype=tf.int64, trainable=False, name="nonfinite_steps", aggregation=_SAME
            )
            self.first_nonfinite_step = tf.Variable(
                -1, dtype=tf.int64, trainable=False, name="first_nonfinite_step", aggregation=_SAME
            )
            optimizer.build(model.trainable_variables)
        self.reduced_gradients = disable_optimizer_aggregation(optimizer) if self.distributed else True
        # Keyed by (jit_compile, batches per XLA launch, checks every gradient): see train_function.
        self._train_functions: dict[tuple[bool, int, bool], Callable[..., tf.Tensor]] = {}
        # Keyed by whether every step computes the gradient norm.
        self._stacked_loop_functions: dict[bool, Callable[..., tf.Tensor]] = {}
        self._state_finite_function: Callable[[], tf.Tensor] | None = None
        # Keyed by (jit_compile, computes the gradient norm).
        self._whole_steps: dict[tuple[bool, bool], Callable[..., tf.Tensor]] = {}
        self._eval_function = None
        self._gradient_function = None

    # ------------------------------------------------------------------ loss
    def _per_example_loss(self, labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
        return self.head.per_example_loss(labels, logits)

    def _regularization(self) -> tf.Tensor:
        penalty = tf.constant(0.0)
        if self.l2:
            kernels = [v for v in self.model.trainable_variables if "kernel" in v.path or "embeddings" in v.path]
            penalty += (
                self.l2 * tf.add_n([tf.nn.l2_loss(tf.cast(v, tf.float32)) * 2.0 for v in kernels]) if kernels else 0.0
            )
        if self.model.losses:
            penalty += tf.add_n([tf.cast(loss, tf.float32) for loss in self.model.losses])
        # Regularisation is added once per global step, so each replica contributes its share.
        return penalty / tf.cast(self.strategy.num_replicas_in_sync, tf.float32)

    def _scaled_loss(self, loss: tf.Tensor) -> tf.Tensor:
        # Under mixed precision the optimizer is a LossScaleOptimizer: scale before differentiating
        # so float16 gradients do not underflow; optimizer.apply unscales them.
        scale = getattr(self.optimizer, "scale_loss", None)
        return (
            scale(loss)
            if scale is not None and isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer)
            else loss
        )

    def loss_and_gradients(self, features, labels, global_batch_size=None, *, training: bool = True):
        """`global_batch_size`: rows in the whole global batch this replica's slice belongs to; the
        slices of a short last batch differ in size, so the per-replica mean would weight them wrongly."""
        with tf.GradientTape() as tape:
            logits = self.model(features, training=training)
            per_example = self._per_example_loss(labels, logits)
            if training and self.class_weights is not None:
                per_example = per_example * tf.gather(self.class_weights, tf.cast(labels, tf.int32))
            if global_batch_size is None:
                data_loss = tf.nn.compute_average_loss(per_example)
            else:
                data_loss = tf.reduce_sum(per_example) / tf.cast(global_batch_size, tf.float32)
            loss = data_loss + self._regularization()
            scaled = self._scaled_loss(loss)
        gradients = tape.gradient(scaled, self.model.trainable_variables)
        gradients = [
            tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
            for g, v in zip(gradients, self.model.trainable_variables, strict=False)
        ]
        return loss, logits, per_example, gradients

    def _forward(self, features, labels, global_batch_size=None):
        # On one device the whole step is one XLA cluster (see _whole_step); distributed steps
        # compile only the forward and backward pass (all-reduce and merge_call stay outside).
        if self.jit_compile and self.distributed:
            if not hasattr(self, "_jit_forward"):
                self._jit_forward = tf.function(self.loss_and_gradients, jit_compile=True, reduce_retracing=True)
            return self._jit_forward(features, labels, global_batch_size)
        return self.loss_and_gradients(features, labels, global_batch_size)

    def _unscaled_norm(self, gradients) -> tf.Tensor:
        norm = tf.linalg.global_norm([tf.cast(g, tf.float32) for g in gradients])
        if isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer):
            norm = norm / tf.cast(self.optimizer.dynamic_scale, tf.float32)
        return norm

    def _finite(self, loss, norm):
        """Whether the step is applied (and counts as finite for the NaN guard).

        Under loss scaling an overflowing float16 gradient (finite loss, inf/NaN norm) is routine:
        LossScaleOptimizer.apply skips the update and halves the scale, so it must still be called
        and the NaN guard must not fire. Once the scale has dropped below 1, a non-finite gradient
        is no longer an overflow but a real numerical problem, and the guard takes over."""
        finite_loss = tf.math.is_finite(loss)
        finite = tf.logical_and(finite_loss, tf.math.is_finite(norm))
        if not isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer):
            return finite
        overflow = tf.logical_and(finite_loss, self.optimizer.dynamic_scale >= 1.0)
        return tf.logical_or(finite, overflow)

    def _clip(self, gradients, norm):
        if not self.clip_norm:
            return gradients
        # Same factor as tf.clip_by_global_norm, computed from the (unscaled) global norm.
        factor = tf.minimum(1.0, self.clip_norm / tf.maximum(norm, 1e-12))
        return [g * tf.cast(factor, g.dtype) for g in gradients]

    def _update_metrics(self, labels, logits, per_example) -> None:
        # Metrics see the per-example loss so the epoch mean is exact even with a short last batch.
        self.train_loss.update_state(per_example)
        self.head.update_metrics(self.train_metrics, labels, logits)

    # ------------------------------------------------------------------ one step, no distribution
    def _single_step(self, features, labels, *, with_norm: bool = True):
        """The whole step in one replica function (default strategy: no merge_call).

        The update is applied unconditionally and the guard is per call (the distributed step
        keeps a tf.cond per step, see _distributed_step).

        A branch around optimizer.apply keeps XLA from fusing the update into the gradient
        computation, and undoing a bad step per step (snapshot every variable, select after) costs
        a copy of the whole model and optimizer state every step. Measured on MLP 784-256-256-10,
        batch 128, 2 CPU cores, steps/s relative to the same step without guard or norm: a
        tf.cond 0.73, per-step snapshot and select 0.89-0.93, the global norm 0.85-0.87, a sum of
        |g| 0.97-0.98. So the call snapshots the state once (train_function), the loop stops at a
        non-finite step, the call restores its start state, and the runner replays the good steps
        of that call (CompiledRunner.run): the bad update never stays in the weights, BatchNorm
        statistics or optimizer slots, and the good steps cost nothing extra. Steps whose norm is
        not logged check only their loss; the gradients' finiteness is checked once per call on the
        state they were applied to (see _defers_gradient_check).

        Without XLA the same holds: the cond cost ~2% of a small CNN's step (2 CPU cores).

        `with_norm=False` (without clipping, for steps whose norm is not logged): see
        local_forward."""
        gradients, norm, finite, logits, per_example = self.local_forward(features, labels, with_norm=with_norm)
        if self.restores_call_on_nonfinite:
            self.apply_update(gradients, labels, logits, per_example)
            return norm, finite

        def apply():
            self.apply_update(gradients, labels, logits, per_example)
            return tf.constant(True)

        tf.cond(finite, apply, lambda: tf.constant(False))
        return norm, finite

    def state_variables(self) -> list[tf.Variable]:
        """Everything a step writes apart from the bookkeeping counters: weights and layer state
        (BatchNorm statistics, dropout seeds), optimizer slots and iterations, training metrics."""
        variables: dict[int, tf.Variable] = {}
        metrics = [self.train_loss, *self.train_metrics]
        for variable in (
            *self.model.variables,
            *self.optimizer.variables,
            *(v for metric in metrics for v in metric.variables),
        ):
            variables[id(variable)] = variable
        return list(variables.values())

    # ------------------------------------------------------------------ one step, distributed
    def _replica_forward(self, features, labels, global_batch_size):
        loss, logits, per_example, gradients = self._forward(features, labels, global_batch_size)
        replica = tf.distribute.get_replica_context()
        reduced = replica.all_reduce(tf.distribute.ReduceOp.SUM, [loss, *gradients])
        loss_total, global_gradients = reduced[0], reduced[1:]
        norm = self._unscaled_norm(global_gradients)
        finite = self._finite(loss_total, norm)
        # Without the aggregation hook the optimizer sums what it gets: hand it the local share.
        to_apply = global_gradients if self.reduced_gradients else gradients
        return self._clip(to_apply, norm), norm, finite, logits, per_example

    def local_forward(self, features, labels, *, with_norm: bool = True):
        """One replica's batch taken as the whole step, without an all-reduce (one device, and the
        asynchronous parameter-server step of ps.py): loss, gradients, their norm, finiteness,
        clipping.

        `with_norm=False` without clipping (see _defers_gradient_check): the norm is only logged,
        so it is not computed (None), and only the loss is checked here. A non-finite gradient
        passes into the weights or optimizer slots it updates (NaN and Inf propagate through
        every optimizer's update), where train_function finds it once per call: on MLP
        784-256-256-10 the sum of squares costs ~13% of a step under XLA, a sum of |g| per step
        ~3%, one check of the state per call of 64 steps well under 1%."""
        loss, logits, per_example, gradients = self.loss_and_gradients(features, labels)
        if with_norm or self.clip_norm:
            norm = self._unscaled_norm(gradients)
            return self._clip(gradients, norm), norm, self._finite(loss, norm), logits, per_example
        return gradients, None, tf.math.is_finite(loss), logits, per_example

    def apply_update(self, gradients, labels, logits, per_example):
        """Apply already reduced (and clipped) gradients and update the training metrics (replica context)."""
        self.optimizer.apply(gradients, self.model.trainable_variables)
        self._update_metrics(labels, logits, per_example)

    def _local(self, value):
        # Every replica holds the same value (it was computed from all-reduced tensors).
        return self.strategy.experimental_local_results(value)[0]

    def _distributed_step(self, features, labels, global_batch_size):
        gradients, norm, finite, logits, per_example = self.strategy.run(
            self._replica_forward, args=(features, labels, global_batch_size)
        )
        norm, finite = self._local(norm), self._local(finite)

        def apply():
            self.strategy.run(self.apply_update, args=(gradients, labels, logits, per_example))
            return tf.constant(True)

        tf.cond(finite, apply, lambda: tf.constant(False))
        return norm, finite

    def _recorded_single_step(self, features, labels, with_norm=True):
        norm, finite = self._single_step(features, labels, with_norm=with_norm)
        self.record(norm, finite)
        return finite

    def _whole_step(self, *, with_norm: bool = True):
        """One step with its bookkeeping, on the default strategy: forward, backward, NaN guard,
        clipping, optimizer update, metrics and counters. Under `jit_compile` it is a single XLA
        cluster, as Keras fit compiles its train step: compiling only the forward and backward pass
        leaves the optimizer update and the guard as dozens of small ops run one by one by the
        executor, which cost more than the matmuls on a small model.

        `with_norm=False`: the same step without the gradient norm (see _single_step), for the
        steps of a call whose norm nobody reads."""
        key = (self.jit_compile, with_norm)
        function = self._whole_steps.get(key)
        if function is None:
            function = tf.function(
                functools.partial(self._recorded_single_step, with_norm=with_norm),
                jit_compile=self.jit_compile,
                reduce_retracing=True,
            )
            self._whole_steps[key] = function
        return function

    def record(self, norm, finite):
        """Bookkeeping after a step (cross-replica context): step counter, norm (None: not
        computed for this step, the last one stays), first bad step."""
        if norm is not None:
            self.grad_norm.assign(norm)
        step = self.global_step.assign_add(1)
        first_bad = tf.logical_and(tf.logical_not(finite), self.first_nonfinite_step < 0)
        self.first_nonfinite_step.assign(tf.where(first_bad, step, self.first_nonfinite_step))
        self.nonfinite_steps.assign_add(tf.cast(tf.logical_not(finite), tf.int64))
        return step

    def _replica_eval(self, features, labels):
        logits = self.model(features, training=False)
        self.eval_loss.update_state(self._per_example_loss(labels, logits))
        self.head.update_metrics(self.eval_metrics, labels, logits)

    def _replica_gradients(self, features, labels):
        _, _, _, gradients = self.loss_and_gradients(features, labels)
        return gradients

    def reset_train_metrics(self) -> None:
        for metric in (self.train_loss, *self.train_metrics):
            metric.reset_state()

    def reset_eval_metrics(self) -> None:
        for metric in (self.eval_loss, *self.eval_metrics):
            metric.reset_state()

    def train_logs(self) -> dict[str, float]:
        return {"loss": float(self.train_loss.result()), **metric_results(self.train_metrics)}

    def eval_logs(self) -> dict[str, float]:
        return {"loss": float(self.eval_loss.result()), **metric_results(self.eval_metrics)}


def metric_results(metrics) -> dict[str, float]:
    """name -> value; a metric whose result is a dict (Keras' CompileMetrics: one entry per output
    and metric, `cls_auc`) contributes each of its entries under its own name."""
    logs: dict[str, float] = {}
    for metric in metrics:
        value = metric.result()
        if isinstance(value, dict):
            logs.update({name: float(v) for name, v in value.items()})
        else:
            logs[metric.name] = float(value)
    return logs
