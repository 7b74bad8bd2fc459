"""`steps_per_execution: auto` / `jit_compile: auto`, the whole-step XLA cluster, call boundaries."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from _train_helpers import blobs, build, tiny_config

from tfpilot.train import TrainHook
from tfpilot.train.autotune import MIN_TUNED_STEPS, tune_steps
from tfpilot.train.step import UNLOCATED, StepFunctions

# 120 examples, batch 16: 6 training batches per epoch; this many epochs plan >= MIN_TUNED_STEPS steps.
LONG = MIN_TUNED_STEPS // 6 + 1


def weights(model: keras.Model) -> list[np.ndarray]:
    return [v.numpy() for v in model.variables]


def test_auto_times_whole_steps_records_the_choice_and_leaves_training_untouched(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    features, labels = blobs(120)
    with caplog.at_level(logging.INFO, logger="tfpilot.progress"):
        tuned = build(tiny_config(tmp_path, name="auto", epochs=LONG, seed=3), features, labels)
    # the tuner says what it does while it runs (the CLI shows these lines on stderr)
    progress = [r.getMessage() for r in caplog.records if r.name == "tfpilot.progress"]
    assert progress[0].startswith("tuning the training step: timing ") and "round 1/3" in progress[1]
    assert progress[-1].startswith("tuning the training step: chose ")
    fixed = build(
        tiny_config(tmp_path, name="fixed", epochs=LONG, seed=3, steps_per_execution=1, jit_compile=False),
        features,
        labels,
    )
    choice = tuned.step_choice
    assert choice.tuned and not fixed.step_choice.tuned
    # Without XLA, XLA launched per step, XLA looping over stacked batches: the fastest is kept.
    assert set(choice.timings) == {"xla", "xla_stacked", "no_xla", "call_overhead"}
    fastest = min(("no_xla", "xla", "xla_stacked"), key=choice.timings.__getitem__)
    assert (choice.jit_compile, choice.stack_batches) == (fastest != "no_xla", fastest == "xla_stacked")
    assert (tuned.steps.jit_compile, tuned.steps.stacks_batches) == (choice.jit_compile, choice.stack_batches)
    spe = choice.steps_per_execution
    assert tuned.steps_per_execution == spe and 1 <= spe <= 64 and spe & (spe - 1) == 0
    per_step = choice.timings[fastest]
    # Calls of at least 200 ms (or the cap), and the per-call cost within 2% of them (or the cap).
    assert spe == 64 or spe * per_step >= 0.2
    assert spe == 64 or choice.timings["call_overhead"] <= 0.02 * spe * per_step
    (finding,) = [f for f in tuned.findings if f.code == "TRAIN-STEPS-TUNED"]
    assert finding.evidence["steps_per_execution"] == spe and f"steps_per_execution {spe}" in finding.message
    # Timing ran real updates; every variable was put back, so both trainers start from the same state.
    for after_tuning, untouched in zip(weights(tuned.model), weights(fixed.model), strict=True):
        np.testing.assert_array_equal(after_tuning, untouched)
    assert int(tuned.optimizer.iterations.numpy()) == 0 and int(tuned.steps.global_step.numpy()) == 0
    assert float(tuned.steps.train_loss.count.numpy()) == 0.0
    # Trained for the same steps, they end (nearly) equal: XLA may fuse float arithmetic differently.
    for trainer in (tuned, fixed):
        trainer.config.train.epochs = 2
        trainer.fit()
    assert int(tuned.steps.global_step.numpy()) == int(fixed.steps.global_step.numpy()) == 12
    for a, b in zip(weights(tuned.model), weights(fixed.model), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_short_runs_and_fixed_settings_are_not_tuned(tmp_path: Path) -> None:
    features, labels = blobs(120)
    short = build(tiny_config(tmp_path, name="short"), features, labels)
    assert not short.step_choice.tuned and short.steps_per_execution == 1 and not short.steps.jit_compile
    assert not [f for f in short.findings if f.code == "TRAIN-STEPS-TUNED"]
    both_set = build(
        tiny_config(tmp_path, name="set", epochs=LONG, steps_per_execution=4, jit_compile=True), features, labels
    )
    assert not both_set.step_choice.tuned
    assert both_set.steps_per_execution == 4 and both_set.steps.jit_compile


def test_only_what_is_auto_is_tuned(tmp_path: Path) -> None:
    features, labels = blobs(120)
    trainer = build(tiny_config(tmp_path, epochs=LONG, steps_per_execution=3), features, labels)
    assert trainer.step_choice.tuned and trainer.steps_per_execution == 3
    assert "call_overhead" not in trainer.step_choice.timings


def _steps(model: keras.Model, *, jit: bool) -> StepFunctions:
    return StepFunctions(
        model=model,
        optimizer=keras.optimizers.Adam(0.01),
        strategy=tf.distribute.get_strategy(),
        clip_norm=1.0,
        l2=1e-4,
        label_smoothing=0.0,
        num_classes=3,
        jit_compile=jit,
    )


def _mlp(seed: int = 0) -> keras.Model:
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(3)])


def test_whole_step_under_xla_trains_like_the_plain_step() -> None:
    features, labels = blobs(96)
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
    results = []
    for jit in (False, True):
        steps = _steps(_mlp(), jit=jit)
        ran, bad, step = steps.train_function(iter(data), tf.constant(6, tf.int64)).numpy()
        assert (ran, bad, step) == (6, 0, 6)
        results.append((weights(steps.model), steps.train_logs(), float(steps.grad_norm.numpy())))
    (plain, plain_logs, plain_norm), (xla, xla_logs, xla_norm) = results
    for a, b in zip(plain, xla, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert plain_logs == {k: plain_logs[k] for k in xla_logs}
    np.testing.assert_allclose(plain_norm, xla_norm, rtol=1e-4)


def test_nan_guard_skips_a_bad_step_inside_the_xla_cluster() -> None:
    features, labels = blobs(48)
    features[16] = np.nan  # the second batch
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
    steps = _steps(_mlp(), jit=True)
    iterator = iter(data)
    steps.train_function(iterator, tf.constant(1, tf.int64)).numpy()
    before = weights(steps.model)
    ran, bad, step = steps.train_function(iterator, tf.constant(2, tf.int64)).numpy()
    # The call stopped at the bad step (so the host knows the batch) and restored the state it
    # started from, global step included; the NaN counters keep the event.
    assert (ran, bad, step) == (1, 1, 1)
    assert int(steps.first_nonfinite_step.numpy()) == 2 and int(steps.nonfinite_steps.numpy()) == 1
    for a, b in zip(before, weights(steps.model), strict=True):
        np.testing.assert_array_equal(a, b)


def _unclipped(model: keras.Model, *, jit: bool) -> StepFunctions:
    steps = _steps(model, jit=jit)
    steps.clip_norm = None
    return steps


def test_without_clipping_xla_computes_the_norm_on_each_calls_last_step_only() -> None:
    features, labels = blobs(96)
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
    results = []
    for jit in (False, True):
        steps = _unclipped(_mlp(), jit=jit)
        iterator = iter(data)
        norms = []
        for size in (4, 2):  # two calls: the norm read after each is its last step's
            steps.train_function(iterator, tf.constant(size, tf.int64)).numpy()
            norms.append(float(steps.grad_norm.numpy()))
        results.append((weights(steps.model), norms))
    (plain, plain_norms), (xla, xla_norms) = results
    assert plain_norms[0] != plain_norms[1]
    np.testing.assert_allclose(plain_norms, xla_norms, rtol=1e-4)
    for a, b in zip(plain, xla, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("jit", [False, True], ids=["no-xla", "xla"])
def test_a_nan_gradient_under_a_finite_loss_is_caught_on_steps_without_the_norm(jit: bool) -> None:
    """sqrt at exactly 0: the loss is finite, the kernel's gradient is NaN (inf * 0)."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(4, use_bias=False),
            keras.layers.Lambda(lambda t: tf.sqrt(tf.abs(t))),
            keras.layers.Dense(3),
        ]
    )
    features, labels = blobs(64)
    features[:16] = 0.0  # the first batch
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
    steps = _unclipped(model, jit=jit)
    before = weights(steps.model)
    # A call of 3 steps: its first step skips the norm and checks only its (finite) loss, so the
    # NaN reaches the weights, and the later steps' losses are NaN. Those steps are not the cause:
    # the call runs to its end, reports UNLOCATED, restores its start, and the locating run (every
    # gradient checked, stopping at the first bad step) names the first step.
    ran, bad, step = steps.train_function(iter(data), tf.constant(3, tf.int64)).numpy()
    assert (ran, bad, step) == (3, UNLOCATED, 0)
    for a, b in zip(before, weights(steps.model), strict=True):
        np.testing.assert_array_equal(a, b)
    ran, bad, step = steps.locating_train_function(iter(data), tf.constant(3, tf.int64)).numpy()
    assert (ran, bad, step) == (1, 1, 0)
    for a, b in zip(before, weights(steps.model), strict=True):
        np.testing.assert_array_equal(a, b)


class _NumpyDense(keras.layers.Layer):
    """A layer with an op XLA cannot compile (tf.numpy_function runs Python)."""

    def call(self, inputs):
        doubled = tf.numpy_function(lambda x: (2 * x).astype(np.float32), [inputs], tf.float32)
        return tf.reshape(doubled, tf.shape(inputs)) + inputs


def test_a_model_xla_cannot_compile_is_tuned_without_xla() -> None:
    features, labels = blobs(64)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6,)), _NumpyDense(), keras.layers.Dense(3)])
    steps = _steps(model, jit=False)
    batches = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16).cache().repeat()
    choice = tune_steps(steps, batches, jit=None, steps_per_execution=None)
    assert math.isinf(choice.timings["xla"]) and math.isfinite(choice.timings["no_xla"])
    assert not choice.jit_compile and not steps.jit_compile


class _Steps(TrainHook):
    def __init__(self) -> None:
        self.logged: list[int] = []
        self.calls: list[tuple[int, int]] = []

    def on_step_logs(self, *, step: int, logs: dict[str, float]) -> None:
        self.logged.append(step)

    def after_execution(self, *, step: int, steps_run: int) -> None:
        self.calls.append((step, steps_run))

    def next_boundary(self, *, step: int) -> int | None:
        return 7 if step < 7 else None


def test_calls_of_several_steps_end_where_logs_checkpoints_and_hooks_are_due(tmp_path: Path) -> None:
    features, labels = blobs(400)  # 280 training examples: 18 steps per epoch at batch 16
    hook = _Steps()
    config = tiny_config(
        tmp_path, epochs=1, steps_per_execution=16, summary_every_steps=5, checkpoint_every_steps=8, max_checkpoints=9
    )
    trainer = build(config, features, labels, hooks=[hook])
    trainer.fit()
    assert hook.logged == [5, 10, 15]
    ends = [step for step, _ in hook.calls]
    assert ends == [5, 7, 8, 10, 15, 16, 18]
    assert len(list(trainer.run.checkpoints.glob("ckpt-*.index"))) == 3  # steps 8 and 16, and the epoch's end


def test_jit_compile_stacked_and_true_are_fixed_choices_that_train_alike(tmp_path: Path) -> None:
    features, labels = blobs(120)
    trainers = {
        value: build(
            tiny_config(tmp_path, name=f"jit-{value}", epochs=2, steps_per_execution=4, jit_compile=value),
            features,
            labels,
        )
        for value in ("true", "stacked")
    }
    per_step, stacked = trainers["true"], trainers["stacked"]
    assert not per_step.step_choice.tuned and not stacked.step_choice.tuned
    assert per_step.steps.jit_compile and not per_step.steps.stacks_batches
    assert stacked.steps.jit_compile and stacked.steps.stacks_batches
    assert "XLA on, batches stacked" in stacked.step_choice.describe()
    for trainer in trainers.values():
        trainer.fit()
    assert stacked.steps._stacked_loop_functions and not per_step.steps._stacked_loop_functions
    assert int(stacked.steps.global_step.numpy()) == int(per_step.steps.global_step.numpy()) == 12
    for a, b in zip(weights(per_step.model), weights(stacked.model), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_a_tuned_choice_is_reused_by_the_next_run_of_the_same_step_on_this_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from tfpilot.train import step_cache

    monkeypatch.setenv(step_cache.CACHE_ENV, str(tmp_path / "cache"))
    features, labels = blobs(120)
    first = build(tiny_config(tmp_path, name="first", epochs=LONG), features, labels)
    assert first.step_choice.tuned and first.step_choice.reused_from is None
    stored = json.loads((tmp_path / "cache" / step_cache.FILE_NAME).read_text())
    assert len(stored["entries"]) == 1
    # Another run of the same model on the same data (another name, seed and length): no timing at all.
    with caplog.at_level(logging.INFO, logger="tfpilot.progress"):
        again = build(tiny_config(tmp_path, name="again", epochs=LONG + 5, seed=7), features, labels)
    progress = [r.getMessage() for r in caplog.records if r.name == "tfpilot.progress"]
    assert not any(line.startswith("tuning the training step") for line in progress), progress
    choice = again.step_choice
    assert not choice.tuned and choice.reused_from is not None
    assert (choice.jit_compile, choice.stack_batches, choice.steps_per_execution) == (
        first.step_choice.jit_compile,
        first.step_choice.stack_batches,
        first.step_choice.steps_per_execution,
    )
    assert (again.steps.jit_compile, again.steps.stacks_batches, again.steps_per_execution) == (
        choice.jit_compile,
        choice.stack_batches,
        choice.steps_per_execution,
    )
    (finding,) = [f for f in again.findings if f.code == "TRAIN-STEPS-TUNED"]
    assert "reused the step settings measured on" in finding.message and step_cache.CACHE_ENV in finding.fix
    # A different step (a wider model) is measured again, and kept beside the first.
    wider = tiny_config(tmp_path, name="wider", epochs=LONG)
    wider.model.hidden_units = [32]
    assert build(wider, features, labels).step_choice.tuned
    assert len(json.loads((tmp_path / "cache" / step_cache.FILE_NAME).read_text())["entries"]) == 2
    # `off` keeps nothing (the rest of the suite runs so); an unreadable file is ignored and rewritten.
    monkeypatch.setenv(step_cache.CACHE_ENV, "off")
    assert step_cache.cache_file() is None and step_cache.load_choice("any") is None
    monkeypatch.setenv(step_cache.CACHE_ENV, str(tmp_path / "cache"))
    (tmp_path / "cache" / step_cache.FILE_NAME).write_text("{not json")
    assert build(tiny_config(tmp_path, name="broken", epochs=LONG), features, labels).step_choice.tuned
    assert len(json.loads((tmp_path / "cache" / step_cache.FILE_NAME).read_text())["entries"]) == 1
