"""NaN guard: a model whose loss becomes NaN at a known step; the finding names op, layer, line."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from _train_helpers import blobs, tiny_config

from tfpilot.errors import TrainError

POISONED_EXAMPLE = 57  # raw index of the example whose feature 0 is negative
BATCH_SIZE = 16


class LogFeatures(keras.layers.Layer):
    """log(x + 1): finite for the (non-negative) data, NaN for the poisoned example."""

    def call(self, inputs):
        return tf.math.log(inputs + 1.0)  # NAN-SOURCE-LINE


class GradientLog(keras.layers.Layer):
    """scale * x forward, finite for every example; backward multiplies by log(scale * x + 1), NaN
    for the poisoned example: its loss is finite and only the gradient of `scale` is not."""

    def build(self, input_shape):
        self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="scale")

    def call(self, inputs):
        @tf.custom_gradient
        def identity_with_log_gradient(z):
            return tf.identity(z), lambda upstream: upstream * tf.math.log(z + 1.0)

        return identity_with_log_gradient(self.scale * inputs)


class InfiniteBound(keras.layers.Layer):
    """x + 0 * min(bound, 0) with a trainable `bound` of +inf: harmless (its gradient is 0 and it
    stays inf), but a weight that is never finite."""

    def build(self, input_shape):
        self.bound = self.add_weight(shape=(), initializer=keras.initializers.Constant(np.inf), name="bound")

    def call(self, inputs):
        return inputs + 0.0 * tf.minimum(self.bound, 0.0)


SOURCE_LINE = next(
    i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1) if line.endswith("# NAN-SOURCE-LINE")
)


# One step per call is guarded step by step; in calls of several steps a non-finite step makes the
# call restore its start state and the runner replays its good steps (step.py, runner.py), with or
# without XLA. All must behave alike. jit_compile: stacked runs each call's batches as one XLA loop
# over stacked batches (step.py).
SETTINGS = [(False, 1), (False, 4), (True, 4), ("stacked", 4)]
IDS = ["plain-step", "calls-of-4", "xla-calls-of-4", "xla-stacked-calls-of-4"]


@pytest.fixture(params=SETTINGS, ids=IDS)
def step_settings(request) -> tuple[bool | str, int]:
    return request.param


def make_trainer(
    tmp_path: Path,
    policy: str,
    *,
    max_retries: int = 10,
    step_settings=(False, 1),
    poison: type = LogFeatures,
    clip_norm: float | None = 1.0,
):
    """`poison`: the first layer, LogFeatures (the loss is NaN) or GradientLog (only a gradient is)."""
    from tfpilot.data import Preprocessor, build_pipeline
    from tfpilot.train import Trainer

    jit, steps_per_execution = step_settings
    config = tiny_config(
        tmp_path,
        name=policy,
        nan_policy=policy,
        nan_max_retries=max_retries,
        batch_size=BATCH_SIZE,
        jit_compile=jit,
        steps_per_execution=steps_per_execution,
        clip_norm=clip_norm,
    )
    features, labels = blobs(200)
    features = np.abs(features)
    features[POISONED_EXAMPLE, 0] = -5.0
    # Identity preprocessing, so the poisoned value reaches the model unchanged.
    preprocessor = Preprocessor(
        kind="tabular",
        feature_spec={"x": {"shape": [6], "dtype": "float32"}},
        numeric_columns=["x"],
        mean=[0.0],
        std=[1.0],
    )
    pipeline = build_pipeline(
        config.data, batch_size=BATCH_SIZE, preprocessor=preprocessor, features=features, labels=labels
    )
    # Seeded here: the Trainer seeds only after the model exists, so without it the first model
    # built in a process starts from other weights than the next ones.
    keras.utils.set_random_seed(0)
    inputs = keras.Input((6,))
    hidden = keras.layers.Dense(8, activation="relu")(poison(name="log_features")(inputs))
    model = keras.Model(inputs, keras.layers.Dense(3)(hidden))
    trainer = Trainer(config, pipeline=pipeline, model=model)
    position = int(np.searchsorted(pipeline.indices["train"], POISONED_EXAMPLE))
    assert pipeline.indices["train"][position] == POISONED_EXAMPLE
    return trainer, position // BATCH_SIZE


def test_stop_names_op_layer_and_source_line(tmp_path: Path, step_settings) -> None:
    trainer, bad_batch = make_trainer(tmp_path, "stop", step_settings=step_settings)
    before = [v.numpy().copy() for v in trainer.model.trainable_variables]
    with pytest.raises(TrainError, match="non-finite"):
        trainer.fit()
    (finding,) = [f for f in trainer.findings if f.code == "TRAIN-NONFINITE"]
    evidence = finding.evidence
    assert evidence["op"] == "Log"
    assert evidence["layer"] == "log_features"
    assert evidence["source"] == f"{Path(__file__)}:{SOURCE_LINE}"
    assert evidence["global_step"] == bad_batch + 1 and evidence["batch_index"] == bad_batch and evidence["epoch"] == 0
    assert "Log" in finding.message and str(SOURCE_LINE) in finding.message
    # The non-finite update was never applied: weights are finite and the steps before it trained.
    after = [v.numpy() for v in trainer.model.trainable_variables]
    assert all(np.isfinite(w).all() for w in after)
    assert bad_batch == 0 or any(not np.array_equal(a, b) for a, b in zip(after, before, strict=False))


def test_skip_batch_completes_and_records_skipped_batches(tmp_path: Path, step_settings) -> None:
    trainer, bad_batch = make_trainer(tmp_path, "skip_batch", step_settings=step_settings)
    result = trainer.fit()
    assert result.epochs_run == 2
    assert all(np.isfinite(v.numpy()).all() for v in trainer.model.trainable_variables)
    (finding,) = [f for f in result.findings if f.code == "TRAIN-SKIPPED-BATCHES"]
    skipped = finding.evidence["skipped_batches"]
    assert [(s["epoch"], s["batch_index"]) for s in skipped] == [(0, bad_batch), (1, bad_batch)]
    assert finding.evidence["op"] == "Log"
    assert np.isfinite(result.history[-1]["loss"])


def test_skip_batch_retry_limit_counts_bad_batches_in_a_row(tmp_path: Path, step_settings) -> None:
    # One bad batch per epoch: never two in a row, so a limit of 1 lets every epoch train.
    trainer, _ = make_trainer(tmp_path / "one", "skip_batch", max_retries=1, step_settings=step_settings)
    result = trainer.fit()
    assert [e.action for e in trainer.guard.events] == ["skipped", "skipped"] and len(result.history) == 2
    trainer, _ = make_trainer(tmp_path / "none", "skip_batch", max_retries=0, step_settings=step_settings)
    with pytest.raises(TrainError, match="non-finite.*in a row"):
        trainer.fit()
    (finding,) = [f for f in trainer.findings if f.code == "TRAIN-NONFINITE"]
    assert "nan_max_retries=0" in finding.message


def test_rollback_restores_checkpoint_and_leaves_batch_out(tmp_path: Path, step_settings) -> None:
    trainer, bad_batch = make_trainer(tmp_path, "rollback", max_retries=2, step_settings=step_settings)
    result = trainer.fit()
    assert [e.action for e in trainer.guard.events] == ["rolled_back", "rolled_back"]
    assert [e.epoch for e in trainer.guard.events] == [0, 1]
    assert [h["epoch"] for h in result.history] == [0, 1]
    assert all(np.isfinite(v.numpy()).all() for v in trainer.model.trainable_variables)


def assert_trained_alike(reference, other) -> None:
    """Same NaN events at the same steps, same logged epochs and losses, same weights."""
    (plain, plain_result), (xla, xla_result) = reference, other
    assert [(e.epoch, e.batch_index, e.global_step) for e in xla.guard.events] == [
        (e.epoch, e.batch_index, e.global_step) for e in plain.guard.events
    ]
    assert [h["step"] for h in xla_result.history] == [h["step"] for h in plain_result.history]
    for a, b in zip(plain_result.history, xla_result.history, strict=True):
        np.testing.assert_allclose(a["loss"], b["loss"], rtol=1e-4)
    for a, b in zip(plain.model.variables, xla.model.variables, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_skipping_a_bad_batch_trains_the_same_with_xla_calls_as_step_by_step(tmp_path: Path) -> None:
    """The replayed good steps of a call are the steps that step-by-step training applies: same
    weights, same logged epochs, the bad batch skipped at the same place, in every epoch."""
    runs = []
    for settings, name in zip(SETTINGS, IDS, strict=True):
        trainer, bad_batch = make_trainer(tmp_path / name, "skip_batch", step_settings=settings)
        result = trainer.fit()
        runs.append((trainer, result))
    assert bad_batch % 4 != 0  # the bad step is inside a call: good steps before it are replayed
    (plain, plain_result), *call_runs = runs
    assert runs[3][0].steps.stacks_batches
    for xla, xla_result in call_runs:
        assert_trained_alike((plain, plain_result), (xla, xla_result))


def test_a_nonfinite_gradient_under_a_finite_loss_is_found_and_skipped_alike(tmp_path: Path) -> None:
    """In calls of several steps without clipping (which needs every step's norm), steps whose
    norm is not logged check only their loss; the call checks the weights and optimizer slots
    once at its end, and when a gradient left them non-finite it restores its start and is run
    again checking every gradient (step.py, runner.py). The batch found, the events, history and
    weights must equal step-by-step's."""
    runs = []
    for settings, name in zip(SETTINGS, IDS, strict=True):
        trainer, bad_batch = make_trainer(
            tmp_path / name, "skip_batch", step_settings=settings, poison=GradientLog, clip_norm=None
        )
        runs.append((trainer, trainer.fit()))
    (plain, plain_result), *call_runs = runs
    assert [(e.epoch, e.batch_index) for e in plain.guard.events] == [(0, bad_batch), (1, bad_batch)]
    for xla, xla_result in call_runs:
        # The deferred check ran and failed, and the locating function found the step.
        assert xla.steps._defers_gradient_check
        assert any(deferred for (_, _, deferred) in xla.steps._train_functions)
        assert any(not deferred for (_, _, deferred) in xla.steps._train_functions)
        assert_trained_alike((plain, plain_result), (xla, xla_result))


def test_a_weight_that_is_never_finite_turns_the_deferred_check_off(tmp_path: Path) -> None:
    """The deferred check would flag every call of a model that keeps an infinite weight, and
    checking every step finds nothing: the runner then checks every step from the next call on
    instead of running each call twice. Training is the same as step-by-step's."""
    runs = []
    for settings in (SETTINGS[0], SETTINGS[1], SETTINGS[2]):
        trainer, _ = make_trainer(
            tmp_path / str(settings), "stop", step_settings=settings, poison=InfiniteBound, clip_norm=None
        )
        # Nothing is poisoned for this layer: it takes no logs, the -5.0 input is just a number.
        runs.append((trainer, trainer.fit()))
    (plain, plain_result), *call_runs = runs
    assert not plain.guard.events
    for trainer, result in call_runs:
        assert not trainer.steps.defer_gradient_check
        assert_trained_alike((plain, plain_result), (trainer, result))
