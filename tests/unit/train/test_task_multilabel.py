"""Multilabel task: `a|c` label cells or 0/1 label columns, a sigmoid per label, threshold in config,
per-label probabilities served."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tfpilot.data.task import check_task, infer_task
from tfpilot.errors import ConfigError, ExportError
from tfpilot.train.heads import MultiLabelHead

LABELS = ["cold", "hot", "humid", "windy"]


def rule(features: np.ndarray) -> np.ndarray:
    """The learnable labels of each row (multi-hot over LABELS): every row is cold or hot, and may be
    humid and/or windy."""
    hot = features[:, 0] > 0
    return np.stack([~hot, hot, features[:, 1] > 0.3, features[:, 2] + features[:, 3] > 0], axis=1).astype(int)


def write_cells_csv(path: Path, *, rows: int = 600, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(rows, 4))
    truth = rule(features)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["temp", "moisture", "gust", "pressure", "weather"])
        for row, on in zip(features, truth, strict=True):
            # The order inside a cell does not matter; spaces around the separator are allowed.
            cell = " | ".join(label for label, flag in zip(LABELS, on, strict=True) if flag)
            writer.writerow([*(f"{v:.4f}" for v in row), cell])
    return path


def test_infer_task_picks_multilabel_when_the_separator_appears() -> None:
    assert infer_task(["a|b", "a", "c"], separator="|").task == "multilabel"
    assert infer_task(["a|b", "a", "c"], separator="|").num_distinct == 3
    assert infer_task(["a;b", "a"], separator="|").task == "binary"  # another separator: two classes
    assert infer_task(["a|b", "a"]).task == "binary"  # no separator given (not a CSV source)
    finding = check_task("auto", label_values=np.array(["x|y", "y", "z|x"], dtype=object), num_classes=3, separator="|")
    assert finding.evidence == {"task": "multilabel", "requested": "auto", "num_classes": 3}
    with pytest.raises(ConfigError, match="label_columns"):
        check_task("multiclass", label_values=np.array(["0", "1"]), num_classes=2, label_columns=["a", "b"])
    with pytest.raises(ConfigError, match="no label cells"):
        check_task("multilabel", label_values=None, num_classes=3)


def test_multilabel_head_loss_and_metrics() -> None:
    import keras

    rng = np.random.default_rng(1)
    logits = rng.normal(size=(32, 3)).astype(np.float32)
    labels = rng.integers(0, 2, (32, 3)).astype(np.float32)
    head = MultiLabelHead(num_labels=3, threshold=0.7)
    ours = head.per_example_loss(tf.constant(labels), tf.constant(logits)).numpy()
    expected = keras.ops.convert_to_numpy(keras.losses.binary_crossentropy(labels, logits, from_logits=True))
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
    metrics = head.evaluate_arrays(labels, logits)
    probabilities = 1 / (1 + np.exp(-logits))
    assert metrics["binary_accuracy"] == pytest.approx(float(np.mean((probabilities >= 0.7) == labels)), abs=1e-6)
    assert 0.0 <= metrics["auc"] <= 1.0
    np.testing.assert_array_equal(head.predicted_classes(logits), (probabilities >= 0.7).astype(int))


@pytest.fixture(scope="module")
def weather_run(tmp_path_factory: pytest.TempPathFactory):
    from tfpilot.config import config_from_dict
    from tfpilot.workflow import train_run

    root = tmp_path_factory.mktemp("multilabel")
    config = config_from_dict(
        {
            "name": "weather",
            "runs_dir": str(root / "runs"),
            "data": {
                "kind": "csv",
                "path": str(write_cells_csv(root / "weather.csv")),
                "csv": {"label_column": "weather"},
            },
            "model": {"hidden_units": [32], "threshold": 0.6},
            "train": {
                "epochs": 20,
                "batch_size": 32,
                "histogram_every_epochs": 0,
                "optimizer": {"learning_rate": 0.003},
            },
        }
    )
    trainer, result = train_run(config)
    return config, trainer, result


def test_label_cells_train_a_multilabel_classifier(weather_run) -> None:
    config, trainer, result = weather_run
    assert trainer.head.task == "multilabel" and trainer.model.outputs[0].shape[-1] == 4
    assert {"loss", "binary_accuracy", "auc", "val_binary_accuracy", "val_auc"} <= set(result.history[-1])
    metrics = json.loads((config.run_path / "metrics.json").read_text())
    assert metrics["class_names"] == LABELS
    test = metrics["test"]
    assert "confusion_matrix" not in test and "accuracy" not in test
    assert test["binary_accuracy"] > 0.9 and test["auc"] > 0.95, test
    extra = json.loads((config.run_path / "preprocessing.json").read_text())["extra"]
    assert extra["task"] == "multilabel"
    assert extra["multilabel"] == {"labels": LABELS, "separator": "|", "threshold": 0.6}
    report = json.loads((config.run_path / "data_report.json").read_text())
    assert json.dumps(report)  # the audit counts multi-hot rows per label without failing
    reference = json.loads((config.run_path / "reference_stats.json").read_text())
    counts = reference["labels"]["counts"]
    assert len(counts) == 4 and counts[0] + counts[1] == reference["num_examples"]  # cold xor hot


def test_multilabel_run_reloads_exports_and_serves_per_label_probabilities(weather_run) -> None:
    from tfpilot.export import read_contract, run_with_session_loader, to_examples
    from tfpilot.workflow import evaluate_run, export_run, load_trained, sample_features

    config, trainer, _ = weather_run
    trained = load_trained(config.run_path)
    np.testing.assert_array_equal(trained.pipeline.arrays("test")[1], trainer.pipeline.arrays("test")[1])
    evaluated = evaluate_run(trained)
    assert evaluated["binary_accuracy"] == pytest.approx(trainer.final_metrics()["test"]["binary_accuracy"], abs=1e-6)
    summary = export_run(trained, formats=["saved_model"])
    path = Path(summary["saved_model"])
    assert "regress" not in summary["signatures"]
    features = sample_features(trained, count=32)
    out = run_with_session_loader(path, features)
    assert set(out) == {"probabilities", "predicted"}
    probabilities = out["probabilities"]
    assert probabilities.shape == (32, 4) and np.all((probabilities >= 0) & (probabilities <= 1))
    np.testing.assert_array_equal(out["predicted"], (probabilities >= 0.6).astype(np.int64))  # model.threshold
    raw = np.stack([features[name] for name in ("temp", "moisture", "gust", "pressure")], axis=1)
    assert np.mean(out["predicted"] == rule(raw)) > 0.9  # the served labels follow the rule
    classify = run_with_session_loader(
        path, {"inputs": np.array(to_examples(features), dtype=object)}, signature="classify"
    )
    np.testing.assert_allclose(classify["scores"], probabilities, atol=1e-6)
    assert [c.decode() for c in classify["classes"][0]] == LABELS
    contract = read_contract(path)
    assert contract["labels"] == LABELS and contract["outputs"]["probabilities"]["shape"] == [-1, 4]
    with pytest.raises(ExportError, match="multilabel") as raised:
        export_run(trained, formats=["tflite"])
    assert raised.value.exit_code == 2


def test_label_columns_read_as_multilabel_and_rows_without_labels_are_kept(tmp_path: Path) -> None:
    from tfpilot.config import config_from_dict
    from tfpilot.workflow import train_run

    rng = np.random.default_rng(2)
    features = rng.normal(size=(300, 3))
    path = tmp_path / "tags.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["x", "y", "z", "tag_a", "tag_b", "tag_c"])
        for row in features:
            flags = [row[0] > 0.5, row[1] > 0.5, row[2] > 0.5]  # ~1 in 3 rows has no tag at all
            writer.writerow([*(f"{v:.4f}" for v in row), *(("1" if f else "0") for f in flags)])
    config = config_from_dict(
        {
            "name": "tags",
            "runs_dir": str(tmp_path / "runs"),
            "data": {"kind": "csv", "path": str(path), "csv": {"label_columns": ["tag_a", "tag_b", "tag_c"]}},
            "model": {"hidden_units": [16]},
            "train": {"epochs": 2, "batch_size": 32, "histogram_every_epochs": 0},
            "export": {"enabled": False},
        }
    )
    trainer, _ = train_run(config)
    pipeline = trainer.pipeline
    assert trainer.head.task == "multilabel"
    assert pipeline.class_names == ["tag_a", "tag_b", "tag_c"]
    assert set(pipeline.feature_spec) == {"x", "y", "z"}  # label columns are not inputs
    assert len(pipeline.source) == 300  # rows with no tag are examples, not bad records
    labels = pipeline.source.labels
    np.testing.assert_array_equal(labels, (features > 0.5).astype(np.float32))


def test_a_label_column_cell_that_is_not_0_or_1_is_named(tmp_path: Path) -> None:
    from tfpilot.config import config_from_dict
    from tfpilot.data import build_pipeline
    from tfpilot.errors import DataError

    path = tmp_path / "bad.csv"
    path.write_text("x,a,b\n1,1,0\n2,0,maybe\n3,1,1\n4,0,0\n")
    config = config_from_dict({"data": {"kind": "csv", "path": str(path), "csv": {"label_columns": ["a", "b"]}}})
    with pytest.raises(DataError, match=r"column `b` holds non-0/1 labels \['maybe'\]: line 3"):
        build_pipeline(config.data, batch_size=2)
