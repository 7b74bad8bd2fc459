"""`tfpilot export RUN --format tfjs` from an empty tool directory: install, convert, parity in Node.

This is what a new user's first TF.js export does (`make test-tfjs` runs only this file). It
needs PyPI and the npm registry, and is skipped, with the reason, when they cannot be reached.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import urllib.request

import pytest

_REGISTRIES = {
    "PyPI": (os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple").rstrip("/") + "/tensorflowjs/",
    "npm": (os.environ.get("npm_config_registry") or "https://registry.npmjs.org").rstrip("/") + "/@tensorflow%2Ftfjs",
}


def _unreachable() -> str | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "Node.js (node and npm) is not installed"
    for name, url in _REGISTRIES.items():
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=10):
                pass
        except Exception as error:  # any failure to reach it means the test cannot run here
            return f"{name} is unreachable ({url}: {error})"
    return None


@pytest.fixture(scope="module")
def registries() -> None:
    reason = _unreachable()
    if reason:
        pytest.skip(f"the TF.js tools install from PyPI and npm: {reason}")


@pytest.mark.slow
@pytest.mark.tfjs
def test_tfjs_export_from_an_empty_tool_directory(registries, digits_folder, tmp_path, tfpilot_cli, monkeypatch):
    from tfpilot.config import config_from_dict
    from tfpilot.workflow import train_run

    config = config_from_dict(
        {
            "name": "digits_tfjs",
            "runs_dir": str(tmp_path / "runs"),
            "data": {"kind": "image_folder", "path": str(digits_folder), "shuffle_buffer": 500},
            "model": {"name": "mlp", "hidden_units": [128], "dropout": 0.0},
            "train": {
                "epochs": 5,
                "batch_size": 64,
                "optimizer": {"learning_rate": 0.002},
                "early_stopping": None,
                "histogram_every_epochs": 0,
            },
            "export": {"enabled": False},
        }
    )
    train_run(config)
    run = config.run_path
    tools = tmp_path / "tools"
    assert not tools.exists()

    began = time.monotonic()
    result = tfpilot_cli(
        ["export", run, "--format", "tfjs"], cwd=tmp_path, timeout=900, env={"TFPILOT_TOOLS_DIR": str(tools)}
    )
    elapsed = time.monotonic() - began
    assert result.returncode == 0, result

    # Progress: each step, then the conversion, on stderr (stdout keeps the results).
    for expected in (
        r"tfjs: first use, installing .* \(at most \d+s; log: .*install\.log\)",
        r"tfjs \[1/2\] pip: tensorflowjs==4\.22\.0, tensorflow-hub==0\.16\.1, tf-keras==2\.21\.0",
        r"tfjs \[1/2\] pip: done in \d+s",
        r"tfjs \[2/2\] npm ci: @tensorflow/tfjs 4\.22\.0 \(\d+ locked packages\)",
        r"tfjs \[2/2\] npm ci: done in \d+s",
        r"tfjs: tools ready in \d+s",
        r"tfjs: converted in \d+s",
    ):
        assert re.search(expected, result.stderr), (expected, result)
    install_s = int(re.search(r"tools ready in (\d+)s", result.stderr).group(1))
    convert_s = int(re.search(r"converted in (\d+)s", result.stderr).group(1))
    print(
        f"\ntfjs from an empty tool directory: install {install_s}s, convert {convert_s}s, whole export {elapsed:.0f}s"
    )

    # The model converted and run in Node gives the SavedModel's answers on the test split.
    model_json = json.loads((run / "exports" / "tfjs" / "model.json").read_text())
    assert model_json["format"] == "graph-model"
    rows = {row["format"]: row for row in json.loads((run / "exports" / "parity.json").read_text())}
    row = rows["tfjs"]
    assert row["examples"] >= 100, row
    assert row["argmax_agreement"] == 1.0, row
    assert row["accuracy_drop"] == 0.0, row
    # float32 in both; TF.js' CPU kernels sum in another order, so not bit-identical.
    assert row["max_abs_diff"] <= 1e-5, row
    assert row["latency_ms_p50"] > 0, row

    # The installation is exactly the three pinned wheels: nothing else was pulled in.
    site = tools / "tfjs" / "site"
    assert sorted(p.name for p in site.glob("*.dist-info")) == [
        "tensorflow_hub-0.16.1.dist-info",
        "tensorflowjs-4.22.0.dist-info",
        "tf_keras-2.21.0.dist-info",
    ]

    # What the conversion imports: the three from the tool directory, a stand-in for TF-DF, and
    # everything else (TensorFlow 2.21 included) from this environment; never JAX, Flax or ydf.
    import tensorflow as tf

    from tfpilot.export.tfjs import convert_tfjs

    monkeypatch.setenv("TFPILOT_TOOLS_DIR", str(tools))
    report_path = tmp_path / "imports.json"
    convert_tfjs(run / "model" / "1", tmp_path / "again", imports_report=report_path)
    report = json.loads(report_path.read_text())
    modules = report["modules"]
    assert {name for name, origin in modules.items() if origin == "site"} == {
        "tensorflowjs",
        "tensorflow_hub",
        "tf_keras",
    }
    assert {name for name, origin in modules.items() if origin == "stub"} == {"tensorflow_decision_forests"}
    assert not {"jax", "jaxlib", "flax", "ydf"} & set(modules), sorted(modules)
    assert modules["tensorflow"] == "environment" and report["tensorflow"] == tf.__version__
    # The same graph (JSON key order differs between runs, so compare the nodes, not the bytes).
    again = json.loads((tmp_path / "again" / "model.json").read_text())
    assert sorted(n["name"] for n in again["modelTopology"]["node"]) == sorted(
        n["name"] for n in model_json["modelTopology"]["node"]
    )
