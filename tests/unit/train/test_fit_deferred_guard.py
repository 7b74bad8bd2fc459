"""The NaN guard checked once per call (deferred_loop.py) gives the per-step guard's result.

Each test trains two copies of one model from the same weights on the same batches: one through
Keras' own multi-step function of the per-step guarded step, one through DeferredLoop, and
compares every variable and the logs bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

from tfpilot.train.fit.deferred_loop import DeferredLoop  # noqa: E402
from tfpilot.train.fit.guarded_step import GuardedStep  # noqa: E402


class _Logs(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = []

    def on_train_batch_end(self, batch, logs=None):
        self.batches.append((batch, {k: float(v) for k, v in (logs or {}).items()}))


def _guarded(model, *, deferred, policy="skip_batch"):
    step = GuardedStep(model, policy=policy)
    own = model.train_step
    model.train_step = step.wrap(own, keep_batch=not model.jit_compile)
    step.install()
    model.make_train_function(force=True)
    loop = None
    if deferred:
        loop = DeferredLoop(model, step, step.check_step(own), model.train_function)
        model.train_function = loop
    return step, loop


def _bn_dropout_model(steps_per_execution, jit_compile):
    keras.utils.set_random_seed(3)
    model = keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.BatchNormalization(),
            keras.layers.Dropout(0.3),
            keras.layers.Dense(3),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        steps_per_execution=steps_per_execution,
        jit_compile=jit_compile,
    )
    return model


def _run_both(build, data, *, epochs=2, policy="skip_batch"):
    results = {}
    for deferred in (False, True):
        model = build()
        step, loop = _guarded(model, deferred=deferred, policy=policy)
        recorder = _Logs()
        history = model.fit(data, epochs=epochs, verbose=0, callbacks=[recorder]).history
        results[deferred] = (model, step, loop, history, recorder.batches)
    return results


def _assert_same_state(ours, theirs):
    for a, b in zip(ours.variables, theirs.variables, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=a.path)
    for a, b in zip(ours.optimizer.variables, theirs.optimizer.variables, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=a.path)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_a_call_with_a_bad_batch_is_run_again_and_ends_as_the_per_step_guard_ends(jit_compile):
    rng = np.random.default_rng(0)
    x = rng.random((160, 6), dtype=np.float32)
    y = rng.integers(0, 3, 160)
    x[37, 2] = np.nan  # batch 4 of 10: the second call of 4 steps
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    results = _run_both(lambda: _bn_dropout_model(4, jit_compile), data)
    (plain, plain_step, _, plain_history, plain_batches) = results[False]
    (model, step, loop, history, batches) = results[True]
    assert loop.replays == 2  # the bad call, once per epoch
    assert history == plain_history and batches == plain_batches
    _assert_same_state(model, plain)
    assert step.read()[:2] == plain_step.read()[:2]  # the same steps, the same bad ones
    assert step.trained_steps() == plain_step.trained_steps() == 18
    assert all(np.isfinite(np.asarray(v)).all() for v in model.variables)


def test_a_clean_run_is_never_run_again_and_equals_keras_fit():
    rng = np.random.default_rng(1)
    x = rng.random((96, 6), dtype=np.float32)
    y = rng.integers(0, 3, 96)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    (model, _, loop, history, _) = _run_both(lambda: _bn_dropout_model(4, False), data)[True]
    reference = _bn_dropout_model(4, False)
    assert history == reference.fit(data, epochs=2, verbose=0).history
    assert loop.replays == 0
    _assert_same_state(model, reference)


def test_the_stop_policy_halts_inside_the_replay_and_later_calls_change_nothing():
    rng = np.random.default_rng(2)
    x = rng.random((128, 6), dtype=np.float32)
    y = rng.integers(0, 3, 128)
    x[20, 0] = np.inf  # batch 1 of 8
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    results = _run_both(lambda: _bn_dropout_model(4, False), data, epochs=1, policy="stop")
    (plain, plain_step, _, _, _) = results[False]
    (model, step, loop, _, _) = results[True]
    assert bool(step.halted) and loop.replays == 1
    assert step.trained_steps() == plain_step.trained_steps() == 1
    _assert_same_state(model, plain)


def test_strings_and_ragged_inputs_are_kept_for_the_replay():
    """A batch of raw strings and a ragged feature: the call keeps both (TensorArrays of their
    components) and the replay rebuilds them with their static shapes."""
    words = np.array(["a b", "c", "b b c", "a", "c a", "b"] * 8)
    numbers = tf.ragged.constant([[1.0], [2.0, 3.0], [4.0], [5.0, 6.0, 7.0], [8.0], [9.0, 1.0]] * 8)
    labels = np.arange(48, dtype=np.float32) % 2
    numbers_values = numbers.flat_values.numpy()
    numbers_values[13] = np.nan  # in row 6 or so: batch 0 or 1 of 6
    numbers = tf.RaggedTensor.from_row_splits(numbers_values, numbers.row_splits)
    data = tf.data.Dataset.from_tensor_slices(({"words": words, "numbers": numbers}, labels)).batch(8)

    class Model(keras.Model):
        def __init__(self):
            super().__init__()
            self.lookup = keras.layers.StringLookup(vocabulary=["a", "b", "c"])
            self.embed = keras.layers.Embedding(4, 4)
            self.out = keras.layers.Dense(1)

        def call(self, inputs):
            tokens = self.lookup(tf.strings.split(inputs["words"]))
            pooled = tf.reduce_mean(self.embed(tokens), axis=1)
            total = tf.reduce_sum(inputs["numbers"], axis=1, keepdims=True)
            return self.out(tf.concat([pooled, total], axis=-1))

    def build():
        keras.utils.set_random_seed(4)
        model = Model()
        model.compile(optimizer="adam", loss="mse", steps_per_execution=3)
        return model

    results = _run_both(build, data)
    (plain, _, _, plain_history, _) = results[False]
    (model, _, loop, history, _) = results[True]
    assert loop.replays >= 1 and history == plain_history
    _assert_same_state(model, plain)


class _Norm(keras.layers.Layer):
    """A row's length: finite at a zero row, whose gradient (x / |x|) is NaN."""

    def call(self, x):
        return tf.norm(x, axis=-1, keepdims=True)


def test_a_nan_gradient_under_a_finite_loss_is_found_by_the_state_check_and_skipped():
    # The bad step is its call's last: the call's logs are all finite, and only the NaN the update
    # leaves in the weights and Adam's slots tells it (unchecked, the next call would start from
    # NaN weights and its snapshot would hold them). The replay skips exactly that step.
    def build():
        keras.utils.set_random_seed(5)
        model = keras.Sequential(
            [keras.Input((4,)), keras.layers.Dense(4, use_bias=False), _Norm(), keras.layers.Dense(1)]
        )
        model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse", steps_per_execution=4)
        return model

    rng = np.random.default_rng(4)
    x = rng.random((96, 4), dtype=np.float32) + 0.5
    y = rng.random((96, 1), dtype=np.float32)
    x[60] = 0.0  # Dense without bias maps it to a zero row: batch 8 of 12, the last of the second call
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    results = _run_both(build, data, epochs=1)
    (plain, plain_step, _, plain_history, _) = results[False]
    (model, step, loop, history, _) = results[True]
    assert np.isfinite(plain_history["loss"]).all()
    assert step.read()[:2] == plain_step.read()[:2] and step.trained_steps() == plain_step.trained_steps() == 11
    assert loop.replays == 1 and history == plain_history
    _assert_same_state(model, plain)
    assert all(np.isfinite(np.asarray(v)).all() for v in model.variables)


class _Masked(keras.layers.Layer):
    """Keeps a -inf mask as a (non-trainable) weight, as some attention layers do."""

    def build(self, input_shape):
        self.mask = self.add_weight(shape=(input_shape[-1],), initializer="zeros", trainable=False)
        self.mask.assign(tf.constant([0.0] * (input_shape[-1] - 1) + [-np.inf]))

    def call(self, x):
        return tf.nn.softmax(x + self.mask)


def test_a_weight_that_is_not_finite_by_design_does_not_send_every_call_to_the_replay():
    def build():
        keras.utils.set_random_seed(6)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), _Masked(), keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse", steps_per_execution=4)
        return model

    rng = np.random.default_rng(6)
    data = tf.data.Dataset.from_tensor_slices(
        (rng.random((64, 4), dtype=np.float32), rng.random((64, 1), dtype=np.float32))
    ).batch(8)
    results = _run_both(build, data, epochs=1)
    (plain, _, _, plain_history, _) = results[False]
    (model, _, loop, history, _) = results[True]
    assert loop.replays == 0 and history == plain_history
    _assert_same_state(model, plain)
