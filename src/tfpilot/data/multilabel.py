"""Turn label cells such as `cat|dog` into multi-hot targets for a multilabel run.

Sources read labels as classes (each distinct cell -> an id), so `cat|dog` first arrives as a
class of its own. For a multilabel run each cell is split at data.csv.label_separator and the
labels become a float32 [examples, labels] multi-hot matrix, one column per label. The label
vocabulary (sorted label names, or data.csv.label_columns in their order), the separator and
model.threshold live in preprocessing.json (`extra["multilabel"]`), so `tfpilot evaluate` and
`tfpilot export` in a new process encode labels and threshold predictions exactly as training did.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfpilot.errors import ConfigError, DataError

__all__ = ["split_labels", "make_multilabel", "apply_saved_multilabel"]

MULTILABEL = "multilabel"


def split_labels(cell: object, separator: str) -> list[str]:
    """`cat| dog` -> [cat, dog]; empty parts (a trailing separator, an empty cell) are no label."""
    return [part.strip() for part in str(cell).split(separator) if part.strip()]


def _cells(pipeline: Any) -> np.ndarray:
    raw = pipeline.source.label_values
    if raw is None:
        raise ConfigError(
            "`model.task` is multilabel but this source gives class ids only (image folders); expected label "
            "cells such as `cat|dog`, from a csv source (data.csv.label_column or data.csv.label_columns)"
        )
    return np.asarray(raw, dtype=object).reshape(-1)


def make_multilabel(pipeline: Any, *, separator: str, threshold: float, label_columns: list[str] | None = None) -> None:
    """Build the label vocabulary, record it in the preprocessing state, yield multi-hot labels."""
    cells = _cells(pipeline)
    if label_columns:
        clashing = [c for c in label_columns if separator in c]
        if clashing:
            raise ConfigError(
                f"data.csv.label_columns {clashing} contain the label separator `{separator}`; set "
                "`data.csv.label_separator` to a character no label column name holds"
            )
        vocabulary = list(label_columns)
    else:
        vocabulary = sorted({label for cell in cells for label in split_labels(cell, separator)})
    if len(vocabulary) < 2:
        raise ConfigError(
            f"`model.task` is multilabel but the labels hold {len(vocabulary)} distinct label(s) {vocabulary}; "
            "expected at least 2 (one label that is on or off is `model.task: binary`)"
        )
    pipeline.preprocessor.extra["task"] = MULTILABEL
    pipeline.preprocessor.extra["multilabel"] = {
        "labels": vocabulary,
        "separator": separator,
        "threshold": float(threshold),
    }
    _encode(pipeline, cells, vocabulary, separator)


def apply_saved_multilabel(pipeline: Any) -> None:
    """A pipeline rebuilt from a run's preprocessing.json: encode with the saved vocabulary."""
    saved = pipeline.preprocessor.extra["multilabel"]
    _encode(pipeline, _cells(pipeline), list(saved["labels"]), str(saved["separator"]))


def _encode(pipeline: Any, cells: np.ndarray, vocabulary: list[str], separator: str) -> None:
    index = {label: i for i, label in enumerate(vocabulary)}
    matrix = np.zeros((cells.shape[0], len(vocabulary)), np.float32)
    unknown: set[str] = set()
    for row, cell in enumerate(cells):
        for label in split_labels(cell, separator):
            if label in index:
                matrix[row, index[label]] = 1.0
            else:
                unknown.add(label)
    if unknown:
        raise DataError(
            f"label(s) {sorted(unknown)[:5]} are not among the {len(vocabulary)} labels this run trained on "
            f"{vocabulary[:10]}; train a new run on this data"
        )
    pipeline.source.labels = matrix
    pipeline.source.class_names = list(vocabulary)
    pipeline.clear_cache()
