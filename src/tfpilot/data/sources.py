"""Data sources: each turns a config into in-memory records + labels, plus a decode function
that runs inside the tf.data pipeline (so file reads and image decoding are parallel and cached)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import tensorflow as tf

from tfpilot.config.schema import BadRecords, DataConfig, DataKind
from tfpilot.data.bad_records import Problem, problems_error
from tfpilot.data.csv_table import read_csv_table
from tfpilot.data.image_check import undecodable_images
from tfpilot.data.image_resize import decode_and_resize
from tfpilot.errors import DataError
from tfpilot.findings import Finding, Severity

if TYPE_CHECKING:
    from tfpilot.data.tfrecord_stream import StreamedSplits

__all__ = ["Source", "load_source", "image_folder_source", "csv_source", "arrays_source"]

Features = dict[str, tf.Tensor]


@dataclasses.dataclass
class Source:
    """Records small enough to hold in memory (file paths, CSV columns, arrays) and how to decode them.

    records:       name -> array with one row per example (what the pipeline slices).
    labels:        int32 class ids, one per example.
    class_names:   index -> human-readable class name.
    decode:        record dict -> raw feature dict (the serving input), run in a parallel map.
    feature_spec:  raw feature name -> per-example TensorSpec (the serving signature's input).
    kind:          which preprocessing applies (image, tabular, text).
    files:         per-example source file (for per-worker sharding by file), when there are files.
    """

    records: dict[str, np.ndarray]
    labels: np.ndarray
    class_names: list[str]
    decode: Callable[[dict[str, tf.Tensor]], Features]
    feature_spec: dict[str, tf.TensorSpec]
    kind: str
    numeric_columns: list[str] = dataclasses.field(default_factory=list)
    categorical_columns: list[str] = dataclasses.field(default_factory=list)
    files: np.ndarray | None = None
    findings: list[Finding] = dataclasses.field(default_factory=list)
    report: dict[str, Any] = dataclasses.field(default_factory=dict)
    # What names an example to a person: the CSV file line, or the image file (for the audit).
    row_ids: np.ndarray | None = None
    # Raw label values before they became class ids (CSV cells, array values), so the task can be
    # checked; None where labels are classes by construction (class folders).
    label_values: np.ndarray | None = None
    # Streamed TFRecords (data/tfrecord_stream.py): the pipeline reads these shards instead of
    # `records`, which then hold only what the audit and the statistics need.
    streamed: StreamedSplits | None = None

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def image_folder_source(config: DataConfig) -> Source:
    root = Path(str(config.path))
    if root.is_file():
        raise DataError(
            f"`data.path` is the file `{root}`, but data.kind image_folder reads a folder with one subfolder per "
            "class; point data.path at that folder, or set data.kind: csv for a CSV file",
            exit_code=2,
        )
    if not root.is_dir():
        raise DataError(
            f"`data.path` must be a folder with one subfolder per class for kind image_folder, got `{root}`"
        )
    skip = config.on_bad_records == BadRecords.SKIP
    findings: list[Finding] = []
    extensions = {e.lower() for e in config.image.extensions}
    class_dirs = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    per_class = {
        d: sorted(p for p in d.iterdir() if p.is_file() and p.suffix.lower() in extensions) for d in class_dirs
    }
    empty = [d for d in class_dirs if not per_class[d]]
    # Every problem is collected before any is reported: fixing the data takes one round.
    problems: list[Problem] = []
    if empty and len(empty) < len(class_dirs):
        names = [d.name for d in empty]
        if not skip:
            problems.append(
                Problem(
                    f"class folder(s) {names} hold no {sorted(extensions)} files",
                    fix="a class with no examples cannot be learned: add images or remove the folder",
                )
            )
        findings.append(
            Finding(
                code="DATA-EMPTY-CLASS",
                severity=Severity.WARNING,
                title=f"{len(empty)} empty class folder(s) left out",
                message=f"class folder(s) {names} under `{root}` hold no images and are not classes of this model",
                location=str(root),
                evidence={"folders": [str(d) for d in empty]},
                fix="add images to them, or remove the folders",
            )
        )
        class_dirs = [d for d in class_dirs if per_class[d]]
    paths: list[str] = []
    labels: list[int] = []
    for index, class_dir in enumerate(class_dirs):
        paths.extend(str(p) for p in per_class[class_dir])
        labels.extend([index] * len(per_class[class_dir]))
    if (len(class_dirs) < 2 or not paths) and not problems:
        raise DataError(
            f"`{root}` holds {len(class_dirs)} class folder(s) and {len(paths)} image(s); expected at least 2 "
            f"subfolders (one per class) containing {sorted(extensions)} files"
        )
    # Decode every file once, in parallel, before training: a truncated JPEG would otherwise stop
    # training mid-epoch with a TensorFlow error that does not name the file.
    bad = undecodable_images(paths, channels=config.image.channels)
    if bad and not skip:
        problems.append(
            Problem(
                f"{len(bad)} image file(s) do not decode",
                [f"`{p}` ({why})" for p, why in bad.items()],
                "replace or remove them",
            )
        )
    if problems:
        raise problems_error(str(root), problems)
    if bad:
        findings.append(
            Finding(
                code="DATA-FILES-SKIPPED",
                severity=Severity.WARNING,
                title=f"{len(bad)} image file(s) skipped",
                message=f"{len(bad)} file(s) that do not decode were left out (data.on_bad_records: skip): "
                + "; ".join(f"`{p}` ({why})" for p, why in bad.items()),
                location=str(root),
                evidence={"files": list(bad)},
                fix="replace or remove those files",
            )
        )
        keep = [i for i, p in enumerate(paths) if p not in bad]
        paths = [paths[i] for i in keep]
        labels = [labels[i] for i in keep]
    height, width, channels = config.image.height, config.image.width, config.image.channels

    mode = config.image.resize

    def decode(record: dict[str, tf.Tensor]) -> Features:
        data = tf.io.read_file(record["path"])
        return {"image": decode_and_resize(data, height=height, width=width, channels=channels, mode=mode)}

    path_array = np.asarray(paths)
    return Source(
        records={"path": path_array},
        labels=np.asarray(labels, np.int32),
        class_names=[p.name for p in class_dirs],
        decode=decode,
        feature_spec={"image": tf.TensorSpec([height, width, channels], tf.uint8)},
        kind="image",
        files=path_array,
        findings=findings,
        row_ids=path_array,
    )


def csv_source(config: DataConfig) -> Source:
    table = read_csv_table(config)
    class_names = sorted(set(table.labels), key=lambda v: (not _is_number(v), float(v) if _is_number(v) else 0, v))
    index = {name: i for i, name in enumerate(class_names)}
    records: dict[str, np.ndarray] = {**table.numeric, **table.categorical}
    spec = {c: tf.TensorSpec([], tf.float32) for c in table.numeric}
    spec.update({c: tf.TensorSpec([], tf.string) for c in table.categorical})
    return Source(
        records=records,
        labels=np.asarray([index[v] for v in table.labels], np.int32),
        class_names=class_names,
        decode=lambda record: dict(record),
        feature_spec=spec,
        kind="tabular",
        numeric_columns=list(table.numeric),
        categorical_columns=list(table.categorical),
        findings=table.findings,
        report={
            "missing_values": table.missing,
            "non_numeric_cells": {c: lines for c, lines in table.non_numeric.items()},
        },
        row_ids=table.lines,
        label_values=np.asarray(table.labels, dtype=object),
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def arrays_source(
    features: np.ndarray | dict[str, np.ndarray], labels: np.ndarray, *, class_names: list[str] | None = None
) -> Source:
    """In-memory arrays (Python API). A bare array becomes the feature `x`; uint8 rank-3/4 data is treated as images."""
    if not isinstance(features, dict):
        features = {
            "image" if np.asarray(features).dtype == np.uint8 and np.asarray(features).ndim in (3, 4) else "x": features
        }
    records = {name: np.asarray(value) for name, value in features.items()}
    # numpy unicode arrays have no TF dtype; object arrays of str become tf.string.
    records = {name: value.astype(object) if value.dtype.kind in "US" else value for name, value in records.items()}
    raw_labels = np.asarray(labels).reshape(-1)
    labels = raw_labels.astype(np.int32)
    for name, value in records.items():
        if value.shape[0] != labels.shape[0]:
            raise DataError(
                f"feature `{name}` has {value.shape[0]} rows but labels have {labels.shape[0]}; they must match"
            )
    if "image" in records and records["image"].ndim == 3:
        records["image"] = records["image"][..., None]
    num_classes = int(labels.max()) + 1 if labels.size else 0
    names = class_names or [str(i) for i in range(num_classes)]
    spec = {
        name: tf.TensorSpec(value.shape[1:], tf.as_dtype(value.dtype) if value.dtype != object else tf.string)
        for name, value in records.items()
    }
    # A string `text` feature makes a text source (its other features are numeric inputs beside it).
    is_text = "text" in records and records["text"].dtype == object and records["text"].ndim == 1
    kind = "image" if set(records) == {"image"} else "text" if is_text else "tabular"
    numeric = [n for n, v in records.items() if v.dtype != object and n != "image"]
    return Source(
        records=records,
        labels=labels,
        class_names=names,
        decode=lambda record: dict(record),
        feature_spec=spec,
        kind=kind,
        numeric_columns=numeric,
        label_values=raw_labels,
    )


_LOADERS: dict[DataKind, Callable[[DataConfig], Source]] = {
    DataKind.IMAGE_FOLDER: image_folder_source,
    DataKind.CSV: csv_source,
}


def register_source(kind: DataKind, loader: Callable[[DataConfig], Source]) -> None:
    """Let another module (e.g. the text source) plug in a loader for its DataKind."""
    _LOADERS[kind] = loader


def load_source(config: DataConfig, **arrays: Any) -> Source:
    if config.kind == DataKind.ARRAYS:
        if "features" not in arrays:
            raise DataError("data.kind `arrays` is only available from the Python API: pass features= and labels=")
        return arrays_source(arrays["features"], arrays["labels"], class_names=arrays.get("class_names"))
    if config.kind not in _LOADERS:
        # Sources with heavier dependencies register themselves on import.
        import tfpilot.data.text  # noqa: F401
        import tfpilot.data.tfrecord  # noqa: F401
    return _LOADERS[config.kind](config)
