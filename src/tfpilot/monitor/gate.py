"""The validation gate: a candidate must beat absolute and baseline-relative thresholds to be blessed.

Both models are evaluated the same way on the same examples: their exported SavedModels'
``serving_default`` signature is called on the candidate run's raw features (what a client
sends), so preprocessing inside the export is part of what is validated. The verdict and its
evidence are written to ``runs/<name>/blessing.json``; ``tfpilot push`` only ships a model
whose blessing names its exact files (a SHA-256 fingerprint of the SavedModel).
"""

from __future__ import annotations

import dataclasses
import hashlib
import operator
import re
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tfpilot.atomic import atomic_write_json
from tfpilot.config.schema import GateThreshold
from tfpilot.errors import MonitorError
from tfpilot.rundir import RunDir
from tfpilot.savedmodel.signature_call import SignatureCaller
from tfpilot.savedmodel.versions import latest_version_dir

__all__ = [
    "METRICS",
    "CheckResult",
    "Blessing",
    "blessing_path",
    "parse_threshold",
    "resolve_saved_model",
    "model_fingerprint",
    "evaluate_saved_model",
    "check_thresholds",
    "validate_candidate",
    "read_blessing",
]

METRICS = ("accuracy", "loss")
_OPERATORS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
_THRESHOLD = re.compile(
    r"^\s*([A-Za-z_]\w*)(\s+change)?\s*(>=|<=|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$"
)


def blessing_path(run: RunDir | str | Path) -> Path:
    return (run if isinstance(run, RunDir) else RunDir.at(run)).blessing_path


def parse_threshold(text: str) -> GateThreshold:
    """`accuracy>=0.95` (absolute) or `accuracy change >= -0.005` (relative to the baseline)."""
    match = _THRESHOLD.match(text)
    if not match:
        raise MonitorError(
            f"cannot parse threshold `{text}`; expected `METRIC OP VALUE` or `METRIC change OP VALUE` with OP one of "
            ">=, >, <=, <, e.g. `accuracy>=0.95` or `accuracy change>=-0.005`"
        )
    metric, change, op, value = match.groups()
    if metric not in METRICS:
        raise MonitorError(f"threshold `{text}` names metric `{metric}`; expected one of {list(METRICS)}")
    return GateThreshold(metric=metric, op=op, value=float(value), relative=bool(change))


def describe(threshold: GateThreshold) -> str:
    return f"{threshold.metric}{' change' if threshold.relative else ''} {threshold.op} {threshold.value:g}"


# ----------------------------------------------------------------------------- models


def resolve_saved_model(path: str | Path) -> Path:
    """A SavedModel directory, or the newest integer version under a serving base path."""
    path = Path(path)
    if (path / "saved_model.pb").is_file():
        return path
    latest = latest_version_dir(path, with_graph=True)
    if latest is not None:
        return latest
    raise MonitorError(
        f"`{path}` is neither a SavedModel directory (with saved_model.pb) nor a base path holding integer version "
        "directories; pass e.g. runs/<name>/model/1 or runs/<name>/model"
    )


def model_fingerprint(saved_model: str | Path) -> str:
    """SHA-256 over every file of a SavedModel (relative paths and contents), order independent."""
    root = Path(saved_model)
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(root)).encode())
        digest.update(b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _decode(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def evaluate_saved_model(
    saved_model: str | Path,
    features: dict[str, np.ndarray],
    labels: np.ndarray,
    *,
    class_names: Sequence[str],
    batch_size: int = 256,
) -> dict[str, float]:
    """accuracy and cross-entropy loss of a SavedModel's serving_default on raw features.

    A prediction counts as correct when its ``class_name`` equals the true class's name, so a
    baseline that orders its classes differently is still scored correctly.
    """
    signature = SignatureCaller.load(saved_model)
    if signature is None:
        raise MonitorError(
            f"SavedModel `{saved_model}` has no serving_default signature; export it with `tfpilot export`"
        )
    expected = signature.input_names
    if expected != set(features):
        raise MonitorError(
            f"SavedModel `{saved_model}` expects inputs {sorted(expected)}, the candidate's data has {sorted(features)}; "
            "validate against a baseline trained on the same features"
        )
    names = np.asarray(list(class_names), dtype=object)
    correct = 0
    loss_sum = 0.0
    count = int(labels.shape[0])
    outputs = signature(features, batch_size=batch_size) if count else {}
    if "class_name" in outputs:
        predicted = [_decode(v) for v in outputs["class_name"].reshape(-1)]
        correct += int(sum(p == t for p, t in zip(predicted, names[labels], strict=False)))
    elif count:
        correct += int(np.sum(np.argmax(outputs["probabilities"], axis=-1) == labels))
    if "probabilities" in outputs:
        probabilities = outputs["probabilities"].astype(np.float64)
        if probabilities.shape[-1] != len(names):
            raise MonitorError(
                f"SavedModel `{saved_model}` outputs {probabilities.shape[-1]} class probabilities, the data has "
                f"{len(names)} classes; validate models of the same task"
            )
        picked = probabilities[np.arange(labels.shape[0]), labels]
        loss_sum += float(-np.log(np.clip(picked, 1e-7, 1.0)).sum())
    metrics = {"accuracy": correct / count if count else 0.0, "examples": float(count)}
    metrics["loss"] = loss_sum / count if count else 0.0
    return metrics


def _split_arrays(run: RunDir, split: str) -> tuple[dict[str, np.ndarray], np.ndarray, list[str]]:
    """Raw features and labels of the candidate run's split, rebuilt from its directory."""
    from tfpilot.config import load_config
    from tfpilot.data import Preprocessor, build_pipeline

    config = load_config(run.config_path)
    preprocessor = Preprocessor.load(run.preprocessing_path) if run.preprocessing_path.exists() else None
    pipeline = build_pipeline(
        config.data, batch_size=config.train.batch_size, seed=config.train.seed, preprocessor=preprocessor
    )
    if pipeline.num_examples(split) == 0:
        raise MonitorError(f"the `{split}` split of run `{run.root}` is empty; pass --split with a non-empty split")
    columns: dict[str, list[np.ndarray]] = {name: [] for name in pipeline.feature_spec}
    labels = []
    for features, label in pipeline.raw(split).batch(1024):
        for name in columns:
            columns[name].append(features[name].numpy())
        labels.append(label.numpy())
    return (
        {k: np.concatenate(v) for k, v in columns.items()},
        np.concatenate(labels).astype(np.int64),
        list(pipeline.class_names),
    )


def _data_fingerprint(features: dict[str, np.ndarray], labels: np.ndarray) -> str:
    digest = hashlib.sha256()
    for name in sorted(features):
        digest.update(name.encode())
        digest.update(
            np.ascontiguousarray(features[name]).tobytes()
            if features[name].dtype != object
            else repr(features[name].tolist()).encode()
        )
    digest.update(np.ascontiguousarray(labels).tobytes())
    return digest.hexdigest()


# ----------------------------------------------------------------------------- verdict


@dataclasses.dataclass
class CheckResult:
    threshold: str
    metric: str
    op: str
    bound: float
    relative: bool
    candidate: float
    baseline: float
    observed: float  # the candidate's value, or its change vs the baseline when relative
    passed: bool


@dataclasses.dataclass
class Blessing:
    blessed: bool
    candidate: dict[str, Any]
    baseline: dict[str, Any]
    checks: list[CheckResult]
    split: str
    examples: int
    data_fingerprint: str
    created_at: float

    @property
    def failed(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Blessing:
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in fields}
        values["checks"] = [CheckResult(**c) for c in data.get("checks", [])]
        return cls(**values)


def check_thresholds(
    thresholds: Iterable[GateThreshold], *, candidate: dict[str, float], baseline: dict[str, float]
) -> list[CheckResult]:
    thresholds = list(thresholds)
    if not thresholds:
        raise MonitorError(
            "the validation gate has no thresholds, so it would bless any model; pass --threshold "
            "(e.g. `accuracy>=0.95` or `accuracy change>=-0.005`) or set `monitor.gate` in the config"
        )
    results = []
    for threshold in thresholds:
        if threshold.op not in _OPERATORS:
            raise MonitorError(f"threshold op must be one of {list(_OPERATORS)}, got `{threshold.op}`")
        if threshold.metric not in candidate:
            raise MonitorError(
                f"threshold metric `{threshold.metric}` is not measured; expected one of {list(METRICS)}"
            )
        value, base = float(candidate[threshold.metric]), float(baseline[threshold.metric])
        observed = value - base if threshold.relative else value
        results.append(
            CheckResult(
                threshold=describe(threshold),
                metric=threshold.metric,
                op=threshold.op,
                bound=threshold.value,
                relative=threshold.relative,
                candidate=value,
                baseline=base,
                observed=observed,
                passed=bool(_OPERATORS[threshold.op](observed, threshold.value)),
            )
        )
    return results


def validate_candidate(
    candidate_run: str | Path,
    baseline: str | Path,
    *,
    thresholds: Sequence[GateThreshold] | None = None,
    split: str = "test",
) -> Blessing:
    """Evaluate the candidate run's latest SavedModel and the baseline on the same split, check the
    thresholds (``None``: the candidate config's ``monitor.gate``) and write blessing.json."""
    from tfpilot.config import load_config

    run = RunDir.existing(candidate_run)
    if thresholds is None:
        thresholds = list(load_config(run.config_path).monitor.gate)
    if not thresholds:  # fail before the expensive evaluation
        check_thresholds([], candidate={}, baseline={})
    candidate_model = run.latest_version_dir()
    if candidate_model is None or not (candidate_model / "saved_model.pb").is_file():
        raise MonitorError(
            f"run `{run.root}` has no exported SavedModel under model/; run `tfpilot export {run.root}` first"
        )
    baseline_model = resolve_saved_model(baseline)
    features, labels, class_names = _split_arrays(run, split)
    candidate_metrics = evaluate_saved_model(candidate_model, features, labels, class_names=class_names)
    baseline_metrics = evaluate_saved_model(baseline_model, features, labels, class_names=class_names)
    checks = check_thresholds(thresholds, candidate=candidate_metrics, baseline=baseline_metrics)
    blessing = Blessing(
        blessed=all(c.passed for c in checks),
        candidate={
            "run": str(run.root),
            "model_path": str(candidate_model.resolve()),
            "version": int(candidate_model.name),
            "fingerprint": model_fingerprint(candidate_model),
            "metrics": candidate_metrics,
        },
        baseline={
            "model_path": str(baseline_model.resolve()),
            "fingerprint": model_fingerprint(baseline_model),
            "metrics": baseline_metrics,
        },
        checks=checks,
        split=split,
        examples=int(labels.shape[0]),
        data_fingerprint=_data_fingerprint(features, labels),
        created_at=time.time(),
    )
    atomic_write_json(blessing_path(run), blessing.to_dict())
    return blessing


def read_blessing(run: str | Path | RunDir) -> Blessing | None:
    import json

    path = blessing_path(run)
    if not path.is_file():
        return None
    try:
        return Blessing.from_dict(json.loads(path.read_text()))
    except (ValueError, TypeError) as error:
        raise MonitorError(f"`{path}` is not a valid blessing record ({error}); run `tfpilot validate` again") from None
