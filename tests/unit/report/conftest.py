"""A synthetic run directory holding every optional input of the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _epochs(count: int) -> list[dict]:
    return [
        {
            "epoch": e,
            "step": 10 * (e + 1),
            "loss": 2.0 / (e + 1),
            "accuracy": 0.5 + 0.04 * e,
            "val_loss": 2.1 / (e + 1) + 0.01 * e,
            "val_accuracy": 0.48 + 0.035 * e,
            "learning_rate": 1e-3 * (0.9**e),
            "grad_norm": 1.0 + 0.1 * e,
        }
        for e in range(count)
    ]


@pytest.fixture
def full_run(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "demo"
    (run / "exports").mkdir(parents=True)
    (run / "profile").mkdir()
    (run / "config.yaml").write_text("name: demo\ndata: {kind: arrays}\n")
    (run / "history.json").write_text(json.dumps({"epochs": _epochs(8)}))
    (run / "metrics.json").write_text(
        json.dumps(
            {
                "train": {"loss": 0.2, "accuracy": 0.95, "examples": 100},
                "test": {"loss": 0.3, "accuracy": 0.9, "examples": 30, "confusion_matrix": [[14, 1], [2, 13]]},
                "class_names": ["cat", "dog"],
            }
        )
    )
    (run / "findings.json").write_text(
        json.dumps(
            [
                {
                    "code": "DOC-INPUT-BOUND",
                    "severity": "warning",
                    "title": "Input-bound <script>alert(1)</script>",
                    "message": "input is 40% of step time",
                    "location": "runs/demo",
                    "evidence": {"input_percent": 40.0},
                    "fix": "cache",
                }
            ]
        )
    )
    (run / "exports" / "parity.json").write_text(
        json.dumps(
            [
                {
                    "format": "saved_model",
                    "path": "model/1",
                    "size_bytes": 40960,
                    "accuracy": 0.9,
                    "saved_model_accuracy": 0.9,
                    "accuracy_drop": 0.0,
                    "argmax_agreement": 1.0,
                    "max_abs_diff": 0.0,
                    "latency_ms_p50": 0.4,
                },
                {
                    "format": "tflite-int8",
                    "path": "exports/model_int8.tflite",
                    "size_bytes": 10240,
                    "accuracy": 0.89,
                    "saved_model_accuracy": 0.9,
                    "accuracy_drop": 0.01,
                    "argmax_agreement": 0.98,
                    "max_abs_diff": 0.05,
                    "latency_ms_p50": 0.1,
                },
            ]
        )
    )
    (run / "profile" / "summary.json").write_text(
        json.dumps(
            {
                "hardware_type": "CPU",
                "input_conclusion": "HIGHLY input-bound",
                "steps": {
                    "steps": 3,
                    "step_ms": 10.0,
                    "input_ms": 4.0,
                    "compute_ms": 5.0,
                    "other_ms": 1.0,
                    "input_percent": 40.0,
                    "compute_percent": 50.0,
                    "other_percent": 10.0,
                    "per_step": [
                        {"step": s, "step_ms": 10.0 + s, "input_ms": 4.0, "compute_ms": 5.0 + s} for s in range(3)
                    ],
                },
                "top_ops": [{"operation": "MatMul", "type": "MatMul", "total_self_time_ms": 3.0}],
            }
        )
    )
    (run / "drift.json").write_text(
        json.dumps(
            {
                "drifted": True,
                "drifted_features": ["image"],
                "enough_data": True,
                "num_examples": 200,
                "num_requests": 20,
                "thresholds": {"js": 0.1, "psi": 0.2, "ks_pvalue": 0.01, "linf": 0.2},
                "features": [
                    {
                        "feature": "image",
                        "kind": "image",
                        "drifted": True,
                        "reasons": ["js 0.8 > 0.1"],
                        "scores": {"js": 0.8, "psi": 5.0, "ks_statistic": 0.9, "ks_pvalue": 1e-30},
                        "bins": ["0-16", "16-32", "32-256"],
                        "reference": [0.6, 0.2, 0.2],
                        "current": [0.0, 0.1, 0.9],
                    }
                ],
                "prediction": {
                    "feature": "prediction",
                    "kind": "prediction",
                    "drifted": False,
                    "reasons": [],
                    "scores": {"js": 0.01, "psi": 0.02, "linf": 0.05},
                    "bins": ["cat", "dog"],
                    "reference": [0.5, 0.5],
                    "current": [0.55, 0.45],
                },
            }
        )
    )
    (run / "blessing.json").write_text(
        json.dumps(
            {
                "blessed": False,
                "split": "test",
                "examples": 30,
                "baseline": {"model_path": "/srv/model/1"},
                "checks": [
                    {
                        "threshold": "accuracy >= 0.95",
                        "candidate": 0.9,
                        "baseline": 0.92,
                        "observed": 0.9,
                        "passed": False,
                    }
                ],
            }
        )
    )
    return run
