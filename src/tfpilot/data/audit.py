"""The data audit: what the pipeline will train on, checked before the first step.

Counts per class and split, missing and non-numeric cells, empty or tiny classes, examples that
appear in two splits (a leak that inflates validation/test scores) and constant columns. It is
written to runs/<name>/data_report.json and shown by `tfpilot data inspect CONFIG`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tfpilot.atomic import atomic_write_json
from tfpilot.findings import Finding, Severity

if TYPE_CHECKING:
    from tfpilot.data.pipeline import Pipeline

__all__ = ["audit_pipeline", "write_data_report", "TINY_CLASS"]

# Fewer training examples than this and a class's accuracy is noise.
TINY_CLASS = 5


def _row_keys(pipeline: Pipeline) -> list[str]:
    """A content key per example: file bytes for images, the cell values for tables and text."""
    source = pipeline.source
    if "path" in source.records:
        keys = []
        for path in source.records["path"]:
            keys.append(hashlib.sha1(Path(str(path)).read_bytes()).hexdigest())
        return keys
    columns = [np.asarray(source.records[name]) for name in sorted(source.records)]
    keys = []
    for i in range(len(source)):
        digest = hashlib.sha1()
        for column in columns:
            digest.update(
                str(column[i]).encode() if column.dtype == object else np.ascontiguousarray(column[i]).tobytes()
            )
            digest.update(b"\0")
        keys.append(digest.hexdigest())
    return keys


def _name(pipeline: Pipeline, index: int) -> str:
    ids = pipeline.source.row_ids
    if ids is None:
        return f"example {index}"
    value = ids[index]
    return f"line {int(value)}" if isinstance(value, (int, np.integer)) else str(value)


def audit_pipeline(pipeline: Pipeline) -> tuple[dict[str, Any], list[Finding]]:
    """The report (JSON-serialisable) and the findings it raises, source findings included."""
    source = pipeline.source
    where = str(pipeline.config.path or "arrays")
    findings = list(source.findings)
    names = source.class_names
    per_split: dict[str, dict[str, int]] = {}
    for split, index in pipeline.indices.items():
        if pipeline.task == "regression":
            # A numeric target has no classes to count: the split sizes stand in for them.
            per_split[split] = {names[0]: int(index.size)}
            continue
        labels = source.labels[index]
        # Multilabel: a multi-hot row counts once for each label it holds.
        counts = labels.sum(axis=0) if labels.ndim == 2 else np.bincount(labels, minlength=len(names))
        per_split[split] = {names[i]: int(c) for i, c in enumerate(counts)}
    train_counts = per_split.get("train", {})
    tiny = {name: count for name, count in train_counts.items() if count < TINY_CLASS}
    if tiny:
        findings.append(
            Finding(
                code="DATA-TINY-CLASS",
                severity=Severity.WARNING,
                title=f"{len(tiny)} class(es) with fewer than {TINY_CLASS} training examples",
                message=f"classes {tiny} have so few training examples that the model cannot learn them reliably",
                location=where,
                evidence={"train_counts": tiny},
                fix="add examples of those classes, merge them, or set data.split.stratify: true",
            )
        )
    keys = _row_keys(pipeline)
    first_split: dict[str, tuple[str, int]] = {}
    duplicates: list[dict[str, Any]] = []
    for split in ("train", "validation", "test"):
        for i in pipeline.indices.get(split, []):
            key = keys[int(i)]
            if key in first_split and first_split[key][0] != split:
                other_split, other = first_split[key]
                duplicates.append(
                    {
                        "splits": [other_split, split],
                        "examples": [_name(pipeline, other), _name(pipeline, int(i))],
                    }
                )
            first_split.setdefault(key, (split, int(i)))
    if duplicates:
        shown = "; ".join(
            f"{d['examples'][0]} ({d['splits'][0]}) = {d['examples'][1]} ({d['splits'][1]})" for d in duplicates[:3]
        )
        findings.append(
            Finding(
                code="DATA-DUPLICATE-ACROSS-SPLITS",
                severity=Severity.WARNING,
                title=f"{len(duplicates)} example(s) appear in two splits",
                message=f"identical examples are in different splits, so evaluation partly measures memory: {shown}",
                location=where,
                evidence={"count": len(duplicates)},
                fix="remove the duplicates from the data",
            )
        )
    constant: list[str] = []
    train_index = pipeline.indices["train"]
    for column in [*source.numeric_columns, *source.categorical_columns]:
        values = np.asarray(source.records[column])[train_index]
        if values.dtype.kind == "f":
            values = values[~np.isnan(values)]
        if values.size and np.unique(values.reshape(values.shape[0], -1), axis=0).shape[0] == 1:
            constant.append(column)
    if constant:
        findings.append(
            Finding(
                code="DATA-CONSTANT-COLUMN",
                severity=Severity.INFO,
                title=f"{len(constant)} constant column(s)",
                message=f"columns {constant} hold one value across the training split and carry no information",
                location=where,
                evidence={"columns": constant},
                fix="drop them from the file, or check that they were exported correctly",
            )
        )
    report: dict[str, Any] = {
        "source": where,
        "kind": source.kind,
        "examples": {split: int(index.size) for split, index in pipeline.indices.items()},
        "classes": names,
        "examples_per_class": per_split,
        "columns": {
            "numeric": list(source.numeric_columns),
            "categorical": list(source.categorical_columns),
        },
        "missing_values": source.report.get("missing_values", {}),
        "non_numeric_cells": source.report.get("non_numeric_cells", {}),
        "tiny_classes": tiny,
        "duplicates_across_splits": duplicates,
        "constant_columns": constant,
        "findings": [f.to_dict() for f in findings],
    }
    return report, findings


def write_data_report(path: str | Path, report: dict[str, Any]) -> Path:
    atomic_write_json(path, report)
    return Path(path)
