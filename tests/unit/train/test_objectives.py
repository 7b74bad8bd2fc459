"""train.loss / train.metrics / train.class_weight from config, and the early-stopping monitor,
checked when the config loads and honoured inside the compiled step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from test_trainer_basic import read_events

from tfpilot.config import config_from_dict, load_config
from tfpilot.errors import ConfigError


def raw_config(tmp_path: Path, *, task: str = "auto", **train: Any) -> dict[str, Any]:
    return {
        "name": "objectives",
        "runs_dir": str(tmp_path / "runs"),
        "data": {"kind": "arrays", "shuffle_buffer": 0, "split": {"validation": 0.2, "test": 0.2, "seed": 0}},
        "model": {"task": task, "hidden_units": [16], "dropout": 0.0},
        "train": {"epochs": 2, "batch_size": 16, "histogram_every_epochs": 0, "early_stopping": None, **train},
        "export": {"enabled": False},
    }


def binary_data(rows: int = 240, *, positive_share: float = 0.5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = (rng.random(rows) < positive_share).astype(np.int32)
    features = (rng.normal(size=(rows, 4)) + labels[:, None] * 1.5).astype(np.float32)
    return features, labels


def test_unknown_names_are_one_line_config_errors_listing_the_valid_names(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        config_from_dict(raw_config(tmp_path, loss="cross_entropy"))
    message = str(raised.value)
    assert "`train.loss` `cross_entropy` is not a loss" in message and "binary_crossentropy" in message
    assert "\n" not in message and raised.value.exit_code == 2
    with pytest.raises(ConfigError, match=r"`train.metrics.1` `acc` is not a metric for model.task auto.*'auc'"):
        config_from_dict(raw_config(tmp_path, metrics=["auc", "acc"]))
    # The task is explicit: a classifier's metric is refused for a regression, naming the regression's.
    with pytest.raises(ConfigError, match=r"`auc` is not a metric for model.task regression.*'r2'"):
        config_from_dict(raw_config(tmp_path, task="regression", metrics=["auc"]))
    with pytest.raises(ConfigError, match="not a loss for model.task multiclass"):
        config_from_dict(raw_config(tmp_path, task="multiclass", loss="binary_crossentropy"))
    with pytest.raises(ConfigError, match="package.module:function"):
        config_from_dict(raw_config(tmp_path, loss="my module:fn"))
    with pytest.raises(ConfigError, match="has no classes to weigh"):
        config_from_dict(raw_config(tmp_path, task="multilabel", class_weight="balanced"))
    with pytest.raises(ConfigError, match="`balanced` or a mapping"):
        config_from_dict(raw_config(tmp_path, class_weight="equal"))
    assert config_from_dict(raw_config(tmp_path, loss="mse", task="regression")).train.loss == "mse"


def test_early_stopping_monitor_is_checked_against_logged_names_at_load(tmp_path: Path) -> None:
    stopping = {"monitor": "val_acc", "patience": 2}
    path = tmp_path / "run.yaml"
    path.write_text(
        "data: {kind: arrays}\nmodel: {task: binary}\ntrain:\n  epochs: 3\n  early_stopping:\n    monitor: val_acc\n"
    )
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    message = str(raised.value)
    # The file line of the key, the key, and what is logged for a binary task.
    assert f"{path}:6: `train.early_stopping.monitor` `val_acc` is not logged for model.task binary" in message
    assert "'val_auc'" in message and "'val_mae'" not in message
    with pytest.raises(ConfigError, match="not logged"):
        config_from_dict(raw_config(tmp_path, task="regression", early_stopping={"monitor": "val_accuracy"}))
    for task, monitor in (("binary", "val_auc"), ("regression", "val_rmse"), ("auto", "val_auc"), ("auto", "loss")):
        config_from_dict(raw_config(tmp_path, task=task, early_stopping={**stopping, "monitor": monitor}))
    # A configured metric is logged too, under its own (or its function's) name.
    config_from_dict(raw_config(tmp_path, metrics=["prc"], early_stopping={**stopping, "monitor": "val_prc"}))
    config_from_dict(
        raw_config(
            tmp_path,
            metrics=["_custom_objectives:mean_probability"],
            early_stopping={"monitor": "val_mean_probability"},
        )
    )


def test_early_stopping_minimises_errors_and_maximises_scores() -> None:
    from tfpilot.config.schema import EarlyStoppingConfig
    from tfpilot.train import EarlyStopping

    assert EarlyStopping(EarlyStoppingConfig(monitor="val_mae")).mode == "min"
    assert EarlyStopping(EarlyStoppingConfig(monitor="val_rmse")).mode == "min"
    assert EarlyStopping(EarlyStoppingConfig(monitor="val_auc")).mode == "max"
    assert EarlyStopping(EarlyStoppingConfig(monitor="val_r2")).mode == "max"
    assert EarlyStopping(EarlyStoppingConfig(monitor="val_mean_probability", mode="min")).mode == "min"


def test_configured_metrics_update_in_the_step_reset_each_epoch_and_reach_every_log(tmp_path: Path) -> None:
    from tfpilot.workflow import train_run

    features, labels = binary_data()
    config = config_from_dict(
        raw_config(
            tmp_path,
            epochs=3,
            summary_every_steps=1,
            steps_per_execution=4,
            metrics=["precision", "recall", "prc", "auc", "_custom_objectives:ExampleCount"],
        )
    )
    trainer, result = train_run(config, features=features, labels=labels)
    history = result.history
    train_rows, validation_rows = trainer.pipeline.num_examples("train"), trainer.pipeline.num_examples("validation")
    for row in history:
        assert {"accuracy", "auc", "precision", "recall", "prc"} <= set(row)
        assert {"val_precision", "val_recall", "val_prc", "val_ExampleCount"} <= set(row)
        # Reset every epoch: each epoch counts its own examples, not the running total.
        assert row["ExampleCount"] == train_rows
        assert row["val_ExampleCount"] == validation_rows
    assert list(row).count("auc") == 1  # the task's own auc, not a second one
    metrics = json.loads((config.run_path / "metrics.json").read_text())
    assert {"precision", "recall", "prc", "ExampleCount"} <= set(metrics["test"])
    assert metrics["test"]["ExampleCount"] == trainer.pipeline.num_examples("test")
    events = read_events(config.run_path / "logs" / "train")
    tags = {tag for plugin in events.values() for tag in plugin}
    assert {"epoch_precision", "epoch_prc", "precision"} <= tags
    validation = read_events(config.run_path / "logs" / "validation")
    assert "prc" in {tag for plugin in validation.values() for tag in plugin}
    # The values are Keras' own on the same predictions.
    import keras

    x, y = trainer.pipeline.arrays("test")
    probability = tf.sigmoid(trainer.model(x)[:, 0]).numpy()
    keras_precision = keras.metrics.Precision()
    keras_precision.update_state(y[:, None], probability[:, None])
    assert metrics["test"]["precision"] == pytest.approx(float(keras_precision.result()), abs=1e-6)


def test_custom_loss_function_is_used_in_the_step(tmp_path: Path) -> None:
    from tfpilot.data import build_pipeline
    from tfpilot.data.task import apply_task
    from tfpilot.train import Trainer
    from tfpilot.train.heads import BinaryHead

    features, labels = binary_data(120)
    config = config_from_dict(
        raw_config(
            tmp_path,
            task="binary",
            loss="_custom_objectives:logistic_loss",
            metrics=["_custom_objectives:mean_probability"],
        )
    )
    pipeline = build_pipeline(config.data, batch_size=16, features=features, labels=labels)
    apply_task(pipeline, "binary", config)
    trainer = Trainer(config, pipeline=pipeline)
    assert trainer.head.loss_spec == "_custom_objectives:logistic_loss"
    z = tf.constant(np.linspace(-3, 3, 16, dtype=np.float32)[:, None])
    y = tf.constant((np.arange(16) % 2).astype(np.int32))
    # log(1 + exp(-s z)) is binary cross-entropy from logits: the same numbers as the task's own loss.
    np.testing.assert_allclose(
        trainer.head.per_example_loss(y, z).numpy(), BinaryHead().per_example_loss(y, z).numpy(), rtol=1e-5
    )
    result = trainer.fit()
    assert result.history[-1]["loss"] < result.history[0]["loss"]
    x, _ = pipeline.arrays("validation")
    assert result.history[-1]["val_mean_probability"] == pytest.approx(
        float(np.mean(tf.sigmoid(trainer.model(x)).numpy())), abs=1e-5
    )


def test_keras_named_loss_for_a_regression(tmp_path: Path) -> None:
    from tfpilot.workflow import train_run

    rng = np.random.default_rng(0)
    features = rng.normal(size=(300, 3)).astype(np.float32)
    target = (features @ np.array([3.0, -2.0, 1.0]) + 50.0 + rng.normal(scale=0.1, size=300)).astype(np.float32)
    config = config_from_dict(
        raw_config(
            tmp_path,
            task="regression",
            epochs=25,
            loss="huber",
            metrics=["r2", "mape"],
            optimizer={"learning_rate": 0.01},
            early_stopping={"monitor": "val_mae", "patience": 30},
        )
    )
    trainer, result = train_run(config, features=features, labels=target)
    assert trainer.head.loss_spec == "huber"
    last = result.history[-1]
    assert {"mae", "rmse", "r2", "mape", "val_r2"} <= set(last)
    assert last["val_r2"] > 0.9, last
    # Early stopping on val_mae kept the epoch with the smallest error.
    best = min(range(len(result.history)), key=lambda i: result.history[i]["val_mae"])
    assert result.best_epoch == result.history[best]["epoch"]


def test_class_weights_balanced_and_by_name_weigh_the_training_loss(tmp_path: Path) -> None:
    from tfpilot.data import build_pipeline
    from tfpilot.data.task import apply_task
    from tfpilot.train import Trainer

    features, labels = binary_data(300, positive_share=0.2)
    names = np.array(["benign", "malignant"])[labels]
    config = config_from_dict(raw_config(tmp_path, task="binary", class_weight="balanced"))
    pipeline = build_pipeline(
        config.data, batch_size=16, features=features, labels=labels, class_names=["benign", "malignant"]
    )
    apply_task(pipeline, "binary", config)
    trainer = Trainer(config, pipeline=pipeline)
    train_labels = labels[pipeline.indices["train"]]
    counts = np.bincount(train_labels, minlength=2)
    expected = train_labels.size / (2 * counts)
    np.testing.assert_allclose(trainer.steps.class_weights.numpy(), expected, rtol=1e-6)
    finding = [f for f in trainer.findings if f.code == "TRAIN-CLASS-WEIGHT"][0]
    assert finding.evidence["counts"] == counts.tolist() and "benign" in finding.message
    assert names.size == labels.size

    x, y = next(iter(pipeline.train()))
    loss, logits, per_example, _ = trainer.steps.loss_and_gradients(x, y)
    unweighted = trainer.head.per_example_loss(y, logits).numpy()
    np.testing.assert_allclose(per_example.numpy(), unweighted * expected[y.numpy()], rtol=1e-5)
    # Evaluation is unweighted (as Keras fit's class_weight).
    _, _, eval_per_example, _ = trainer.steps.loss_and_gradients(x, y, training=False)
    np.testing.assert_allclose(eval_per_example.numpy(), unweighted, rtol=1e-5)

    by_name = config_from_dict(raw_config(tmp_path, task="binary", class_weight={"malignant": 4}))
    trainer = Trainer(by_name, pipeline=pipeline)
    np.testing.assert_allclose(trainer.steps.class_weights.numpy(), [1.0, 4.0])
    wrong = config_from_dict(raw_config(tmp_path, task="binary", class_weight={"cancer": 4}))
    with pytest.raises(ConfigError, match=r"names \['cancer'\].*'benign', 'malignant'"):
        Trainer(wrong, pipeline=pipeline)


def test_yaml_class_weight_with_integer_keys(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("data: {kind: arrays}\ntrain: {class_weight: {0: 1, 1: 2.5}}\n")
    assert load_config(path).train.class_weight == {"0": 1.0, "1": 2.5}
