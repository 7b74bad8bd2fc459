"""What kind of prediction problem the labels describe, inferred before anything trains.

A regression target read as classes trains "successfully" as a classifier with one class per
distinct value (scikit-learn's diabetes: 214 classes, 0.015 test accuracy, exit 0). The
inference is deliberately conservative: it only calls a target regression-like when the values
are numbers and either have fractional parts or are so many distinct values that they cannot be
classes; everything else is left to the user's `model.task`. Under `auto` such a target trains
as a regression, and the DATA-TASK finding says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from tfpilot.errors import ConfigError
from tfpilot.findings import Finding, Severity

__all__ = [
    "BINARY",
    "MULTILABEL",
    "TaskGuess",
    "infer_task",
    "check_task",
    "apply_task",
    "apply_saved_task",
    "multilabel_threshold",
]

BINARY = "binary"
MULTILABEL = "multilabel"

# More distinct numeric values than this, and at least this share of the examples, is not a
# label set a person would call classes (MNIST has 10, ImageNet 1000 over 1.2M examples).
_MAX_CLASS_LIKE_DISTINCT = 50
_MIN_DISTINCT_SHARE = 0.05


@dataclasses.dataclass(frozen=True)
class TaskGuess:
    task: str  # "binary", "multiclass", "multilabel" or "regression"
    num_distinct: int
    reason: str


def _as_numbers(values: Sequence[object] | np.ndarray) -> np.ndarray | None:
    array = np.asarray(values)
    if array.dtype.kind in "iub":
        return array.astype(np.float64)
    if array.dtype.kind == "f":
        return array.astype(np.float64)
    try:
        return np.asarray([float(str(v)) for v in array.reshape(-1)], np.float64)
    except ValueError:
        return None


def infer_task(values: Sequence[object] | np.ndarray, *, separator: str | None = None) -> TaskGuess:
    """Guess the task from raw label values (strings as read from a CSV, or an array).

    ``separator`` (data.csv.label_separator): text cells holding it are several labels each."""
    flat = np.asarray(values, dtype=object).reshape(-1)
    distinct = len({str(v) for v in flat})
    numbers = _as_numbers(flat)
    if numbers is None and separator and any(separator in str(v) for v in flat):
        labels = _distinct_labels(flat, separator)
        return TaskGuess(
            "multilabel", len(labels), f"label cells hold `{separator}`: {len(labels)} labels, several per example"
        )
    if numbers is not None and numbers.size:
        finite = numbers[np.isfinite(numbers)]
        fractional = bool(finite.size) and bool(np.any(finite != np.round(finite)))
        many = distinct > _MAX_CLASS_LIKE_DISTINCT and distinct >= _MIN_DISTINCT_SHARE * numbers.size
        if fractional and distinct > 2:
            return TaskGuess("regression", distinct, f"{distinct} distinct values with fractional parts")
        if many:
            return TaskGuess("regression", distinct, f"{distinct} distinct numeric values over {numbers.size} examples")
    if distinct == 2:
        return TaskGuess("binary", distinct, "two distinct labels")
    return TaskGuess("multiclass", distinct, f"{distinct} distinct labels")


def _distinct_labels(cells: np.ndarray, separator: str) -> list[str]:
    from tfpilot.data.multilabel import split_labels

    return sorted({label for cell in cells for label in split_labels(cell, separator)})


def _multilabel_finding(requested: str, how: str, num_labels: int) -> Finding:
    return Finding(
        code="DATA-TASK",
        severity=Severity.INFO,
        title="task: multilabel",
        message=f"training a multilabel classifier over {num_labels} labels, a sigmoid each ({how})",
        evidence={"task": MULTILABEL, "requested": requested, "num_classes": num_labels},
        fix="set `model.task: multiclass` to train on each distinct label cell as one class instead",
    )


def _regression_finding(requested: str, guess: TaskGuess | None, count: int) -> Finding:
    how = "from `model.task`" if requested != "auto" else f"inferred: {guess.reason if guess else 'numeric target'}"
    return Finding(
        code="DATA-TASK",
        severity=Severity.INFO,
        title="task: regression",
        message=f"training a regression on {count} numeric targets, standardised on the training split ({how})",
        evidence={"task": "regression", "requested": requested, "num_classes": 1},
        fix="set `model.task: multiclass` to train on the values as classes instead",
    )


def check_task(
    requested: str,
    *,
    label_values: np.ndarray | None,
    num_classes: int,
    separator: str | None = None,
    label_columns: list[str] | None = None,
) -> Finding:
    """Refuse a task that does not fit the labels; otherwise return an info finding naming it.

    The finding's evidence["task"] is the task that trains: a regression-like target under `auto`
    is a regression. Raises ConfigError (exit 2) for `binary` with a number of classes other than
    two, and for `regression` on labels that are not numbers (or not available as values).
    """
    requested = str(getattr(requested, "value", requested))
    if label_columns and requested not in ("auto", MULTILABEL):
        raise ConfigError(
            f"data.csv.label_columns lists {len(label_columns)} label columns, which is a multilabel task, but "
            f"`model.task` is {requested}; set `model.task: multilabel` (or auto), or use data.csv.label_column"
        )
    guess = infer_task(label_values, separator=separator) if label_values is not None else None
    if label_columns or requested == MULTILABEL or (requested == "auto" and guess and guess.task == MULTILABEL):
        if label_columns:
            return _multilabel_finding(requested, f"data.csv.label_columns {label_columns}", len(label_columns))
        if label_values is None or separator is None:
            raise ConfigError(
                "`model.task` is multilabel but this source has no label cells to split; expected a csv source "
                "with `cat|dog` cells (data.csv.label_separator) or data.csv.label_columns"
            )
        labels = _distinct_labels(np.asarray(label_values, dtype=object).reshape(-1), separator)
        how = "from `model.task`" if requested != "auto" else f"inferred: {guess.reason if guess else ''}"
        return _multilabel_finding(requested, how, len(labels))
    if requested == "regression":
        if label_values is None or _as_numbers(np.asarray(label_values, dtype=object).reshape(-1)) is None:
            raise ConfigError(
                "`model.task` is regression but the labels are not numbers (or this source gives class ids "
                "only); expected a numeric target column; set `model.task: auto` to train a classifier"
            )
        return _regression_finding(requested, guess, int(np.asarray(label_values).size))
    if requested == "auto" and guess is not None and guess.task == "regression":
        return _regression_finding(requested, guess, int(np.asarray(label_values).size))
    if requested == "binary" and num_classes != 2:
        raise ConfigError(
            f"`model.task` is binary but the labels have {num_classes} classes; expected exactly 2 "
            "(set `model.task: multiclass` or `auto`)"
        )
    chosen = requested if requested != "auto" else ("binary" if num_classes == 2 else "multiclass")
    how = "from `model.task`" if requested != "auto" else (f"inferred: {guess.reason}" if guess else "class folders")
    return Finding(
        code="DATA-TASK",
        severity=Severity.INFO,
        title=f"task: {chosen}",
        message=f"training a {chosen} classifier over {num_classes} classes ({how})",
        evidence={"task": chosen, "requested": requested, "num_classes": num_classes},
        fix="set `model.task` to override",
    )


def apply_task(pipeline: Any, task: str, config: Any) -> None:
    """Make the pipeline's labels and preprocessing state (preprocessing.json) say what trains.

    Multiclass leaves both as they are: runs written before tasks existed read back the same."""
    if task == "regression":
        from tfpilot.data.regression import make_regression, target_name

        make_regression(pipeline, name=target_name(config.data))
    elif task == BINARY:
        pipeline.preprocessor.extra["task"] = BINARY
    elif task == MULTILABEL:
        from tfpilot.data.multilabel import make_multilabel

        options = config.data.csv
        make_multilabel(
            pipeline,
            separator=options.label_separator,
            threshold=config.model.threshold,
            label_columns=options.label_columns,
        )


def apply_saved_task(pipeline: Any) -> None:
    """A pipeline rebuilt from a run's preprocessing.json: its labels as the run trained on them."""
    from tfpilot.data.regression import apply_saved_task as apply_saved_regression

    apply_saved_regression(pipeline)
    if pipeline.preprocessor.extra.get("task") == MULTILABEL:
        from tfpilot.data.multilabel import apply_saved_multilabel

        apply_saved_multilabel(pipeline)


def multilabel_threshold(preprocessor: Any) -> float:
    return float(preprocessor.extra.get("multilabel", {}).get("threshold", 0.5))
