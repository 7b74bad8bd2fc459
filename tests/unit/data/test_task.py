"""Task inference: a regression target trains as a regression under `auto`, not as 214 classes."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tfpilot.data.task import check_task, infer_task
from tfpilot.errors import ConfigError


def test_infer_task_on_sklearn_targets() -> None:
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris

    assert infer_task(load_diabetes().target).task == "regression"  # 214 distinct integer-valued floats
    assert infer_task([f"{v:.1f}" for v in load_diabetes().target]).task == "regression"  # as CSV cells
    assert infer_task(load_breast_cancer().target).task == "binary"
    assert infer_task(load_iris().target).task == "multiclass"
    assert infer_task(["cat", "dog", "cat", "bird"]).task == "multiclass"
    assert infer_task(np.array([0.5, 1.25, 3.0, 0.5])).task == "regression"
    assert infer_task(np.array([0.0, 1.0, 1.0, 0.0])).task == "binary"  # float 0/1 labels are classes


def test_check_task_trains_regression_under_auto_and_refuses_text_targets() -> None:
    values = np.linspace(0.0, 10.0, 200)
    assert check_task("auto", label_values=values, num_classes=200).evidence["task"] == "regression"
    finding = check_task("multiclass", label_values=values, num_classes=200)  # the user said so
    assert finding.evidence["task"] == "multiclass"
    with pytest.raises(ConfigError, match="not numbers") as raised:
        check_task("regression", label_values=np.array(["a", "b", "c"]), num_classes=3)
    assert raised.value.exit_code == 2


def test_check_task_binary_needs_two_classes_and_auto_reports_its_choice() -> None:
    with pytest.raises(ConfigError, match="exactly 2"):
        check_task("binary", label_values=np.array(["a", "b", "c"]), num_classes=3)
    finding = check_task("auto", label_values=np.array(["yes", "no", "yes"]), num_classes=2)
    assert finding.code == "DATA-TASK" and finding.evidence["task"] == "binary"
    assert check_task("auto", label_values=None, num_classes=10).evidence["task"] == "multiclass"


def test_diabetes_csv_trains_as_regression(tmp_path: Path) -> None:
    from sklearn.datasets import load_diabetes

    from tfpilot.config import config_from_dict
    from tfpilot.workflow import train_run

    diabetes = load_diabetes()
    path = tmp_path / "diabetes.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([*diabetes.feature_names, "progression"])
        writer.writerows([*row, target] for row, target in zip(diabetes.data, diabetes.target, strict=True))
    config = config_from_dict(
        {
            "name": "diabetes",
            "runs_dir": str(tmp_path / "runs"),
            "data": {"kind": "csv", "path": str(path), "csv": {"label_column": "progression"}},
            "train": {"epochs": 15, "batch_size": 32, "optimizer": {"learning_rate": 0.003}},
        }
    )
    trainer, _ = train_run(config)
    metrics = trainer.final_metrics()
    assert set(metrics["test"]) >= {"loss", "mae", "rmse"} and "accuracy" not in metrics["test"]
    assert metrics["class_names"] == ["progression"]
    # Standardised targets: a trained model beats predicting the training mean (MAE ~64 on diabetes).
    assert metrics["test"]["mae"] < 64.0
