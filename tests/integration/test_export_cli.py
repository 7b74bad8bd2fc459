"""`tfpilot export RUN --format tflite-int8` on a real (small) digits run, in a fresh process."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_export_cli_int8_parity_warmup_contract(digits_folder, tmp_path, tfpilot_cli):
    from tfpilot.config import config_from_dict
    from tfpilot.export import WARMUP_PATH, read_contract, read_warmup_records
    from tfpilot.workflow import train_run

    config = config_from_dict(
        {
            "name": "digits_small",
            "runs_dir": str(tmp_path / "runs"),
            "data": {"kind": "image_folder", "path": str(digits_folder), "shuffle_buffer": 500},
            "model": {"name": "mlp", "hidden_units": [256, 128], "dropout": 0.0},
            "train": {
                "epochs": 5,
                "batch_size": 64,
                "optimizer": {"learning_rate": 0.002},
                "early_stopping": None,
                "histogram_every_epochs": 0,
            },
            "export": {
                "enabled": False,
                "signatures": ["serving_default", "logits", "classify"],
                "representative_batches": 10,
            },
        }
    )
    train_run(config)
    run = config.run_path

    result = tfpilot_cli(["export", run, "--format", "saved_model,tflite,tflite-int8"], cwd=tmp_path)
    assert result.returncode == 0, result

    rows = {row["format"]: row for row in json.loads((run / "exports" / "parity.json").read_text())}
    int8 = rows["tflite-int8"]
    assert int8["argmax_agreement"] >= 0.99, int8
    assert int8["accuracy_drop"] <= 0.01, int8
    assert int8["size_reduction_vs_float32"] >= 3.0, int8
    assert (run / "exports" / "model.keras").exists()

    version = run / "model" / "1"
    records = read_warmup_records(version / WARMUP_PATH)
    assert records and all(r.WhichOneof("log_type") in ("predict_log", "classify_log") for r in records)
    contract = read_contract(version)
    assert contract["inputs"]["image"] == {"dtype": "uint8", "shape": [-1, 8, 8, 1]}
    assert contract["signatures"]["classify"]["method_name"] == "tensorflow/serving/classify"
