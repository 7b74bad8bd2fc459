"""Data sources: each turns a config into in-memory records + labels, plus a decode function
that runs inside the tf.data pipeline (so file reads and image decoding are parallel and cached)."""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from tfpilot.config.schema import DataConfig, DataKind
from tfpilot.errors import DataError

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

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def image_folder_source(config: DataConfig) -> Source:
    root = Path(config.path)
    if not root.is_dir():
        raise DataError(
            f"`data.path` must be a folder with one subfolder per class for kind image_folder, got `{root}`"
        )
    extensions = {e.lower() for e in config.image.extensions}
    class_dirs = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    paths: list[str] = []
    labels: list[int] = []
    for index, class_dir in enumerate(class_dirs):
        files = sorted(p for p in class_dir.iterdir() if p.suffix.lower() in extensions)
        paths.extend(str(p) for p in files)
        labels.extend([index] * len(files))
    if len(class_dirs) < 2 or not paths:
        raise DataError(
            f"`{root}` holds {len(class_dirs)} class folder(s) and {len(paths)} image(s); expected at least 2 "
            f"subfolders (one per class) containing {sorted(extensions)} files"
        )
    _check_image_headers(paths)
    height, width, channels = config.image.height, config.image.width, config.image.channels

    def decode(record: dict[str, tf.Tensor]) -> Features:
        data = tf.io.read_file(record["path"])
        # decode_image handles PNG, JPEG, GIF and BMP; expand_animations=False keeps a static rank-3 shape.
        image = tf.io.decode_image(data, channels=channels, expand_animations=False, dtype=tf.uint8)
        image = tf.ensure_shape(image, [None, None, channels])
        resized = tf.image.resize(image, [height, width], method="bilinear", antialias=True)
        # Resize only when needed so already-sized images stay bit-exact.
        same = tf.logical_and(tf.equal(tf.shape(image)[0], height), tf.equal(tf.shape(image)[1], width))
        image = tf.cond(
            same,
            lambda: tf.reshape(image, [height, width, channels]),
            lambda: tf.cast(tf.clip_by_value(tf.round(resized), 0, 255), tf.uint8),
        )
        return {"image": image}

    path_array = np.asarray(paths)
    return Source(
        records={"path": path_array},
        labels=np.asarray(labels, np.int32),
        class_names=[p.name for p in class_dirs],
        decode=decode,
        feature_spec={"image": tf.TensorSpec([height, width, channels], tf.uint8)},
        kind="image",
        files=path_array,
    )


# Leading bytes of the formats tf.io.decode_image reads. A file with none of them would fail
# inside the tf.data graph mid-training with a TensorFlow traceback that does not name the file.
_IMAGE_SIGNATURES = (
    b"\x89PNG\r\n\x1a\n",
    b"\xff\xd8\xff",
    b"GIF87a",
    b"GIF89a",
    b"BM",
    b"\xff\x0a",
    b"\x00\x00\x00\x0cJXL ",
)


def _is_image_header(head: bytes) -> bool:
    return head.startswith(_IMAGE_SIGNATURES) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")


def _check_image_headers(paths: list[str]) -> None:
    """Read 12 bytes per file up front so a corrupt or mislabelled file is a DataError naming it."""
    bad = []
    for path in paths:
        with open(path, "rb") as handle:
            if not _is_image_header(handle.read(12)):
                bad.append(path)
    if bad:
        shown = ", ".join(f"`{p}`" for p in bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        raise DataError(
            f"{len(bad)} file(s) are not PNG, JPEG, GIF, BMP or WebP images: {shown}; remove or replace them "
            "(or narrow data.image.extensions)"
        )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_source(config: DataConfig) -> Source:
    path = Path(config.path)
    options = config.csv
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        rows = list(reader)
    if not rows:
        raise DataError(f"CSV `{path}` has no data rows; expected a header line and at least one row")
    if options.label_column not in header:
        raise DataError(
            f"CSV `{path}` has no label column `{options.label_column}` (columns: {header}); set `data.csv.label_column`"
        )
    categorical = list(options.categorical_columns)
    missing = [c for c in categorical + list(options.numeric_columns or []) if c not in header]
    if missing:
        raise DataError(f"CSV `{path}` lacks column(s) {missing}; available columns: {header}")
    if options.numeric_columns is None:
        numeric = [
            c
            for c in header
            if c != options.label_column and c not in categorical and all(_is_number(r[c]) for r in rows if r[c] != "")
        ]
    else:
        numeric = list(options.numeric_columns)
    records: dict[str, np.ndarray] = {}
    for column in numeric:
        try:
            records[column] = np.asarray([float(r[column]) if r[column] != "" else np.nan for r in rows], np.float32)
        except ValueError as exc:
            raise DataError(
                f"CSV `{path}` column `{column}` is listed as numeric but holds a non-number ({exc})"
            ) from None
    for column in categorical:
        records[column] = np.asarray([r[column] for r in rows], dtype=object).astype(str)
    raw_labels = [r[options.label_column] for r in rows]
    class_names = sorted(set(raw_labels), key=lambda v: (not _is_number(v), float(v) if _is_number(v) else 0, v))
    index = {name: i for i, name in enumerate(class_names)}
    spec = {c: tf.TensorSpec([], tf.float32) for c in numeric}
    spec.update({c: tf.TensorSpec([], tf.string) for c in categorical})
    return Source(
        records=records,
        labels=np.asarray([index[v] for v in raw_labels], np.int32),
        class_names=class_names,
        decode=lambda record: dict(record),
        feature_spec=spec,
        kind="tabular",
        numeric_columns=numeric,
        categorical_columns=categorical,
    )


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
    labels = np.asarray(labels).astype(np.int32).reshape(-1)
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
    return _LOADERS[config.kind](config)
