"""The model contract: what a version takes and returns, written next to it and checked at export.

model/<version>/contract.json records the signatures as the written MetaGraph has them (names,
method names, dtypes, shapes), the labels, the preprocessing state, the training run and its
metrics. Before the version is published the contract is checked against the run's config, so
a version whose inputs or labels disagree with what was configured never appears.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from pathlib import Path
from typing import Any

import keras

from tfpilot.atomic import atomic_write_json
from tfpilot.data.names import signature_keys
from tfpilot.data.preprocessing import Preprocessor
from tfpilot.errors import ExportError

__all__ = [
    "CONTRACT_FILENAME",
    "CONTRACT_FORMAT_VERSION",
    "build_contract",
    "check_contract",
    "contract_hook",
    "read_contract",
]

CONTRACT_FILENAME = "contract.json"
CONTRACT_FORMAT_VERSION = 1


def _tensor_info(info: Any) -> dict[str, Any]:
    import tensorflow as tf

    shape = None if info.tensor_shape.unknown_rank else [int(d.size) for d in info.tensor_shape.dim]
    return {"dtype": tf.as_dtype(info.dtype).name, "shape": shape}


def _signatures(version_dir: Path) -> dict[str, Any]:
    from tfpilot.savedmodel.metagraph import read_signature_defs

    return {
        name: {
            "method_name": definition.method_name,
            "inputs": {key: _tensor_info(value) for key, value in sorted(definition.inputs.items())},
            "outputs": {key: _tensor_info(value) for key, value in sorted(definition.outputs.items())},
        }
        for name, definition in sorted(read_signature_defs(version_dir).items())
        if not name.startswith("__")
    }


def _training_run(trained: Any) -> dict[str, Any] | None:
    if trained is None:
        return None
    import tensorflow as tf

    config_path = trained.run.config_path
    return {
        "name": trained.config.name,
        "run_dir": str(trained.run.root),
        "config_sha256": hashlib.sha256(config_path.read_bytes()).hexdigest() if config_path.exists() else None,
        "checkpoint": tf.train.latest_checkpoint(str(trained.run.final_checkpoint)),
        "model": trained.config.model.name,
    }


def _metrics(trained: Any) -> dict[str, Any] | None:
    if trained is None or not trained.run.metrics_path.exists():
        return None
    raw = json.loads(trained.run.metrics_path.read_text())
    # The confusion matrix belongs in the report, not in a serving contract.
    return {
        split: {k: v for k, v in values.items() if k != "confusion_matrix"} if isinstance(values, dict) else values
        for split, values in raw.items()
    }


def build_contract(
    *,
    version_dir: Path,
    version: int,
    model: keras.Model,
    preprocessor: Preprocessor,
    class_names: list[str],
    trained: Any = None,
) -> dict[str, Any]:
    signatures = _signatures(version_dir)
    serving = signatures.get("serving_default", {"inputs": {}, "outputs": {}})
    return {
        "format_version": CONTRACT_FORMAT_VERSION,
        "version": version,
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "inputs": serving["inputs"],
        # Feature names as written in the data -> the signature keys they became (only those that
        # differ); `tfpilot serve` accepts either name in REST and gRPC requests.
        "input_aliases": {
            name: key for name, key in signature_keys(list(preprocessor.feature_spec)).items() if name != key
        },
        "outputs": serving["outputs"],
        "signatures": signatures,
        "labels": list(class_names),
        "num_model_outputs": int(model.outputs[0].shape[-1]) if getattr(model, "outputs", None) else None,
        "preprocessing": preprocessor.to_json(),
        "training_run": _training_run(trained),
        "metrics": _metrics(trained),
    }


def _expected_inputs(preprocessor: Preprocessor) -> dict[str, dict[str, Any]]:
    # Signature keys are the sanitised feature names (tfpilot.data.names): `sepal length (cm)` -> `sepal_length_cm`.
    keys = signature_keys(list(preprocessor.feature_spec))
    return {
        keys[name]: {"dtype": spec["dtype"], "shape": [-1, *spec["shape"]]}
        for name, spec in preprocessor.feature_spec.items()
    }


def check_contract(
    contract: dict[str, Any], *, preprocessor: Preprocessor, config: Any = None, signatures: list[str] | None = None
) -> list[str]:
    """Every way the written contract disagrees with the preprocessing and the config (empty = consistent)."""
    problems: list[str] = []
    expected_inputs = _expected_inputs(preprocessor)
    if contract["inputs"] != expected_inputs:
        problems.append(
            f"serving_default inputs {contract['inputs']} differ from the preprocessing feature spec {expected_inputs}"
        )
    labels = contract["labels"]
    if len(set(labels)) != len(labels):
        problems.append(f"labels are not unique: {labels}")
    # A binary model has one logit for its two labels (the signatures serve [0, z]).
    from tfpilot.data.regression import task_of

    units = 1 if task_of(preprocessor) == "binary" else len(labels)
    if contract["num_model_outputs"] is not None and contract["num_model_outputs"] != units:
        problems.append(
            f"the model has {contract['num_model_outputs']} output units but there are {len(labels)} labels"
        )
    if contract["metrics"] and "class_names" in contract["metrics"] and contract["metrics"]["class_names"] != labels:
        problems.append(
            f"metrics.json class_names {contract['metrics']['class_names']} differ from the exported labels {labels}"
        )
    # The signatures asked for (export.signatures when exporting a run) must all be in the MetaGraph.
    wanted = signatures if signatures is not None else (config.export.signatures if config is not None else [])
    missing = [s for s in wanted if s not in contract["signatures"]]
    if missing:
        problems.append(f"signatures {missing} were requested but the SavedModel does not contain them")
    if config is None:
        return problems
    data = config.data
    kind = data.kind.value if hasattr(data.kind, "value") else str(data.kind)
    if kind == "image_folder":
        want = [-1, data.image.height, data.image.width, data.image.channels]
        got = contract["inputs"].get("image", {}).get("shape")
        if got != want:
            problems.append(f"data.image is {want[1]}x{want[2]}x{want[3]} but the `image` input has shape {got}")
    if kind == "csv":
        for column in data.csv.categorical_columns:
            if contract["inputs"].get(column, {}).get("dtype") != "string":
                problems.append(
                    f"data.csv.categorical_columns lists `{column}`, but the SavedModel has no string input of that name"
                )
        for column in data.csv.numeric_columns or []:
            if column not in contract["inputs"]:
                problems.append(
                    f"data.csv.numeric_columns lists `{column}`, but the SavedModel has no input of that name"
                )
    return problems


def contract_hook(
    version_dir: Path,
    *,
    version: int,
    model: keras.Model,
    preprocessor: Preprocessor,
    class_names: list[str],
    signatures: list[str] | None = None,
    trained: Any = None,
    **_: Any,
) -> None:
    """Post-write hook: build the contract from the written MetaGraph, check it, write contract.json."""
    contract = build_contract(
        version_dir=version_dir,
        version=version,
        model=model,
        preprocessor=preprocessor,
        class_names=class_names,
        trained=trained,
    )
    problems = check_contract(
        contract,
        preprocessor=preprocessor,
        config=trained.config if trained is not None else None,
        signatures=signatures,
    )
    if problems:
        raise ExportError(
            f"the exported model contradicts its config: {problems[0]}"
            + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
        )
    atomic_write_json(Path(version_dir) / CONTRACT_FILENAME, contract)


def read_contract(version_dir: str | Path) -> dict[str, Any]:
    path = Path(version_dir) / CONTRACT_FILENAME
    if not path.exists():
        raise ExportError(f"`{version_dir}` has no {CONTRACT_FILENAME}; re-export it with `tfpilot export`")
    return json.loads(path.read_text())
