"""The NaN guard around a model's own `train_step`, in the graph.

`tfpilot.fit` runs the model's `train_step` exactly as `model.fit` does (Keras builds the
compiled multi-step function from it); the guard is the only thing added to each step:

* every optimizer the step uses applies its gradients inside a `tf.cond` on their finiteness,
  so a non-finite update never reaches the weights, the optimizer slots or `iterations` (the
  optimizer's own `apply` runs unchanged in the true branch, with whatever gradients the step
  gave it, IndexedSlices included). A LossScaleOptimizer already skips non-finite updates and
  adjusts its scale: it is left alone, and its routine overflow skips are not NaN events; a skip on
  a batch that itself holds NaN/Inf is one (its scale is put back with the rest of the state).
* the state a step changes besides that (BatchNormalization statistics, dropout's seed
  generator, metric totals) is read before the step and put back when the step was bad, so
  after a skipped batch every variable is as before it.
* a step is bad when an update was refused or a float value the step returned (its logs) is
  not finite. Everything about a bad step happens in the bad branch of one `tf.cond`: the state
  is put back, the batch is kept (the first one, for the host's check_numerics replay), the step's
  index goes into a ring the host reads, and the policy is applied *in the graph*: `stop`, or more
  than `max_retries` bad steps in a row, halts training (every later update is refused), so the
  host can read the guard rarely and still stop exactly where the policy says.

Measured cost and why this shape (MLP 784-256-256-10, batch 128, 2 CPU cores, model.fit at
steps_per_execution 1 = 1.0): a per-step copy of every weight and optimizer slot costs 7-11%; a
host read of the guard's counters after every call cost 10% by itself, and a guard that kept the
first batch and recomputed the metrics on every step 13%. So the good path is the update's cond,
one sum per gradient, a read of the small state and one counter increment; the host reads every
few dozen calls and at the end of each epoch.

Multi-optimizer steps (a GAN's two updates): an update is refused on its own gradients, and every
later update of the same step is refused with it; the step counts as bad when any was, and the
small state is put back. Updates applied before the first refused one stay applied (undoing them
would need a copy of the weights every step).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import inspect
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tfpilot import _tf_private
from tfpilot._tf_private import build_compile_state
from tfpilot.train.step import is_default_strategy

__all__ = ["GuardedStep", "model_optimizers"]


def model_optimizers(model: keras.Model) -> list[keras.optimizers.Optimizer]:
    """model.optimizer, the optimizers a custom `compile` stored on the model (a GAN's d_optimizer
    and g_optimizer) and those its layers hold (a forward-forward network trains each layer with
    its own), each once."""
    found: dict[int, keras.optimizers.Optimizer] = {}
    candidates = [getattr(model, "optimizer", None)]
    for layer in _tf_private.flatten_layers(model, include_self=True):
        candidates.extend(vars(layer).values())
    for value in candidates:
        if isinstance(value, keras.optimizers.Optimizer):
            found.setdefault(id(value), value)
    return list(found.values())


def applied_steps(model: keras.Model) -> int:
    """Training steps applied so far: the most iterations of any optimizer the model trains with
    (a GAN's compile() leaves model.optimizer unused and steps d_optimizer and g_optimizer)."""
    counts = [int(keras.ops.convert_to_numpy(optimizer.iterations)) for optimizer in model_optimizers(model)]
    return max(counts, default=0)


def _variable_count(model: keras.Model) -> int:
    """How many variables the model and its compiled metrics hold: the first trace creates the compiled loss
    tracker and metrics (as under model.fit), and the state is read again at the trace after it."""
    return len(model.variables) + len(model.metrics_variables)


def _state_of_trainable_layers(model: keras.Model) -> list[tf.Variable]:
    """Non-trainable variables that a training step may write: those of layers that train
    (BatchNormalization statistics, seed generator states), not those of frozen layers (a frozen
    backbone would make every step copy the whole backbone), plus the model's metric totals."""
    layers = _tf_private.flatten_layers(model, include_self=True)
    frozen = {id(v) for layer in layers if not layer.trainable for v in layer.variables}
    chosen: dict[int, Any] = {}
    for layer in layers:
        if layer.trainable:
            for variable in layer.non_trainable_variables:
                if id(variable) not in frozen:
                    chosen.setdefault(id(variable), variable)
    for variable in model.metrics_variables:
        chosen.setdefault(id(variable), variable)
    for variable in untracked_variables(model):
        chosen.setdefault(id(variable), variable)
    return list(chosen.values())


def untracked_variables(model: keras.Model) -> list[Any]:
    """Variables that layers of the model hold as plain attributes and no `weights` list has: tf.Variables
    (`self.probability = tf.Variable(0.0)`, an adaptive augmenter's state that its model's train_step assigns:
    Keras 3 tracks only its own variables) and untracked non-trainable Keras variables (a stateful RNN's
    `states`, which its forward pass assigns, so a bad batch leaves them NaN for every later batch). A step
    may write them with values computed from a bad batch. Frozen layers' are left out, as their weights are."""
    found: dict[int, Any] = {}
    for layer in _tf_private.flatten_layers(model, include_self=True):
        if not layer.trainable:
            continue
        for value in vars(layer).values():
            values = value if isinstance(value, list | tuple) else [value]
            # an LSTM's states are a pair, possibly nested one level in a list
            values = [inner for item in values for inner in (item if isinstance(item, list | tuple) else [item])]
            for item in values:
                if isinstance(item, tf.Variable) or (isinstance(item, keras.Variable) and not item.trainable):
                    found.setdefault(id(item), item)
    return list(found.values())


@contextlib.contextmanager
def states_kept(model: keras.Model) -> Iterator[None]:
    """The model's untracked state (a stateful RNN's `states`, which every call advances) as it was before the
    block: tfpilot calls the trained model on sample rows, and the user's next predict must find the state that
    training left, as after model.fit."""
    variables = untracked_variables(model)
    saved = [
        tf.identity(variable.value if isinstance(variable, keras.Variable) else variable) for variable in variables
    ]
    try:
        yield
    finally:
        for variable, value in zip(variables, saved, strict=True):
            variable.assign(value)


@contextlib.contextmanager
def host_state_kept(model: keras.Model) -> Iterator[None]:
    """states_kept, and what else calling the model may advance: NumPy's and Python's global random state
    (tf.keras.backend.random_normal and other ops take a seed from np.random when traced, so one extra trace
    gives the user's next predict another draw than after model.fit) and the layers' seed generators (a
    sampling layer's `keras.random.normal(seed=self.seed_generator)` advances its state at every call)."""
    generators = [
        generator.state
        for layer in _tf_private.flatten_layers(model, include_self=True)
        for generator in getattr(layer, "_seed_generators", ()) or ()
        if getattr(generator, "state", None) is not None
    ]
    saved = [tf.identity(state.value) for state in generators]
    numpy_state, python_state = np.random.get_state(), random.getstate()
    try:
        with states_kept(model):
            yield
    finally:
        np.random.set_state(numpy_state)
        random.setstate(python_state)
        for state, value in zip(generators, saved, strict=True):
            state.assign(value)


def _all_finite(values: Any) -> tf.Tensor:
    checks = [tf.reduce_all(tf.math.is_finite(value)) for value in _float_leaves(values)]
    return tf.reduce_all(tf.stack(checks)) if checks else tf.constant(True)


def _compile_state_built(model: keras.Model) -> bool:
    """Whether the compiled loss and metrics have created their variables."""
    parts = [getattr(model, "_compile_metrics", None), getattr(model, "_compile_loss", None)]
    return all(part is None or getattr(part, "built", True) for part in parts)


def _restored(value: tf.Tensor, replacement: Any) -> tf.Tensor:
    """A log after a skipped step: the restored metric of that name where there is one."""
    if tf.is_tensor(replacement) and replacement.dtype == value.dtype and replacement.shape == value.shape:
        return tf.identity(replacement)
    return tf.identity(value)


def _gradients_finite(grads: list[Any]) -> tf.Tensor:
    """Whether every gradient is finite, from one sum of all their values (NaN and Inf survive a
    sum): the cheapest full check; an overflow of a sum of finite float32 values is not a real case."""
    sums = [tf.constant(0.0)]
    for gradient in grads:
        if gradient is None:
            continue
        values = gradient.values if isinstance(gradient, tf.IndexedSlices) else gradient
        sums.append(tf.reduce_sum(tf.cast(values, tf.float32)))
    return tf.math.is_finite(tf.add_n(sums))


def _float_leaves(values: Any) -> list[tf.Tensor]:
    leaves = []
    for value in tf.nest.flatten(values, expand_composites=False):
        if isinstance(value, tf.IndexedSlices):
            value = value.values
        if isinstance(value, tf.Tensor | tf.Variable) and value.dtype.is_floating:
            leaves.append(value)
    return leaves


# AutoGraph converts what a traced step calls; converting this (a thread pool's Future.result) fails with
# "mangled names are not yet supported" and prints a warning in the user's run.
@tf.autograph.experimental.do_not_convert
def outside_the_trace(make: Callable[[], Any]) -> Any:
    """Run `make` (which creates variables) in a fresh thread: eagerly, and outside the variable
    creator scope of the tf.function being traced.

    Why: a tf.function whose first trace creates variables traces the whole step a second time
    (that is why model.fit traces its train step twice: it builds the compiled metrics and the
    optimizer's slots there), and `tf.init_scope()` does not help: the creator scope still sees the
    variables. The guard's own variables are tfpilot's, not the model's, so they are made here and add
    no trace; what Keras creates (slots, compiled metrics) is created where model.fit creates it, so
    the step is traced as often as under fit (see _prepare and _guarded_apply). Keras' per-thread state
    (the global seed) is not used by what runs here: zeros initialisers only."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(make).result()


def _nan_variable(shape: tf.TensorShape, dtype: tf.DType, name: str) -> tf.Variable:
    return tf.Variable(tf.fill(shape, tf.constant(float("nan"), dtype)), trainable=False, name=name)


class BatchStash:
    """One batch kept in variables from inside the compiled step, for the host to read later.

    The variables have no fixed shape (batches differ in size), which XLA cannot compile; the
    stash is not used under jit_compile. Composite tensors are kept as their component tensors."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.kept = tf.Variable(False, trainable=False, name=f"tfpilot_{name}_kept")
        self._variables: list[tf.Variable] = []
        self._structure: Any = None

    def usable(self, data: Any) -> list[tf.Tensor] | None:
        """The batch's tensors when this stash can hold them (creating its variables once)."""
        tensors = [t for t in tf.nest.flatten(data, expand_composites=True) if t is not None]
        if not all(isinstance(t, tf.Tensor) for t in tensors):
            return None
        if not self._variables:
            # Type specs, not the traced tensors: the structure outlives this trace's graph.
            self._structure = tf.nest.map_structure(lambda t: None if t is None else tf.type_spec_from_value(t), data)
            specs = [(t.shape.rank or 0, t.dtype) for t in tensors]
            self._variables = outside_the_trace(
                lambda: [
                    tf.Variable(
                        tf.zeros([0] * rank, dtype=dtype),
                        shape=tf.TensorShape(None),
                        trainable=False,
                        name=f"tfpilot_{self.name}_{i}",
                    )
                    for i, (rank, dtype) in enumerate(specs)
                ]
            )
        same = len(self._variables) == len(tensors) and all(
            v.dtype == t.dtype for v, t in zip(self._variables, tensors, strict=True)
        )
        return tensors if same else None

    def keep_once(self, tensors: list[tf.Tensor]) -> None:
        """In the graph: keep these tensors unless a batch is kept already."""

        def keep() -> tf.Tensor:
            for variable, value in zip(self._variables, tensors, strict=True):
                variable.assign(value)
            self.kept.assign(True)
            return tf.constant(True)

        tf.cond(self.kept, lambda: tf.constant(False), keep)

    def batch(self) -> Any | None:
        """The kept batch, as the step received it (None when none was kept)."""
        if not bool(self.kept.numpy()) or self._structure is None:
            return None
        values = iter([tf.convert_to_tensor(v) for v in self._variables])
        leaves: list[Any] = []
        for spec in tf.nest.flatten(self._structure):
            if spec is None:
                leaves.append(None)
                continue
            components = tf.nest.flatten(spec, expand_composites=True)
            leaves.append(tf.nest.pack_sequence_as(spec, [next(values) for _ in components], expand_composites=True))
        return tf.nest.pack_sequence_as(self._structure, leaves)


class GuardedStep:
    """Wraps a model's `train_step` with the guard; the host reads its variables (read())."""

    RING = 256  # bad-step indices kept between two host reads

    def __init__(self, model: keras.Model, *, policy: str = "skip_batch", max_retries: int = 10) -> None:
        self.model = model
        self.policy = policy
        self.max_retries = max_retries
        self.optimizers = [o for o in model_optimizers(model) if not isinstance(o, keras.optimizers.LossScaleOptimizer)]
        # A LossScaleOptimizer skips non-finite updates itself (and halves its scale): its routine
        # overflow skips are no NaN events, but one on a batch that holds NaN/Inf is (see _bad_data_skip).
        self.scalers = [o for o in model_optimizers(model) if isinstance(o, keras.optimizers.LossScaleOptimizer)]
        # Found at the first trace: Keras creates the metrics' variables when fit builds the model.
        self.state: list[Any] | None = None
        self._variables_seen = 0  # _variable_count(model) when `state` was read
        # Under a distribution strategy each replica runs the step: the guard's variables are the
        # strategy's (mirrored, aggregation NONE: each replica writes its own copy, as it does a
        # BatchNormalization statistic), every replica reaches the same verdict (one all-reduce of its
        # badness), so the copies stay equal and the host reads the first.
        self.strategy = model.distribute_strategy
        self.distributed = not is_default_strategy(self.strategy)
        with self.scope():
            self._create_variables()

    def scope(self) -> contextlib.AbstractContextManager[Any]:
        """Where the guard's variables are created: the model's strategy's scope, when it has one."""
        return self.strategy.scope() if self.distributed else contextlib.nullcontext()

    def _create_variables(self) -> None:
        self.steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="tfpilot_guard_steps")
        # Steps that trained (not skipped). Not an optimizer's iterations: a step may apply one
        # optimizer several times (WGAN-GP's critic: 3 updates per batch) or none.
        self.trained = tf.Variable(0, dtype=tf.int64, trainable=False, name="tfpilot_guard_trained")
        # The last good step's value of each float log that is no metric result (a train_step may
        # return a raw loss): what a skipped step reports instead of its NaN.
        self._last_good: dict[str, tf.Variable] = {}
        # [bad steps in all, bad steps in a row, index of the last bad step, halted (0/1)]
        self.record = tf.Variable([0, 0, -2, 0], dtype=tf.int64, trainable=False, name="tfpilot_guard_record")
        self.ring = tf.Variable(
            tf.fill([self.RING], tf.constant(-1, tf.int64)), trainable=False, name="tfpilot_guard_ring"
        )
        # The first bad batch, for the host's check_numerics replay.
        self.bad_batch = BatchStash("guard_bad_batch")
        self._read_total = 0  # bad steps the host has read so far
        # Whether an update of the current step was refused. A variable, not a list of tensors: a
        # train_step that is a tf.function of its own (keras-io's forward-forward network) applies
        # its updates in its own graph, whose tensors the step around it cannot read.
        self._refused = tf.Variable(False, trainable=False, name="tfpilot_guard_refused")
        # Whether a LossScaleOptimizer of the current step met non-finite gradients (and so skipped).
        self._scaler_skipped = tf.Variable(False, trainable=False, name="tfpilot_guard_scaler_skipped")
        # Whether this thread is tracing inside guarded_train_step. Per thread: MirroredStrategy traces each
        # replica's step in a thread of its own, interleaved at its merge_calls, and the first replica to
        # finish its step would otherwise end the others' while their updates still trace.
        self._tracing = threading.local()
        self._originals: dict[int, Callable[..., Any]] = {}
        # Per optimizer: applies begun and not finished (the call that finds the end of a dataset
        # of unknown length begins one and never finishes it), and the variables its weight decay
        # touches (those with a gradient, as Keras' apply filters them), found at trace time.
        self._pending: dict[int, tf.Variable] = {}
        self._decayed: dict[int, list[Any]] = {}
        # True while check_step traces: updates apply unconditionally (deferred_loop.py checks the
        # state they wrote once per call and undoes a bad call as a whole).
        self._unguarded = False

    @property
    def _in_step(self) -> bool:
        return bool(getattr(self._tracing, "in_step", False))

    @_in_step.setter
    def _in_step(self, value: bool) -> None:
        self._tracing.in_step = value

    @property
    def halted(self) -> tf.Tensor:
        return tf.cast(self.record[3], tf.bool)

    # ------------------------------------------------------------------ optimizer hook
    def install(self) -> None:
        """Route each optimizer's apply through the finiteness cond (instance attribute; removed by uninstall)."""
        for optimizer in self.optimizers:
            if id(optimizer) in self._originals:
                continue
            original = optimizer.apply
            self._originals[id(optimizer)] = original
            with self.scope():
                self._pending[id(optimizer)] = tf.Variable(
                    0, dtype=tf.int64, trainable=False, name=f"tfpilot_guard_pending_{len(self._pending)}"
                )
            optimizer.apply = self._guarded_apply(optimizer, original)
        for scaler in self.scalers:
            if id(scaler) not in self._originals:
                self._originals[id(scaler)] = scaler.apply
                scaler.apply = self._watched_apply(scaler.apply)

    def uninstall(self) -> None:
        for optimizer in [*self.optimizers, *self.scalers]:
            if id(optimizer) in self._originals:
                del optimizer.apply  # back to the class's method
        self._originals.clear()

    def _watched_apply(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """A LossScaleOptimizer's apply, unchanged, noting whether its (scaled) gradients were finite."""

        def apply(grads: Any, trainable_variables: Any = None) -> None:
            grads = list(grads)
            self._scaler_skipped.assign(
                tf.logical_or(self._scaler_skipped.read_value(), tf.logical_not(_gradients_finite(grads)))
            )
            original(grads, trainable_variables)

        return apply

    def _bad_data_skip(self, data: Any) -> tf.Tensor:
        """Whether a LossScaleOptimizer skipped this step on a batch that itself holds NaN/Inf: a NaN
        event (the data's), not a routine overflow of the loss scale. Skipped as any bad step is, the
        optimizer's scale is put back with the rest (it halved on the skip)."""
        if not self.scalers:
            return tf.constant(False)
        return tf.logical_and(self._scaler_skipped.read_value(), tf.logical_not(_all_finite(data)))

    def _guarded_apply(self, optimizer: keras.optimizers.Optimizer, original: Callable[..., Any]) -> Callable[..., Any]:
        def apply(grads: Any, trainable_variables: Any = None) -> None:
            grads = list(grads)
            if trainable_variables is not None:
                trainable_variables = list(trainable_variables)
            if not optimizer.built:
                # Building creates variables, which a cond branch may not: here, before the cond, in the
                # trace, where model.fit's optimizer.apply builds them. tf.function then traces the step a
                # second time, as under model.fit, and that is part of the model's computation: an op that
                # draws its seed when traced (tf.keras.backend.random_normal takes np.random.randint) gets
                # the second trace's seed under both (a VAE's sampling noise, fit round 17).
                optimizer.build(trainable_variables)
            if self._unguarded:
                original(grads, trainable_variables)
                return
            finite = _gradients_finite(grads)
            # A halted run (the policy stopped it) changes nothing any more, and once one update of
            # this step was refused, the step's later updates are too: a GAN whose critic update
            # saw the NaN batch must not train its generator on that batch (its g_loss, which never
            # sees the real images, is finite), or the skipped batch would change the weights.
            blocked = tf.logical_or(self.halted, self._refused.read_value()) if self._in_step else self.halted
            # model.fit's step increments the iterations even on the call that finds the end of a
            # dataset of unknown length (the increment needs no batch, so it runs before the
            # iterator fails): Adam's bias correction and a schedule then count one more step per
            # such epoch. Counted the same way here, before the cond, and taken back inside it, so
            # a skipped batch still changes nothing and histories equal model.fit's.
            counters = [_tf_private.iteration_counter(optimizer), self._pending[id(optimizer)]]
            known = (
                trainable_variables
                if trainable_variables is not None
                else _tf_private.optimizer_variables_known(optimizer)
            )
            self._decayed[id(optimizer)] = [v for g, v in zip(grads, known, strict=False) if g is not None]
            if self.distributed and not tf.__internal__.distribute.strategy_supports_no_merge_call():
                allowed = _apply_across_replicas(finite, blocked, original, grads, trainable_variables, counters)
            else:
                if self.distributed:
                    # Every replica refuses when any replica's gradients are not finite: their all-reduced
                    # sum, which each replica's update would apply, is not finite either.
                    finite = _on_every_replica(finite)
                allowed = tf.logical_and(finite, tf.logical_not(blocked))
                _counted_cond(allowed, counters, lambda: original(grads, trainable_variables))
            if self._in_step:
                self._refused.assign(tf.logical_or(self._refused.read_value(), tf.logical_not(allowed)))

        return apply

    # ------------------------------------------------------------------ the step
    def wrap(self, train_step: Callable[[Any], Any], *, keep_batch: bool = True) -> Callable[[Any], Any]:
        """`keep_batch`: keep the first bad batch for the host's replay (not under XLA, whose
        variables cannot change shape)."""

        def guarded_train_step(data: Any) -> Any:
            bad_tensors = self.bad_batch.usable(data) if keep_batch else None
            self._prepare(data)
            state = self.state or []
            before = [tf.convert_to_tensor(v) for v in state]
            self._refused.assign(False)
            self._scaler_skipped.assign(False)
            self._in_step = True
            try:
                logs = train_step(data)
            finally:
                self._in_step = False
            halted = self.halted
            any_refused = self._refused.read_value()
            finite_logs = tf.logical_and(_all_finite(logs), tf.logical_not(self._bad_data_skip(data)))
            if self.distributed:
                finite_logs = _on_every_replica(finite_logs)  # one replica's NaN loss is the step's
            good = tf.logical_and(finite_logs, tf.logical_not(tf.logical_or(any_refused, halted)))
            index = self.steps.read_value()
            tensor_keys = [k for k, v in logs.items() if tf.is_tensor(v)] if isinstance(logs, dict) else []

            held = self._holders(logs, tensor_keys)

            def on_good() -> list[tf.Tensor]:
                for k, variable in held.items():
                    variable.assign(logs[k])
                self.trained.assign_add(1)
                return [tf.identity(logs[k]) for k in tensor_keys]

            def on_bad() -> list[tf.Tensor]:
                for variable, value in zip(state, before, strict=True):
                    variable.assign(value)
                # A step after the run halted is no NaN event: only nothing may change.
                new_event = tf.logical_not(halted)

                def record_event() -> tf.Tensor:
                    total, in_a_row, last, _ = tf.unstack(self.record.read_value())
                    in_a_row = tf.where(tf.equal(last, index - 1), in_a_row + 1, tf.ones_like(in_a_row))
                    halt = tf.constant(self.policy == "stop") | (in_a_row > self.max_retries)
                    # an assign, not scatter_nd_update, which a mirrored variable does not have
                    self.ring.assign(
                        tf.tensor_scatter_nd_update(self.ring.read_value(), [[total % self.RING]], [index])
                    )
                    self.record.assign(tf.stack([total + 1, in_a_row, index, tf.cast(halt, tf.int64)]))
                    if bad_tensors is not None:
                        self.bad_batch.keep_once(bad_tensors)
                    return tf.constant(True)

                tf.cond(new_event, record_event, lambda: tf.constant(False))
                # The logs the step returned hold its NaN: report the metrics as restored instead,
                # and a log that is no metric (a raw loss) as the last good step reported it.
                current = self.model.get_metrics_result()
                return [_restored(logs[k], current[k] if k in current else held.get(k, logs[k])) for k in tensor_keys]

            if tensor_keys:
                values = tf.cond(good, on_good, on_bad)
            else:
                values = []
                self.trained.assign_add(tf.cast(good, tf.int64))
            with tf.control_dependencies(values or [good]):
                self.steps.assign_add(1)
            if not tensor_keys:
                return logs
            return {**logs, **dict(zip(tensor_keys, values, strict=True))}

        return guarded_train_step

    def _prepare(self, data: Any) -> None:
        """At the first trace: build the model and its compile state where Keras' fit would, and
        find the small state a bad step puts back."""
        if self.state is not None and self._variables_seen == _variable_count(self.model):
            return
        compiled = getattr(self.model, "compiled", False)
        if not self.model.built and overrides_train_step(self.model):
            # Its own train_step calls the model on what it chooses (part of each batch, a stack of pairs):
            # built from the batch symbolically, a subclassed model and its sub-models would be marked built
            # from shapes they never compute on (Keras marks a layer without build() built before its call
            # fails), and its serving signature would follow them. model.fit on one device never builds it
            # symbolically either: the step's first call does, during this trace; the state is read again
            # at the next trace, once the variables exist.
            pass
        elif getattr(self.model, "_distribute_strategy", None) is None:
            # model.fit on one device (no strategy set) never builds symbolically either: "defer building to
            # when the train function gets traced" (keras/src/backend/tensorflow/trainer.py,
            # _maybe_symbolic_build). Its first trace builds the model, the compiled loss and metrics and the
            # optimizer, creating variables, so tf.function traces the step again, and the state is read again
            # at that trace. Built symbolically, a metric whose update_state is a tf.function with a loop over
            # the batch broke (fit round 17's KS metric: a tensor of the loop's cond read outside it), and the
            # step was traced once where fit traces it twice (an op that draws its seed when traced then got
            # another seed than under fit).
            pass
        elif compiled and defines_call(self.model) and not (self.model.built and _compile_state_built(self.model)):
            # A model without call() (a GAN driving its sub-models from train_step) has no
            # forward pass to build symbolically; Keras' own fit never calls it either.
            # Outside the trace (it reads only the batch's shapes and dtypes): variables
            # created inside the first trace make tf.function trace the whole step again,
            # as it does under model.fit, which builds its metrics there.
            try:
                if self.model.built:
                    outside_the_trace(lambda: build_compile_state(self.model, data))
                else:
                    # Building the model draws its initial weights from Keras' global seed,
                    # which is per thread: here, in the trace, as model.fit builds it.
                    build_compile_state(self.model, data)
            except Exception:  # noqa: BLE001 - Keras raises RuntimeError, ValueError, or what the model's call raises
                if not overrides_train_step(self.model):
                    raise
                # Its own train_step calls the model in its own way (`self([source, target])` from a
                # dict batch, `self(batch[0])` from a stack of pairs): the batch is not the model's
                # input, and the step builds what it needs during this trace, as under model.fit,
                # which on one device never builds a model symbolically. The state is read again at
                # the next trace, once the variables exist (tf.function traces again after creating them).
                pass
        self.state = _state_of_trainable_layers(self.model)
        if _step_assigns_variables(self.model):
            # Its own train_step writes weights itself, outside the optimizer the guard holds back (SAM's
            # ascent step `w.assign_add(e_w)`, a WGAN critic's clipping): a bad batch's NaN reaches them
            # before any update is refused, so the step's start values go back with the rest.
            known = {id(v) for v in self.state}
            self.state += [v for v in self.model.trainable_variables if id(v) not in known]
        known = {id(v) for v in self.state}
        for scaler in self.scalers:
            # its scale and the count of good steps since the scale last grew: a skip changed them
            own = [getattr(scaler, "dynamic_scale", None), getattr(scaler, "step_counter", None)]
            self.state += [v for v in own if v is not None and id(v) not in known]
        self._variables_seen = _variable_count(self.model)

    def check_step(self, train_step: Callable[[Any], Any]) -> Callable[[Any], tuple[Any, tf.Tensor]]:
        """The step without the guard's conds: every update applies, and the step returns (logs,
        whether its logs were finite). The deferred loop (deferred_loop.py) runs a call of these,
        checks the state their updates wrote once per call (a non-finite gradient leaves a
        non-finite weight or slot) and, when either was not finite, puts the call's start state
        back and runs its batches again through `wrap`'s step."""

        def checked_train_step(data: Any) -> tuple[Any, tf.Tensor]:
            self._prepare(data)
            self._scaler_skipped.assign(False)
            self._unguarded = True
            try:
                logs = train_step(data)
            finally:
                self._unguarded = False
            # One sum for the whole step (NaN and Inf survive it): each op costs a few microseconds
            # of executor time without XLA, a visible share of a small model's step.
            sums = [tf.reduce_sum(tf.cast(v, tf.float32)) for v in _float_leaves(logs)]
            good = tf.math.is_finite(tf.add_n(sums)) if sums else tf.constant(True)
            good = tf.logical_and(good, tf.logical_not(self._bad_data_skip(data)))
            keys = [k for k, v in logs.items() if tf.is_tensor(v)] if isinstance(logs, dict) else []
            for key, variable in self._holders(logs, keys).items():
                variable.assign(logs[key])  # a bad call is put back and run again, holders too
            return logs, good

        return checked_train_step

    def held_variables(self) -> list[tf.Variable]:
        """The variables holding the last good value of logs that are no metric (see _holders)."""
        return list(self._last_good.values())

    def _holders(self, logs: Any, keys: list[str]) -> dict[str, tf.Variable]:
        """A variable per float log of a fixed shape that is no metric result, created once
        (outside the trace), holding the last good step's value; NaN until a step trains."""
        metric_names = set(self.model.get_metrics_result())  # reads only: pruned from the graph
        held: dict[str, tf.Variable] = {}
        for key in keys:
            value = logs[key]
            if key in metric_names or not value.dtype.is_floating or not value.shape.is_fully_defined():
                continue
            variable = self._last_good.get(key)
            if variable is None or variable.dtype != value.dtype or variable.shape != value.shape:
                name = f"tfpilot_last_good_{len(self._last_good)}"
                make = functools.partial(_nan_variable, value.shape, value.dtype, name)
                variable = outside_the_trace(lambda make=make: self._made_in_scope(make))
                self._last_good[key] = variable
            held[key] = variable
        return held

    def _made_in_scope(self, make: Callable[[], Any]) -> Any:
        with self.scope():
            return make()

    # ------------------------------------------------------------------ host side
    def settle_end_of_data(self) -> int:
        """Do on the host what model.fit's step does on the call that finds the end of a dataset of
        unknown length; returns how many such applies there were.

        That call fails at the batch, but the optimizer's work that needs no batch runs first: the
        iteration increment (kept in the graph above) and the weight decay (AdamW, or any optimizer
        given weight_decay), which reads and writes only the weights. Here the decay sits inside the
        guard's cond with the update it belongs to, so it is applied now, once per such apply, with
        the iteration count the step saw, before validation or the next epoch reads the weights:
        histories equal model.fit's to the bit (tested)."""
        settled = 0
        for optimizer in self.optimizers:
            pending = self._pending.get(id(optimizer))
            if pending is None:
                continue
            count = int(pending.numpy())
            if count <= 0:
                continue
            with self.scope():  # a mirrored variable is assigned on every replica in the strategy's scope
                pending.assign(0)
            settled += count
            variables = self._decayed.get(id(optimizer), [])
            if optimizer.weight_decay is None or optimizer.gradient_accumulation_steps or not variables:
                continue  # accumulation decays inside its own cond, which needs the batch
            for _ in range(count):
                self._decay_once(optimizer, variables)
        return settled

    def _decay_once(self, optimizer: keras.optimizers.Optimizer, variables: list[Any]) -> None:
        """The weight decay of one apply, with the iteration count that apply saw (the decay ran before the
        step's increment). Under a strategy it runs as a replica function: the decay's merge_call needs one."""

        def decay() -> None:
            _tf_private.apply_weight_decay(optimizer, variables)

        with self.scope():
            optimizer.iterations.assign_sub(1)
            try:
                if self.distributed:
                    self.strategy.run(decay)
                else:
                    decay()
            finally:
                optimizer.iterations.assign_add(1)

    def trained_steps(self) -> int:
        """Training steps this call trained (skipped ones not counted)."""
        return int(self.trained.numpy())

    def read(self) -> tuple[int, list[int], bool]:
        """(steps run, indices of bad steps not yet read (-1 where the ring overflowed), halted)."""
        steps, record, ring = self.steps.numpy(), self.record.numpy(), self.ring.numpy()
        total, halted = int(record[0]), bool(record[3])
        start, self._read_total = self._read_total, total
        indices = [int(ring[i % self.RING]) if total - i <= self.RING else -1 for i in range(start, total)]
        return int(steps), indices, halted


def _on_every_replica(flag: tf.Tensor) -> tf.Tensor:
    """In a replica context: True where `flag` is True on every replica. A merge_call, not an all-reduce,
    where the strategy uses merge_call: a collective launched here could pair, on another replica, with the
    gradients' all-reduce of the same step (collectives must run in the same order on every replica)."""
    context = tf.distribute.get_replica_context()
    if context is None:
        return flag
    if tf.__internal__.distribute.strategy_supports_no_merge_call():
        failures = context.all_reduce(tf.distribute.ReduceOp.SUM, tf.cast(tf.logical_not(flag), tf.float32))
        return tf.equal(failures, 0.0)
    return context.merge_call(_all_replicas, args=(flag,))


def _all_replicas(distribution: tf.distribute.Strategy, flags: Any) -> tf.Tensor:
    return tf.reduce_all(tf.stack(distribution.experimental_local_results(flags)))


def _counted_cond(allowed: tf.Tensor, counters: list[Any], apply: Callable[[], Any]) -> None:
    """`apply()` when `allowed`; each counter counts one more before the cond and one less inside either branch
    (see _guarded_apply: what model.fit's step counts on the call that finds no batch)."""
    for counter in counters:
        counter.assign_add(1)

    def update() -> tf.Tensor:
        for counter in counters:
            counter.assign_sub(1)
        apply()
        return tf.constant(True)

    def refuse() -> tf.Tensor:
        for counter in counters:
            counter.assign_sub(1)
        return tf.constant(False)

    tf.cond(allowed, update, refuse)


def _apply_across_replicas(
    finite: tf.Tensor,
    blocked: tf.Tensor,
    original: Callable[..., Any],
    grads: Any,
    variables: Any,
    counters: list[Any],
) -> tf.Tensor:
    """optimizer.apply on every replica when every replica's gradients are finite and the step is not
    blocked, decided in the cross-replica context; returns whether it applied.

    Why there: the optimizer's update goes through merge_call, which a tf.cond built in a replica context may
    not hold. Keras' LossScaleOptimizer skips its non-finite updates under a strategy the same way
    (keras/src/optimizers/loss_scale_optimizer.py, _tf_apply), though it reads the first replica's gradients
    only: here any replica's non-finite gradient refuses the update, whose all-reduced sum it would poison."""

    def cross(distribution: tf.distribute.Strategy, finite: Any, blocked: Any, grads: Any, variables: Any) -> Any:
        allowed = tf.logical_and(
            _all_replicas(distribution, finite), tf.logical_not(distribution.experimental_local_results(blocked)[0])
        )
        _counted_cond(
            allowed, counters, lambda: distribution.extended.call_for_each_replica(original, args=(grads, variables))
        )
        return allowed

    return tf.distribute.get_replica_context().merge_call(cross, args=(finite, blocked, grads, variables))


def _step_assigns_variables(model: keras.Model) -> bool:
    """Whether the model's own train_step (its source, as written) assigns variables itself."""
    if not overrides_train_step(model):
        return False
    try:
        source = inspect.getsource(type(model).train_step)
    except (OSError, TypeError):
        return True  # no source to read (defined in a REPL): keep its weights with the state, to be safe
    return any(f".{name}(" in source for name in ("assign", "assign_add", "assign_sub"))


def overrides_train_step(model: keras.Model) -> bool:
    """Whether the model's class defines its own train_step (a GAN's, a VAE's)."""
    own = getattr(type(model), "train_step", None)
    return own is not None and own is not getattr(keras.Model, "train_step", None)


def defines_call(model: keras.Model) -> bool:
    """The model has a forward pass (functional, Sequential or a call() override). A subclass
    that trains sub-models from its own train_step may define none: calling it raises."""
    return type(model).call is not keras.Model.call
