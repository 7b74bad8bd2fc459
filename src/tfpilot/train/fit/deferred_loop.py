"""model.fit's multi-step train function with the NaN guard checked once per call.

With `steps_per_execution` > 1, Keras runs several steps per compiled call. The per-step guard
(GuardedStep.wrap) puts a `tf.cond` around every optimizer update and another around the step's
state; on a small model those conds cost 7% of the step without XLA and 16% with it
(benchmarks/bench_fit_guard.py). Here a call instead:

1. copies everything a step writes (weights, layer state, optimizer slots and iterations, metric
   totals, the guard's counters) into a snapshot, once per call;
2. runs its steps as Keras does, each the model's own train_step with its updates applied
   unconditionally, collecting only whether its logs were finite, and keeps each batch (a
   TensorArray holds the batch's tensors; no copy);
3. checks once that every float variable it may have written is finite: a non-finite gradient
   leaves a non-finite weight or optimizer slot (NaN and Inf survive SGD, momentum, Adam and
   clipping by norm), so this finds the bad steps a per-step sum over every gradient finds, at
   1/steps_per_execution of its cost (the sums were ~5% of a small model's step);
4. returns (steps run, all finite, the last step's logs, the batches). One host read per call, in
   the same sync as Keras' own check for the end of the data.

When a step was not finite (rare), the host puts the snapshot back and runs the call's batches
again through the per-step guard, which skips exactly the bad ones: the result is the per-step
guard's, to the bit where the kernels are deterministic (dropout's seed state is in the snapshot).

The per-step guard stays where this cannot work: one step per call (a snapshot per step costs
more than the conds), a distribution strategy, an iterator that is no tf.data iterator, inputs
that are neither tensors nor composites of them, logs of no fixed shape, a run the policy halted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from tfpilot.train.fit.guarded_step import GuardedStep, model_optimizers, untracked_variables

__all__ = ["DeferredLoop", "MAX_SNAPSHOT_BYTES"]

# Above this much state, the per-step guard is kept: the snapshot doubles the model's memory.
MAX_SNAPSHOT_BYTES = 2 * 2**30


def _state(model: keras.Model, step: GuardedStep) -> list[tf.Variable]:
    """Everything a training step may write, each variable once."""
    seen: dict[int, Any] = {}
    candidates = [
        *model.variables,
        *model.metrics_variables,
        *untracked_variables(model),
        step.steps,
        step.trained,
        *step.held_variables(),
    ]
    for optimizer in model_optimizers(model):
        candidates.extend(optimizer.variables)
    for variable in candidates:
        seen.setdefault(id(variable), variable)
    return list(seen.values())


def _fixed_shape_specs(outputs: Any) -> Any | None:
    """TensorSpecs of a step's logs, or None when a log is no tensor of a fixed numeric shape."""
    leaves = tf.nest.flatten(outputs)
    if not all(tf.is_tensor(t) and t.shape.is_fully_defined() and t.dtype != tf.string for t in leaves):
        return None
    return tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape, t.dtype), outputs)


def _all_finite(variables: list[tf.Variable]) -> tf.Tensor:
    """Whether every value of every variable is finite (is_finite, not a sum: a sum of large
    finite slots, Adam's squared gradients, can overflow)."""
    if not variables:
        return tf.constant(True)
    return tf.reduce_all(tf.stack([tf.reduce_all(tf.math.is_finite(tf.convert_to_tensor(v))) for v in variables]))


def _zeros(specs: Any) -> Any:
    return tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), specs)


class DeferredLoop:
    """Keras' train_function for one tfpilot.fit run (see the module docstring).

    `checked_step` is GuardedStep.check_step's function and `keras_function` Keras' own train
    function built from the per-step guarded train_step (model.train_step), used where the
    deferred check cannot be."""

    def __init__(self, model: keras.Model, step: GuardedStep, checked_step: Callable[[Any], Any], keras_function: Any):
        self.model = model
        self.step = step
        self.keras_function = keras_function
        self._checked = checked_step
        self._built_for: Any = None
        self._usable = False
        self._multi: Any = None
        self._replay: Any = None
        self.replays = 0  # calls run again through the per-step guard
        self._halted = False

    # ------------------------------------------------------------------ host side
    def __call__(self, iterator: Any) -> Any:
        if not isinstance(iterator, tf.data.Iterator) or not self._usable_for(iterator.element_spec):
            return self.keras_function(iterator)
        count, good, logs, arrays = self._multi(iterator)
        # One host read, as Keras' own function reads whether its Optional holds outputs.
        if int(count) == 0:
            raise StopIteration
        if not bool(good):
            self.replays += 1
            logs = self._replay(arrays, count)
            self._halted = bool(self.step.halted)
        return logs

    def _usable_for(self, spec: Any) -> bool:
        if self._halted:
            return False  # a halted run changes nothing any more: only the per-step guard refuses
        if self._built_for is not None:
            return self._usable and spec == self._built_for
        self._built_for = spec
        self._usable = self._build(spec)
        return self._usable

    # ------------------------------------------------------------------ compiled parts
    def _build(self, spec: Any) -> bool:
        model = self.model
        leaves = tf.nest.flatten(spec, expand_composites=True)
        if not leaves or not all(isinstance(leaf, tf.TensorSpec) for leaf in leaves):
            return False  # an Optional (a None Keras passes through) or another kind of value
        strategy = model.distribute_strategy

        def one_step(data: Any) -> Any:
            return strategy.run(self._checked, args=(data,))

        fast = tf.function(one_step, jit_compile=bool(model.jit_compile), reduce_retracing=True)
        # Tracing it builds the model, its optimizers and metrics (as Keras' first call would), so
        # that the snapshot below sees every variable a step writes.
        logs_spec = _fixed_shape_specs(fast.get_concrete_function(spec).structured_outputs[0])
        if logs_spec is None:
            return False
        state = _state(model, self.step)
        size = sum(tf.convert_to_tensor(v).shape.num_elements() * tf.as_dtype(v.dtype).size for v in state)
        if size > MAX_SNAPSHOT_BYTES:
            return False
        pairs = [(v, tf.Variable(tf.convert_to_tensor(v), trainable=False, name="tfpilot_call_start")) for v in state]
        # A variable that is not finite before training (a -inf mask kept as a weight, the guard's
        # NaN "no good value yet" holders, whose logs are checked per step) would mark every call.
        floating = [v for v in state if tf.as_dtype(v.dtype).is_floating]
        finite_now = tf.stack([tf.reduce_all(tf.math.is_finite(v)) for v in floating]).numpy() if floating else []
        checked = [v for v, finite in zip(floating, finite_now, strict=True) if finite]  # one host read
        guarded_step = model.train_step

        def guarded_one(data: Any) -> Any:
            return strategy.run(guarded_step, args=(data,))

        guarded = tf.function(guarded_one, jit_compile=bool(model.jit_compile), reduce_retracing=True)
        steps = int(model.steps_per_execution)

        @tf.function(reduce_retracing=True)
        def multi(iterator: Any) -> Any:
            for variable, copy in pairs:
                copy.assign(tf.convert_to_tensor(variable))
            arrays = [
                tf.TensorArray(leaf.dtype, size=steps, element_shape=leaf.shape, infer_shape=False) for leaf in leaves
            ]
            logs = _zeros(logs_spec)
            good = tf.constant(True)
            count = tf.constant(0)
            for _ in tf.range(steps):
                optional = iterator.get_next_as_optional()
                if not optional.has_value():
                    break
                data = optional.get_value()
                flat = tf.nest.flatten(data, expand_composites=True)
                arrays = [array.write(count, value) for array, value in zip(arrays, flat, strict=True)]
                logs, finite = fast(data)
                good = tf.logical_and(good, finite)
                count += 1
            # A non-finite gradient leaves a non-finite weight or optimizer slot behind (NaN and
            # Inf survive every update rule), so one look at the float state per call finds what a
            # sum over every gradient of every step would, at 1/steps of its cost.
            good = tf.logical_and(good, _all_finite(checked))
            # The guard's counters once per call (a bad call is put back, counters included).
            self.step.steps.assign_add(tf.cast(count, tf.int64))
            self.step.trained.assign_add(tf.cast(count, tf.int64))
            return count, good, logs, arrays

        @tf.function(reduce_retracing=True)
        def replay(arrays: Any, count: tf.Tensor) -> Any:
            for variable, copy in pairs:
                variable.assign(copy.read_value())
            logs = _zeros(logs_spec)
            for index in tf.range(count):
                flat = []
                for handle, leaf in zip(arrays, leaves, strict=True):
                    # A tf.function returns a TensorArray as its TensorList handle.
                    value = tf.raw_ops.TensorListGetItem(
                        input_handle=handle, index=index, element_shape=-1, element_dtype=leaf.dtype
                    )
                    value.set_shape(leaf.shape)
                    flat.append(value)
                logs = guarded(tf.nest.pack_sequence_as(spec, flat, expand_composites=True))
            return logs

        self._multi, self._replay = multi, replay
        return True
