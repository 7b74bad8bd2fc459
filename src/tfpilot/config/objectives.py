"""Which losses and metrics each task accepts by name, and what a run logs: checked when the
config loads, before TensorFlow is imported, so a typo in `train.metrics` or an early-stopping
monitor nobody logs fails in a fraction of a second instead of after the first epoch.

The objects themselves are built in tfpilot.train.losses; the names here are the contract.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "TASKS",
    "LOSSES",
    "METRICS",
    "DEFAULT_METRICS",
    "LOWER_IS_BETTER",
    "canonical_loss",
    "is_custom",
    "metric_name",
    "logged_names",
    "objective_problems",
]

TASKS = ("multiclass", "binary", "multilabel", "regression")

_SIGMOID_LOSSES = ("binary_crossentropy", "binary_focal_crossentropy", "hinge", "squared_hinge")
# Keras loss names per task. The model outputs logits (classifiers) or the standardised target
# (regression); tfpilot builds each loss for that (from_logits=True), so these are exact.
LOSSES: dict[str, tuple[str, ...]] = {
    "multiclass": (
        "sparse_categorical_crossentropy",
        "categorical_crossentropy",
        "categorical_focal_crossentropy",
        "categorical_hinge",
    ),
    "binary": _SIGMOID_LOSSES,
    "multilabel": _SIGMOID_LOSSES,
    "regression": ("mean_squared_error", "mean_absolute_error", "huber", "log_cosh"),
}
_LOSS_ALIASES = {"mse": "mean_squared_error", "mae": "mean_absolute_error", "logcosh": "log_cosh"}

# Metric names per task; `top_<k>_accuracy` (e.g. top_3_accuracy) is accepted besides top_k_accuracy (k=5).
METRICS: dict[str, tuple[str, ...]] = {
    "multiclass": ("accuracy", "top_k_accuracy", "auc", "prc", "precision", "recall"),
    "binary": ("accuracy", "auc", "prc", "precision", "recall"),
    "multilabel": ("binary_accuracy", "auc", "prc", "precision", "recall"),
    "regression": ("mae", "rmse", "mse", "r2", "mape"),
}
DEFAULT_METRICS: dict[str, tuple[str, ...]] = {
    "multiclass": ("accuracy",),
    "binary": ("accuracy", "auc"),
    "multilabel": ("binary_accuracy", "auc"),
    "regression": ("mae", "rmse"),
}
# Early stopping minimises these (and every name ending in `loss`); everything else is maximised.
LOWER_IS_BETTER = frozenset({"mae", "rmse", "mse", "mape"})
# Logged every epoch besides the loss and the metrics (training side only).
_BOOKKEEPING = ("learning_rate", "grad_norm")

_CUSTOM = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
_TOP_K = re.compile(r"top_(\d+)_accuracy")


def is_custom(name: str) -> bool:
    return ":" in name


def canonical_loss(name: str) -> str:
    return _LOSS_ALIASES.get(name, name)


def metric_name(spec: str) -> str:
    """The name a metric is logged under: the Keras name, or a custom function's own name."""
    return spec.partition(":")[2] if is_custom(spec) else spec


def _known_metric(name: str, task: str) -> bool:
    return name in METRICS[task] or (task == "multiclass" and _TOP_K.fullmatch(name) is not None)


def _tasks(task: str) -> tuple[str, ...]:
    return TASKS if task == "auto" else (task,)


def logged_names(task: str, metrics: list[str]) -> list[str]:
    """Every key an epoch of history holds for this config (under `auto`, for any task it may pick)."""
    names = ["loss"]
    for candidate in _tasks(task):
        names.extend(DEFAULT_METRICS[candidate])
    names.extend(metric_name(m) for m in metrics)
    unique = list(dict.fromkeys(names))
    return [*unique, *(f"val_{n}" for n in unique), *_BOOKKEEPING]


def _valid_list(kind: dict[str, tuple[str, ...]], task: str) -> list[str]:
    return sorted({name for candidate in _tasks(task) for name in kind[candidate]})


def objective_problems(config: Any) -> list[tuple[tuple[str, ...], str]]:
    """(key path, one-line problem) for every loss, metric, class weight or monitor the task cannot have."""
    task = str(getattr(config.model.task, "value", config.model.task))
    train = config.train
    problems: list[tuple[tuple[str, ...], str]] = []
    if train.loss is not None:
        loss = canonical_loss(train.loss)
        if is_custom(loss):
            if not _CUSTOM.fullmatch(loss):
                problems.append((("train", "loss"), f"must look like `package.module:function`, got `{loss}`"))
        elif not any(loss in LOSSES[t] for t in _tasks(task)):
            problems.append(
                (
                    ("train", "loss"),
                    f"`{train.loss}` is not a loss for model.task {task}; expected one of "
                    f"{_valid_list(LOSSES, task)} or `package.module:function`",
                )
            )
    for index, metric in enumerate(train.metrics):
        if is_custom(metric):
            if not _CUSTOM.fullmatch(metric):
                problems.append(
                    (("train", "metrics", str(index)), f"must look like `package.module:function`, got `{metric}`")
                )
        elif not any(_known_metric(metric, t) for t in _tasks(task)):
            problems.append(
                (
                    ("train", "metrics", str(index)),
                    f"`{metric}` is not a metric for model.task {task}; expected one of "
                    f"{_valid_list(METRICS, task)} or `package.module:function`",
                )
            )
    if train.class_weight is not None and task in ("regression", "multilabel"):
        problems.append(
            (
                ("train", "class_weight"),
                f"weights classes, but model.task {task} has no classes to weigh; remove train.class_weight",
            )
        )
    if train.early_stopping is not None:
        names = logged_names(task, list(train.metrics))
        if train.early_stopping.monitor not in names:
            problems.append(
                (
                    ("train", "early_stopping", "monitor"),
                    f"`{train.early_stopping.monitor}` is not logged for model.task {task}; expected one of {names}",
                )
            )
    return problems
