"""The XLA step on one device runs a call's batches as one XLA loop over stacked batches.

The anchor is the per-step XLA loop (one launch per step, as Keras' steps_per_execution): the
stacked loop must run the same steps on the same batches, stop at the same non-finite step and
leave the same weights, metrics, counters and gradient norm.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from _train_helpers import blobs

from tfpilot.train.step import MAX_STACK_BYTES, StepFunctions

BATCH = 16


def _mlp() -> keras.Model:
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(3)])


def _steps(
    *,
    stacked: bool,
    clip_norm: float | None = 1.0,
    steps_per_execution: int = 4,
    model: keras.Model | None = None,
    batch_size: int = BATCH,
) -> StepFunctions:
    return StepFunctions(
        model=model or _mlp(),
        optimizer=keras.optimizers.Adam(0.01),
        strategy=tf.distribute.get_strategy(),
        clip_norm=clip_norm,
        l2=1e-4,
        label_smoothing=0.0,
        num_classes=3,
        steps_per_execution=steps_per_execution,
        jit_compile=True,
        batch_size=batch_size,
        stack_batches=stacked,
    )


def _weights(steps: StepFunctions) -> list[np.ndarray]:
    return [v.numpy() for v in steps.model.variables]


def _stacked_loop_traced(steps: StepFunctions) -> bool:
    return any(function.experimental_get_tracing_count() > 0 for function in steps._stacked_loop_functions.values())


@pytest.mark.parametrize("clip_norm", [1.0, None], ids=["clipped", "unclipped"])
def test_stacked_calls_train_like_one_launch_per_step(clip_norm) -> None:
    # 116 examples: seven full batches of 16, then a short one of 4 that cannot join a stack.
    features, labels = blobs(116)
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(BATCH)
    results = []
    for stacked in (False, True):
        steps = _steps(stacked=stacked, clip_norm=clip_norm)
        iterator = iter(data)
        calls = []
        # 3 steps; 5 (more than the 4 slots of a stack: a chunk of 4, then the short last batch
        # on its own); then the end of the data.
        for limit in (3, 5, 1):
            ran, bad, step = steps.train_function(iterator, tf.constant(limit, tf.int64)).numpy()
            calls.append((int(ran), int(bad), int(step), float(steps.grad_norm.numpy())))
        assert _stacked_loop_traced(steps) == stacked
        results.append((calls, _weights(steps), steps.train_logs(), float(steps.train_loss.count.numpy())))
    (per_step_calls, per_step_weights, per_step_logs, per_step_count), (calls, weights, logs, count) = results
    assert [c[:3] for c in calls] == [c[:3] for c in per_step_calls] == [(3, 0, 3), (5, 0, 8), (0, 0, 8)]
    # Every example was counted once by the loss metric, the short batch's 4 included.
    assert count == per_step_count == 116.0
    np.testing.assert_allclose([c[3] for c in calls], [c[3] for c in per_step_calls], rtol=1e-4)
    for a, b in zip(per_step_weights, weights, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    for name, value in per_step_logs.items():
        np.testing.assert_allclose(logs[name], value, rtol=1e-4, err_msg=name)


def test_a_nonfinite_step_inside_a_stack_ends_the_call_and_restores_its_start() -> None:
    features, labels = blobs(96)
    features[40] = np.nan  # batch 2 (the third), in the middle of a 4-slot stack
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(BATCH)
    steps = _steps(stacked=True)
    before = _weights(steps)
    ran, bad, step = steps.train_function(iter(data), tf.constant(4, tf.int64)).numpy()
    assert _stacked_loop_traced(steps)
    # The host learns it was the third batch; the call's state is back where it started (the
    # runner replays the two good steps), and the NaN counters keep the event.
    assert (ran, bad, step) == (3, 1, 0)
    assert int(steps.first_nonfinite_step.numpy()) == 3 and int(steps.nonfinite_steps.numpy()) == 1
    for a, b in zip(before, _weights(steps), strict=True):
        np.testing.assert_array_equal(a, b)


def test_batches_whose_shape_varies_run_one_launch_per_step() -> None:
    """Padded sequences change length from batch to batch: they cannot share one stack."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((None,), dtype="int32"), keras.layers.Embedding(20, 4), keras.layers.GlobalAveragePooling1D()]
    )
    model.add(keras.layers.Dense(3))
    lengths = [3, 5, 2, 7, 4, 6, 1, 8] * 4
    sequences = tf.data.Dataset.from_generator(
        lambda: ((np.arange(n, dtype=np.int32) % 20, n % 3) for n in lengths),
        output_signature=(tf.TensorSpec([None], tf.int32), tf.TensorSpec([], tf.int32)),
    ).padded_batch(4)
    steps = _steps(stacked=True, model=model, batch_size=4)
    assert steps.stacks_batches and steps.stack_shapes(sequences.element_spec) is None
    ran, bad, step = steps.train_function(iter(sequences), tf.constant(8, tf.int64)).numpy()
    assert (ran, bad, step) == (8, 0, 8) and not _stacked_loop_traced(steps)


def test_a_stack_larger_than_the_memory_cap_is_not_built() -> None:
    steps = _steps(stacked=True)
    row_bytes = 6 * 4 + 4  # float32 features and an int32 label
    spec = (tf.TensorSpec([None, 6], tf.float32), tf.TensorSpec([None], tf.int32))
    assert steps.stack_shapes(spec) == [tf.TensorShape([BATCH, 6]), tf.TensorShape([BATCH])]
    steps.steps_per_execution = MAX_STACK_BYTES // (BATCH * row_bytes) + 1
    assert steps.stack_shapes(spec) is None


def test_the_xla_loop_is_compiled_once_for_every_step_count() -> None:
    """The count of steps must stay a runtime value: a loop bound or slice start that XLA takes as a
    compile-time constant compiles the loop again for every distinct count (~1 s each for an MLP),
    which every call cut short by a log, a checkpoint or the end of an epoch would pay."""
    features, labels = blobs(64)
    steps = _steps(stacked=True)
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(BATCH)
    steps.train_function(iter(data), tf.constant(4, tf.int64)).numpy()
    stacked = (tf.zeros([4, BATCH, 6]), tf.zeros([4, BATCH], tf.int32))
    shapes = ((None, 6), (None,))
    (loop,) = steps._stacked_loop_functions.values()
    hlo = [loop.experimental_get_compiler_ir(stacked, tf.constant(count), shapes)(stage="hlo") for count in (2, 3)]
    assert hlo[0] == hlo[1]
