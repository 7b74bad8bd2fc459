"""Binary task: one sigmoid logit, binary cross-entropy, accuracy + AUC; served as two class probabilities."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfpilot.train.heads import BinaryHead


def write_breast_cancer(path: Path) -> Path:
    """scikit-learn's breast_cancer under its own column names, the target as `diagnosis` (0/1)."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([*data.feature_names, "diagnosis"])
        writer.writerows([*row, int(target)] for row, target in zip(data.data, data.target, strict=True))
    return path


def test_binary_head_loss_is_keras_binary_crossentropy_from_logits() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(64, 1)).astype(np.float32)
    labels = rng.integers(0, 2, 64).astype(np.int32)
    head = BinaryHead()
    ours = head.per_example_loss(tf.constant(labels), tf.constant(logits)).numpy()
    keras_loss = keras.losses.binary_crossentropy(labels[:, None].astype(np.float32), logits, from_logits=True)
    np.testing.assert_allclose(ours, keras.ops.convert_to_numpy(keras_loss), rtol=1e-5, atol=1e-6)
    smoothed = BinaryHead(label_smoothing=0.2).per_example_loss(tf.constant(labels), tf.constant(logits)).numpy()
    keras_smoothed = keras.losses.binary_crossentropy(
        labels[:, None].astype(np.float32), logits, from_logits=True, label_smoothing=0.2
    )
    np.testing.assert_allclose(smoothed, keras.ops.convert_to_numpy(keras_smoothed), rtol=1e-5, atol=1e-6)
    metrics = head.evaluate_arrays(labels, logits)
    assert set(metrics) == {"loss", "accuracy", "auc"}
    assert metrics["accuracy"] == pytest.approx(float(np.mean((logits[:, 0] > 0) == labels)))
    np.testing.assert_array_equal(head.predicted_classes(logits), (logits[:, 0] > 0).astype(int))


@pytest.fixture(scope="module")
def breast_cancer_run(tmp_path_factory: pytest.TempPathFactory):
    from tfpilot.config import config_from_dict
    from tfpilot.workflow import train_run

    root = tmp_path_factory.mktemp("binary")
    config = config_from_dict(
        {
            "name": "breast_cancer",
            "runs_dir": str(root / "runs"),
            "data": {
                "kind": "csv",
                "path": str(write_breast_cancer(root / "bc.csv")),
                "csv": {"label_column": "diagnosis"},
            },
            "model": {"hidden_units": [32]},
            "train": {"epochs": 12, "batch_size": 32, "histogram_every_epochs": 0},
            "export": {"signatures": ["serving_default", "classify", "regress", "logits"]},
        }
    )
    trainer, result = train_run(config)
    return config, trainer, result


def test_breast_cancer_trains_as_binary_with_one_logit(breast_cancer_run) -> None:
    config, trainer, result = breast_cancer_run
    assert trainer.head.task == "binary"
    assert trainer.model.outputs[0].shape[-1] == 1  # one sigmoid logit, not two softmax logits
    assert {"loss", "accuracy", "auc", "val_loss", "val_accuracy", "val_auc"} <= set(result.history[-1])
    metrics = json.loads((config.run_path / "metrics.json").read_text())
    assert metrics["class_names"] == ["0", "1"]
    test = metrics["test"]
    assert test["accuracy"] > 0.9 and test["auc"] > 0.95, test
    confusion = np.asarray(test["confusion_matrix"])
    assert confusion.shape == (2, 2) and confusion.sum() == test["examples"]
    assert np.trace(confusion) / confusion.sum() == pytest.approx(test["accuracy"], abs=1e-6)
    preprocessing = json.loads((config.run_path / "preprocessing.json").read_text())
    assert preprocessing["extra"]["task"] == "binary"
    findings = json.loads((config.run_path / "findings.json").read_text())
    task = [f for f in findings if f["code"] == "DATA-TASK"]
    assert task and task[0]["evidence"]["task"] == "binary"


def test_binary_run_reloads_exports_and_serves_two_class_probabilities(breast_cancer_run) -> None:
    from tfpilot.export import read_contract, run_with_session_loader, to_examples
    from tfpilot.workflow import evaluate_run, export_run, load_trained, sample_features

    config, trainer, _ = breast_cancer_run
    trained = load_trained(config.run_path)  # a fresh rebuild from the run directory
    assert trained.model.outputs[0].shape[-1] == 1
    evaluated = evaluate_run(trained)
    assert evaluated["accuracy"] == pytest.approx(trainer.final_metrics()["test"]["accuracy"], abs=1e-6)
    assert "auc" in evaluated
    summary = export_run(trained, formats=["saved_model", "tflite"])
    path = Path(summary["saved_model"])
    features = sample_features(trained, count=8)
    predict = run_with_session_loader(path, features)
    probabilities = predict["probabilities"]
    assert probabilities.shape == (8, 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-6)
    # P(class 1) is the sigmoid of the model's one logit, computed from the same preprocessed rows.
    logit = trained.model(trained.pipeline.preprocessor({k: tf.constant(v) for k, v in features.items()}))
    np.testing.assert_allclose(probabilities[:, 1], tf.sigmoid(logit[:, 0]).numpy(), atol=1e-5)
    np.testing.assert_array_equal(predict["class_id"], (probabilities[:, 1] > 0.5).astype(np.int64))
    examples = {"inputs": np.array(to_examples(features), dtype=object)}
    classify = run_with_session_loader(path, examples, signature="classify")
    np.testing.assert_allclose(classify["scores"], probabilities, atol=1e-6)
    regress = run_with_session_loader(path, examples, signature="regress")
    np.testing.assert_allclose(regress["outputs"], probabilities[:, 1], atol=1e-6)
    logits = run_with_session_loader(path, features, signature="logits")["logits"]
    np.testing.assert_allclose(tf.nn.softmax(logits).numpy(), probabilities, atol=1e-6)
    contract = read_contract(path)
    assert contract["labels"] == ["0", "1"] and contract["num_model_outputs"] == 1
    assert contract["outputs"]["probabilities"]["shape"] == [-1, 2]
    # TFLite runs the two-class logits [0, z]: parity against the SavedModel holds.
    tflite = [row for row in summary["formats"]["parity"] if row["format"] == "tflite"][0]
    assert tflite["argmax_agreement"] >= 0.99 and tflite["max_abs_diff"] < 1e-4, tflite


def test_explicit_multiclass_keeps_two_softmax_logits(tmp_path: Path) -> None:
    from tfpilot.config import config_from_dict
    from tfpilot.data import build_pipeline
    from tfpilot.data.task import apply_task, check_task
    from tfpilot.train import Trainer

    rng = np.random.default_rng(0)
    features = rng.normal(size=(120, 3)).astype(np.float32)
    labels = (features[:, 0] > 0).astype(np.int32)
    config = config_from_dict(
        {
            "name": "two",
            "runs_dir": str(tmp_path),
            "data": {"kind": "arrays"},
            "model": {"task": "multiclass", "hidden_units": [8]},
            "train": {"epochs": 1, "early_stopping": None, "histogram_every_epochs": 0},
        }
    )
    pipeline = build_pipeline(config.data, batch_size=32, features=features, labels=labels)
    task = check_task("multiclass", label_values=pipeline.source.label_values, num_classes=2)
    apply_task(pipeline, task.evidence["task"], config)
    trainer = Trainer(config, pipeline=pipeline)
    assert trainer.head.task == "classification" and trainer.model.outputs[0].shape[-1] == 2
