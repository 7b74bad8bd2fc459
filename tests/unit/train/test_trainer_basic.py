"""Foundation behaviour of the Trainer on tiny in-memory datasets: learning, clipping, per-epoch
metrics, early stopping with best-weight restore, TensorBoard events and checkpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfpilot.config import config_from_dict
from tfpilot.data import build_pipeline, split_indices
from tfpilot.rundir import RunDir
from tfpilot.train import Trainer, TrainHook

NUM = 240


def blobs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three well-separated 2-D Gaussian blobs."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, NUM)
    centres = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])
    return (centres[labels] + rng.normal(scale=0.6, size=(NUM, 2))).astype(np.float32), labels


def make_trainer(tmp_path: Path, *, features=None, labels=None, hooks=None, **train: Any) -> Trainer:
    train = {"epochs": 4, "batch_size": 32, "early_stopping": None, "summary_every_steps": 2, **train}
    raw = {
        "name": "unit",
        "runs_dir": str(tmp_path / "runs"),
        "data": {
            "kind": "arrays",
            "shuffle_buffer": train.pop("shuffle_buffer", 256),
            "split": {"validation": 0.2, "test": 0.1, "seed": 0},
        },
        "model": {"name": "mlp", "hidden_units": [16], "dropout": 0.0},
        "train": train,
    }
    config = config_from_dict(raw)
    if features is None:
        features, labels = blobs()
    pipeline = build_pipeline(
        config.data, batch_size=config.train.batch_size, seed=config.train.seed, features=features, labels=labels
    )
    return Trainer(config, pipeline=pipeline, run=RunDir.at(config.run_path), hooks=hooks)


def mean_loss(model: keras.Model, features: np.ndarray, labels: np.ndarray) -> float:
    logits = model(features, training=False)
    return float(
        tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels.astype(np.int32), logits=logits))
    )


def read_events(directory: Path) -> dict[str, dict[str, list[tuple[int, Any]]]]:
    """plugin -> tag -> [(step, value)] from every TF2 summary event file under ``directory``."""
    found: dict[str, dict[str, list[tuple[int, Any]]]] = {}
    for path in sorted(directory.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                plugin = value.metadata.plugin_data.plugin_name
                found.setdefault(plugin, {}).setdefault(value.tag, []).append(
                    (event.step, tf.make_ndarray(value.tensor))
                )
    return found


class WeightRecorder(TrainHook):
    def __init__(self) -> None:
        self.model: keras.Model | None = None
        self.at_epoch_begin: list[list[np.ndarray]] = []
        self.at_epoch_end: list[list[np.ndarray]] = []

    def on_epoch_begin(self, *, epoch: int) -> None:
        self.at_epoch_begin.append([np.array(w) for w in self.model.get_weights()])

    def on_epoch_end(self, *, epoch: int, logs: dict[str, float]) -> None:
        self.at_epoch_end.append([np.array(w) for w in self.model.get_weights()])


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory):
    tmp_path = tmp_path_factory.mktemp("trained")
    trainer = make_trainer(
        tmp_path, epochs=5, optimizer={"learning_rate": 0.02}, histogram_every_epochs=2, checkpoint_every_steps=3
    )
    result = trainer.fit()
    return trainer, result


def test_training_reduces_loss_and_learns(trained) -> None:
    trainer, result = trained
    losses = [row["loss"] for row in result.history]
    assert result.epochs_run == 5 and not result.stopped_early
    assert losses[-1] < 0.5 * losses[0], losses
    assert result.history[-1]["val_accuracy"] >= 0.9
    assert result.global_step == 5 * trainer.steps_per_epoch == 5 * 6  # 168 training examples, batch 32
    metrics = trainer.final_metrics()
    assert set(metrics) == {"train", "validation", "test", "class_names"}
    assert metrics["test"]["accuracy"] >= 0.9 and metrics["test"]["examples"] == 24
    assert np.asarray(metrics["test"]["confusion_matrix"]).sum() == 24


def test_tensorboard_events_hold_scalars_and_histograms(trained) -> None:
    trainer, result = trained
    train_events = read_events(trainer.run.train_logs)
    scalars = train_events["scalars"]
    for tag in ("loss", "accuracy", "learning_rate", "grad_norm", "steps_per_second", "epoch_loss"):
        assert tag in scalars, f"missing scalar {tag}: {sorted(scalars)}"
    assert len(scalars["loss"]) >= 30 // 2 - 1  # every summary_every_steps=2 steps
    np.testing.assert_allclose(float(scalars["learning_rate"][0][1]), 0.02, rtol=1e-6)
    assert all(float(value) > 0 for _, value in scalars["grad_norm"])
    histograms = train_events["histograms"]
    weights = [tag for tag in histograms if tag.startswith("weights/")]
    gradients = [tag for tag in histograms if tag.startswith("gradients/")]
    assert len(weights) == len(trainer.model.trainable_variables) == len(gradients) == 4
    # histogram_every_epochs=2 over 5 epochs: after epochs 2 and 4.
    assert [step for step, _ in histograms[weights[0]]] == [12, 24]
    validation = read_events(trainer.run.validation_logs)["scalars"]
    assert [step for step, _ in validation["loss"]] == [6, 12, 18, 24, 30]
    np.testing.assert_allclose(
        [float(v) for _, v in validation["loss"]], [row["val_loss"] for row in result.history], rtol=1e-6
    )


def test_checkpoints_exist(trained) -> None:
    trainer, _ = trained
    checkpoints = trainer.run.checkpoints
    assert (checkpoints / "checkpoint").is_file()
    assert (checkpoints / "trainer_state.json").is_file()
    steps = sorted(int(p.name[len("ckpt-") : -len(".index")]) for p in checkpoints.glob("ckpt-*.index"))
    assert steps == [24, 27, 30]  # max_checkpoints=3: the newest epoch and every-3-step checkpoints
    assert tf.train.latest_checkpoint(str(checkpoints)).endswith("ckpt-30")
    reader = tf.train.load_checkpoint(str(checkpoints))
    assert reader.get_tensor("global_step/.ATTRIBUTES/VARIABLE_VALUE") == 30
    assert reader.get_tensor("epoch/.ATTRIBUTES/VARIABLE_VALUE") == 5


def test_gradient_clipping_logs_norm_and_clips_update(tmp_path: Path) -> None:
    """One full-batch SGD step: logged grad_norm is the unclipped norm; the update norm is lr * clip_norm."""
    learning_rate, clip_norm = 0.5, 0.01
    results = {}
    for clip in (clip_norm, None):
        trainer = make_trainer(
            tmp_path / str(clip),
            epochs=1,
            batch_size=512,
            shuffle_buffer=0,
            clip_norm=clip,
            histogram_every_epochs=0,
            optimizer={"name": "sgd", "momentum": 0.0, "learning_rate": learning_rate},
        )
        before = [np.array(w) for w in trainer.model.trainable_variables]
        features, labels = trainer.pipeline.arrays("train")
        with tf.GradientTape() as tape:
            logits = trainer.model(features, training=True)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        expected_norm = float(tf.linalg.global_norm(tape.gradient(loss, trainer.model.trainable_variables)))
        result = trainer.fit()
        after = [np.array(w) for w in trainer.model.trainable_variables]
        update_norm = float(np.sqrt(sum(np.sum((a - b) ** 2) for a, b in zip(after, before, strict=False))))
        results[clip] = (result.history[0]["grad_norm"], expected_norm, update_norm)
    logged, expected, update = results[clip_norm]
    assert expected > clip_norm * 10  # clipping is really active
    np.testing.assert_allclose(logged, expected, rtol=1e-4)
    np.testing.assert_allclose(update, learning_rate * clip_norm, rtol=1e-3)
    logged, expected, update = results[None]
    np.testing.assert_allclose(update, learning_rate * expected, rtol=1e-3)


def test_metrics_are_reset_every_epoch(tmp_path: Path) -> None:
    """Each epoch's loss is the loss of that epoch only (full batch: at the weights the epoch began with)."""
    recorder = WeightRecorder()
    trainer = make_trainer(
        tmp_path,
        epochs=3,
        batch_size=512,
        shuffle_buffer=0,
        histogram_every_epochs=0,
        hooks=[recorder],
        optimizer={"name": "sgd", "momentum": 0.0, "learning_rate": 1.0},
        clip_norm=None,
    )
    recorder.model = trainer.model
    result = trainer.fit()
    features, labels = trainer.pipeline.arrays("train")
    val_features, val_labels = trainer.pipeline.arrays("validation")
    probe = keras.models.clone_model(trainer.model)
    expected, expected_val = [], []
    for begin, end in zip(recorder.at_epoch_begin, recorder.at_epoch_end, strict=False):
        probe.set_weights(begin)
        expected.append(mean_loss(probe, features, labels))
        probe.set_weights(end)
        expected_val.append(mean_loss(probe, val_features, val_labels))
    logged = [row["loss"] for row in result.history]
    assert expected[0] - expected[2] > 0.05, expected  # it learns, so an accumulated mean would differ
    np.testing.assert_allclose(logged, expected, rtol=1e-5)
    np.testing.assert_allclose([row["val_loss"] for row in result.history], expected_val, rtol=1e-5)


def test_early_stopping_stops_and_restores_best(tmp_path: Path) -> None:
    """Validation labels contradict training labels: validation loss is best after the first epoch."""
    rng = np.random.default_rng(1)
    features = rng.normal(size=(NUM, 2)).astype(np.float32)
    labels = (features[:, 0] > 0).astype(int)
    split = split_indices(NUM, validation=0.2, test=0.1, seed=0)
    labels[split["validation"]] = 1 - labels[split["validation"]]
    recorder = WeightRecorder()
    trainer = make_trainer(
        tmp_path,
        features=features,
        labels=labels,
        epochs=30,
        hooks=[recorder],
        histogram_every_epochs=0,
        optimizer={"learning_rate": 0.05},
        early_stopping={"monitor": "val_loss", "patience": 2},
    )
    recorder.model = trainer.model
    result = trainer.fit()
    val_losses = [row["val_loss"] for row in result.history]
    best = int(np.argmin(val_losses))
    assert result.stopped_early and result.epochs_run == best + 3 < 30, val_losses
    assert result.best_epoch == best
    for restored, remembered in zip(trainer.model.get_weights(), recorder.at_epoch_end[best], strict=False):
        np.testing.assert_array_equal(restored, remembered)
    assert not all(
        np.array_equal(a, b) for a, b in zip(trainer.model.get_weights(), recorder.at_epoch_end[-1], strict=False)
    )
    np.testing.assert_allclose(trainer.evaluate("validation")["loss"], val_losses[best], rtol=1e-5)
