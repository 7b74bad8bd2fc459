"""How training steps are run: several per tf.function call, as Keras' steps_per_execution does.

One tf.function call runs up to `steps_per_execution` steps inside the graph (a tf.while_loop
over the iterator's get_next_as_optional), so Python overhead is paid once per call rather than
once per step. The call returns one small int64 vector (steps run, whether the last step was
non-finite, global step), so the outer loop pays a single host sync per call. Under XLA on one
device the call may instead stack its batches and run them as one XLA loop; the NaN guard's
per-call part (snapshot at the call's start, restore when a step was bad, the deferred gradient
check) lives here too.

CompiledLoop is mixed into StepFunctions (step.py), which owns the step body: Keras keeps
`train_step` apart from the function that loops over it in the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

__all__ = ["CompiledLoop", "MAX_STACK_BYTES", "UNLOCATED"]

# Stacked batches one XLA call may hold (see StepFunctions._stacked_steps); above it, one launch per step.
MAX_STACK_BYTES = 64 * 2**20

# train_function's second value: 1, the last step run was non-finite (its batch is known), or
# UNLOCATED: a step whose gradient was not checked (see StepFunctions._defers_gradient_check) had a
# non-finite loss, or the call left non-finite weights or optimizer state, so some step up to the
# last one run was non-finite; the call restored its start state and the caller runs those steps
# again with every gradient checked (locating_train_function) to find which.
UNLOCATED = 2


class CompiledLoop:
    """The compiled loops over StepFunctions' step (see the module docstring)."""

    # Provided by StepFunctions (step.py).
    model: keras.Model
    optimizer: keras.optimizers.Optimizer
    strategy: tf.distribute.Strategy
    clip_norm: float | None
    steps_per_execution: int
    jit_compile: bool
    batch_size: int | None
    stack_batches: bool
    distributed: bool
    defer_gradient_check: bool
    global_step: tf.Variable
    grad_norm: tf.Variable
    _train_functions: dict[tuple[bool, int, bool], Callable[..., tf.Tensor]]
    _stacked_loop_functions: dict[bool, Callable[..., tf.Tensor]]
    _state_finite_function: Callable[[], tf.Tensor] | None
    _eval_function: Any
    _gradient_function: Any
    _whole_step: Callable[..., Any]
    _recorded_single_step: Callable[..., Any]
    _distributed_step: Callable[..., Any]
    _replica_eval: Callable[..., Any]
    _replica_gradients: Callable[..., Any]
    record: Callable[..., Any]
    state_variables: Callable[[], list[tf.Variable]]

    @property
    def restores_call_on_nonfinite(self) -> bool:
        """True when a non-finite step makes train_function restore the state its call started
        from (one device, see _single_step); the caller replays the call's good steps."""
        return not self.distributed

    def _call_snapshot(self) -> list[tuple[tf.Variable, tf.Variable]]:
        """(variable, copy) for everything a call writes except the NaN counters, which must
        survive the restore: weights and layer state, optimizer slots and iterations, training
        metrics, global step and norm. Created once (memory: one more copy of the state)."""
        if not hasattr(self, "_snapshot_pairs"):
            state = [*self.state_variables(), self.global_step, self.grad_norm]
            with self.strategy.scope():
                self._snapshot_pairs = [
                    (variable, tf.Variable(tf.convert_to_tensor(variable), trainable=False, name="call_start"))
                    for variable in state
                ]
        return self._snapshot_pairs

    @property
    def _defers_gradient_check(self) -> bool:
        """Whether steps whose norm is not logged check only their loss, and the call checks the
        state they updated once at its end (see local_forward). On one device, whose call
        restores its start state and can be run again; not with
        clipping, which needs every step's norm; not under loss scaling, whose optimizer skips a
        non-finite update itself (a routine float16 overflow), so the state would not show it."""
        return (
            self.defer_gradient_check
            and not self.distributed
            and not self.clip_norm
            and not isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer)
        )

    def _state_finite(self) -> tf.Tensor:
        """Whether every trainable weight and floating optimizer variable is finite: what a gradient
        updates. Layer state (BatchNorm statistics) turns non-finite through the forward pass,
        which makes the loss non-finite too; leaving it out also spares a model that keeps a
        constant such as -inf in a non-trainable variable a second run of every call."""
        if self._state_finite_function is None:
            variables = [
                v
                for v in (*self.model.trainable_variables, *self.optimizer.variables)
                if tf.as_dtype(v.dtype).is_floating
            ]

            def state_finite():
                return tf.reduce_all(tf.stack([tf.reduce_all(tf.math.is_finite(v)) for v in variables]))

            self._state_finite_function = tf.function(state_finite, jit_compile=self.jit_compile)
        return self._state_finite_function()

    # ------------------------------------------------------------------ compiled functions
    @property
    def stacks_batches(self) -> bool:
        """Whether a call runs its steps as one XLA loop over stacked batches (see _stacked_steps):
        asked for, on the whole-step XLA path on one device, with a known full batch size."""
        return self.stack_batches and self.jit_compile and not self.distributed and bool(self.batch_size)

    def stack_shapes(self, element_spec) -> list[tf.TensorShape] | None:
        """Shapes of one stacked slot per flattened input, or None when the batches cannot be stacked:
        a dimension other than the batch one varies between batches (padded text), or
        `steps_per_execution` stacked batches would hold more than MAX_STACK_BYTES."""
        shapes, size = [], 0
        for spec in tf.nest.flatten(element_spec):
            if not isinstance(spec, tf.TensorSpec) or spec.shape.rank is None or spec.shape.rank < 1:
                return None
            shape = tf.TensorShape([self.batch_size]).concatenate(spec.shape[1:])
            if not shape.is_fully_defined() or spec.dtype == tf.string:
                return None
            shapes.append(shape)
            size += shape.num_elements() * spec.dtype.size
        return shapes if size * self.steps_per_execution <= MAX_STACK_BYTES else None

    def _stacked_loop(self, stacked, count, batch_shapes, *, every_norm: bool):
        """XLA: `count` (>= 1) steps over the first `count` slots of `stacked` ([slots, batch, ...]
        per input), stopping after a non-finite one. Returns (steps run, last one non-finite).

        `batch_shapes`: each input's static shape as the iterator declares it (batch dimension
        None). Each slot is given that shape again, so the step sees the shapes the per-step loop
        sees: Keras' CompileLoss weighs each output's loss tracker by the static batch size when
        it is known, which made `cls_loss` differ from model.fit's by 3%.

        Unless `every_norm`, only the last step computes the gradient norm (see local_forward)."""

        def slot(index):
            flat = [
                # A gather, not values[index]: XLA compiles a strided slice's start as a constant,
                # which made every distinct count a new XLA compilation (~1 s for an MLP).
                tf.raw_ops.PlaceholderWithDefault(input=tf.gather(values, index), shape=shape)
                for values, shape in zip(tf.nest.flatten(stacked), batch_shapes, strict=True)
            ]
            return tf.nest.pack_sequence_as(stacked, flat)

        executed = tf.constant(0, tf.int64)
        bad = tf.constant(False)
        with_norm = every_norm
        # A while loop, not `for index in tf.range(...)`: autograph gives a range loop a maximum
        # iteration count, which XLA compiles as a constant (one compilation per distinct count).
        index = tf.zeros_like(count)
        while index < count - 1:
            features, labels = slot(index)
            finite = self._recorded_single_step(features, labels, with_norm=with_norm)
            executed += 1
            index += 1
            if not every_norm:
                # Deferred (see train_function): no break, so no step waits for the last one's loss.
                bad = tf.logical_or(bad, tf.logical_not(finite))
            elif not finite:
                bad = tf.constant(True)
                break
        if not every_norm:
            features, labels = slot(count - 1)
            finite = self._recorded_single_step(features, labels, with_norm=True)
            bad = tf.logical_or(bad, tf.logical_not(finite))
            executed += 1
        elif not bad:
            features, labels = slot(count - 1)
            bad = tf.logical_not(self._recorded_single_step(features, labels, with_norm=True))
            executed += 1
        return executed, bad

    def _stacked_steps(self, iterator, limit, shapes, *, every_norm: bool):
        """Up to `limit` steps, `steps_per_execution` batches per XLA launch.

        Keras' steps_per_execution (and the per-step loop below) launches one XLA cluster per step
        and feeds it from the iterator in between; on a small model those per-step launches cost
        as much as the optimizer update (MLP 784-256-256-10, batch 128, 2 CPU cores: the same
        steps as one XLA loop over stacked batches ran 1.16-1.27x faster). Here the batches of a
        chunk are gathered into one stack (one copy per batch, unused slots zero-filled) and one
        XLA while-loop runs them. A batch of another size (the short last batch of an epoch) ends
        the chunk and runs on its own through the per-step XLA function.

        XLA on CPU runs convolutions inside a while loop about 10x slower than the same step
        launched on its own (small CNN: 4.4 against 45 steps/s), so this is a tuned choice, never
        assumed (autotune.py times it against the per-step XLA loop)."""
        slots = self.steps_per_execution
        spec = iterator.element_spec
        flat_specs = tf.nest.flatten(spec)
        batch_shapes = tuple(tuple(s.shape.as_list()) for s in flat_specs)
        single = self._whole_step(with_norm=True)
        executed = tf.constant(0, tf.int64)
        bad = tf.constant(False)
        exhausted = tf.constant(False)
        while executed < limit and not bad and not exhausted:
            arrays = [
                tf.TensorArray(s.dtype, size=slots, element_shape=shape)
                for s, shape in zip(flat_specs, shapes, strict=True)
            ]
            gathered = tf.constant(0, tf.int32)
            odd = tf.experimental.Optional.empty(spec)
            for _ in tf.range(tf.minimum(limit - executed, slots)):
                optional = iterator.get_next_as_optional()
                if not optional.has_value():
                    exhausted = tf.constant(True)
                    break
                flat = tf.nest.flatten(optional.get_value())
                if tf.shape(flat[0])[0] != self.batch_size:
                    odd = optional
                    break
                arrays = [array.write(gathered, value) for array, value in zip(arrays, flat, strict=True)]
                gathered += 1
            if gathered > 0:
                stacked = tf.nest.pack_sequence_as(spec, [array.stack() for array in arrays])
                ran, bad = self._stacked_xla_loop(every_norm)(stacked, gathered, batch_shapes)
                executed += ran
            if not bad and odd.has_value():
                bad = tf.logical_not(single(*odd.get_value()))
                executed += 1
        return executed, bad

    def _stacked_xla_loop(self, every_norm: bool):
        if every_norm not in self._stacked_loop_functions:

            def stacked_loop(stacked, count, batch_shapes):
                return self._stacked_loop(stacked, count, batch_shapes, every_norm=every_norm)

            self._stacked_loop_functions[every_norm] = tf.function(
                stacked_loop, jit_compile=True, reduce_retracing=True
            )
        return self._stacked_loop_functions[every_norm]

    @property
    def train_function(self):
        """Compiled: run up to `max_steps` steps; return int64 [steps_run, nonfinite, global_step],
        `nonfinite` 0, 1 (the last step run was non-finite) or UNLOCATED.

        `max_steps` is a tensor so that the last call of an epoch does not retrace.

        The loop breaks right after a non-finite step, so the host learns which batch it was.
        Under `restores_call_on_nonfinite` the call then restores the state it started from
        (global step included) and the caller replays its `steps_run - 1` good steps.
        The gradient norm the host reads after a call (step logs, the epoch's log) is the norm of
        the call's last step; without clipping under XLA only that step computes it.

        Under `stacks_batches` the steps run as XLA loops of up to `steps_per_execution` stacked
        batches (_stacked_steps); otherwise one step per loop iteration, as Keras does.

        Under `_defers_gradient_check` the call ends by checking the state its steps updated;
        when that finds a non-finite value it restores its start state and returns UNLOCATED.
        """
        return self._train_function(locate=False)

    @property
    def locating_train_function(self):
        """train_function with every step's gradient norm computed and checked, which never returns
        UNLOCATED: the run of a call again whose deferred check failed, to find its step."""
        return self._train_function(locate=True)

    def _train_function(self, *, locate: bool):
        # One compiled function per jit setting, so `jit_compile: auto` can time both and keep one,
        # and per stack size (steps_per_execution) where batches are stacked.
        deferred = self._defers_gradient_check and not locate
        key = (self.jit_compile, self.steps_per_execution if self.stacks_batches else 0, deferred)
        if key not in self._train_functions:
            steps = self.steps_per_execution
            step_fn: Callable[..., tf.Tensor] | None
            fast = logged = None
            snapshot = self._call_snapshot() if self.restores_call_on_nonfinite else []
            stacking = self.stacks_batches
            if self.distributed:

                def step_fn(*element):
                    # Distributed elements carry a third item (the global batch size); see sharding.py.
                    norm, finite = self._distributed_step(*element)
                    self.record(norm, finite)
                    return finite

            elif deferred:
                fast, logged = self._whole_step(with_norm=False), self._whole_step(with_norm=True)
                step_fn = None  # the loop picks one of the two per step
            else:
                step_fn = self._whole_step()

            @tf.function(reduce_retracing=True)
            def train_function(iterator, max_steps=None):
                executed = tf.constant(0, tf.int64)
                bad = tf.constant(False)
                limit = tf.constant(steps, tf.int64) if max_steps is None else tf.cast(max_steps, tf.int64)
                for variable, copy in snapshot:
                    copy.assign(tf.convert_to_tensor(variable))
                shapes = self.stack_shapes(iterator.element_spec) if stacking else None
                if shapes is not None:
                    executed, bad = self._stacked_steps(iterator, limit, shapes, every_norm=not deferred)
                else:
                    for index in tf.range(limit):
                        optional = iterator.get_next_as_optional()
                        if not optional.has_value():
                            break
                        if step_fn is not None:
                            # Distributed elements carry their global batch size (see sharding.py).
                            finite = step_fn(*optional.get_value())
                        elif index == limit - 1:
                            finite = logged(*optional.get_value())  # type: ignore[misc]
                        else:
                            finite = fast(*optional.get_value())  # type: ignore[misc]
                        executed += 1
                        if deferred:
                            # No break: a loop that stops at a non-finite loss makes every step wait
                            # for the previous step's loss before it starts (~2% of a small CNN's
                            # step without XLA). A bad call runs to its end and is run again.
                            bad = tf.logical_or(bad, tf.logical_not(finite))
                        elif not finite:
                            bad = tf.constant(True)
                            break
                code = tf.cast(bad, tf.int64)
                # Deferred: a non-finite loss may come from an earlier step's gradient already in the
                # weights, so neither it nor a non-finite state names its step.
                if deferred and (bad or not self._state_finite()):
                    code = tf.constant(UNLOCATED, tf.int64)
                if snapshot and code > 0:
                    for variable, copy in snapshot:
                        variable.assign(copy.read_value())
                return tf.stack([executed, code, self.global_step.read_value()])

            self._train_functions[key] = train_function
        return self._train_functions[key]

    @property
    def eval_function(self):
        if self._eval_function is None:
            strategy = self.strategy

            @tf.function(reduce_retracing=True)
            def eval_function(iterator):
                for element in iterator:
                    strategy.run(self._replica_eval, args=element[:2])

            self._eval_function = eval_function
        return self._eval_function

    @property
    def gradient_function(self):
        """Gradients on one batch (for histograms): never applied."""
        if self._gradient_function is None:
            strategy = self.strategy

            @tf.function(reduce_retracing=True)
            def gradient_function(features, labels):
                per_replica = strategy.run(self._replica_gradients, args=(features, labels))
                return [strategy.reduce(tf.distribute.ReduceOp.SUM, g, axis=None) for g in per_replica]

            self._gradient_function = gradient_function
        return self._gradient_function
