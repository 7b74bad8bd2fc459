"""TFRecord: a source (data.kind: tfrecord) and the writer behind `tfpilot data convert`.

Shards are read with a parallel interleave (one reader per file, AUTOTUNE), and each record is
parsed by the tf.Example spec of data.tfrecord.features inside the pipeline's parallel map.
The serialized records are held in memory once, so the split, the audit and the cache work as
for the other sources; data larger than memory is a limit of this version (see docs/data.md).
Images stay encoded (PNG/JPEG bytes) in the records and are decoded in the map, like files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from tfpilot.config.schema import BadRecords, DataConfig, DataKind
from tfpilot.data.bad_records import Problem
from tfpilot.data.image_resize import decode_and_resize
from tfpilot.data.sources import Source, register_source
from tfpilot.data.tfrecord_check import (
    ShardRecords,
    labels_outside_problem,
    read_shards,
    settle_record_problems,
    undecodable_records,
    unparsable_records,
)
from tfpilot.errors import DataError

__all__ = ["tfrecord_source", "shard_files", "write_tfrecords", "record_decoder", "parsing_spec"]

_DTYPES = {"float32": tf.float32, "int64": tf.int64, "string": tf.string, "image": tf.string}


def shard_files(config: DataConfig) -> list[str]:
    path = Path(str(config.path))
    files = sorted(str(p) for p in path.glob(config.tfrecord.pattern)) if path.is_dir() else [str(path)]
    if not files:
        raise DataError(
            f"no TFRecord shards match `{config.tfrecord.pattern}` in `{path}`; set data.tfrecord.pattern "
            "or point data.path at the shards' folder",
            exit_code=2,
        )
    return files


def parsing_spec(config: DataConfig) -> dict[str, tf.io.FixedLenFeature]:
    options = config.tfrecord
    if not options.features:
        raise DataError(
            "data.tfrecord.features is empty; list each tf.Example feature as `name: {dtype, shape}` "
            "(`tfpilot data convert` prints the spec of the shards it writes)",
            exit_code=2,
        )
    spec = {
        name: tf.io.FixedLenFeature([] if f.dtype == "image" else f.shape, _DTYPES[f.dtype])
        for name, f in options.features.items()
    }
    spec[options.label_key] = tf.io.FixedLenFeature([], tf.int64)
    return spec


def record_decoder(
    config: DataConfig,
) -> tuple[Callable[[dict[str, tf.Tensor]], dict[str, tf.Tensor]], dict[str, tf.TensorSpec], list[str]]:
    """(decode `{"serialized": record}` -> raw features, the raw feature spec, image feature names)."""
    spec = parsing_spec(config)
    image = config.image
    features = config.tfrecord.features
    images = [name for name, f in features.items() if f.dtype == "image"]
    if images and len(features) > 1:
        raise DataError("a TFRecord image source holds one image feature and the label only", exit_code=2)
    if images and images != ["image"]:
        raise DataError(f"name the image feature `image` (got {images}); the image model reads that key", exit_code=2)

    def decode(record: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        parsed = tf.io.parse_single_example(record["serialized"], spec)
        out: dict[str, tf.Tensor] = {}
        for name, feature in features.items():
            if feature.dtype == "image":
                out[name] = decode_and_resize(
                    parsed[name], height=image.height, width=image.width, channels=image.channels, mode=image.resize
                )
            else:
                out[name] = parsed[name]
        return out

    feature_spec = {
        name: tf.TensorSpec([image.height, image.width, image.channels], tf.uint8)
        if f.dtype == "image"
        else tf.TensorSpec(f.shape, _DTYPES[f.dtype])
        for name, f in features.items()
    }
    return decode, feature_spec, images


def tabular_columns(config: DataConfig) -> tuple[list[str], list[str]]:
    """(numeric, categorical) feature names of a tabular TFRecord source."""
    features = config.tfrecord.features
    return (
        [n for n, f in features.items() if f.dtype in ("float32", "int64")],
        [n for n, f in features.items() if f.dtype == "string" and not f.shape],
    )


def parsed_columns(config: DataConfig, serialized: Any) -> dict[str, np.ndarray]:
    """The non-image features of a batch of serialized records as numpy (strings decoded)."""
    spec = parsing_spec(config)
    features = {n: f for n, f in config.tfrecord.features.items() if f.dtype != "image"}
    parsed = tf.io.parse_example(serialized, {n: spec[n] for n in features})
    return {
        name: np.asarray([v.decode() for v in parsed[name].numpy().reshape(-1)], dtype=object).reshape(
            parsed[name].shape
        )
        if f.dtype == "string"
        else parsed[name].numpy()
        for name, f in features.items()
    }


def _record_problems(
    config: DataConfig, records: ShardRecords, *, images: bool
) -> tuple[np.ndarray, list[str], list[Problem], dict[int, str], list[str]]:
    """(labels, class names, problems, bad record index -> why, empty classes): every record is
    checked before any is reported.

    The classes are data.tfrecord.class_names, or 0..the largest label of a parsable record, so a
    class whose records are all bad stays a class (an empty one) instead of vanishing. An empty
    class is a problem of the data, but not a record that can be left out, so it is returned apart."""
    options = config.tfrecord
    spec = parsing_spec(config)
    bad = unparsable_records(records.serialized, spec)
    problems: list[Problem] = []
    if records.damaged:
        problems.append(
            Problem(
                f"{len(records.damaged)} shard(s) are truncated or corrupt",
                [f"`{path}` {why}" for path, why in records.damaged.items()],
                "rewrite them; the records before the damage are read",
            )
        )
    if bad:
        problems.append(
            Problem(
                f"{len(bad)} record(s) do not match data.tfrecord",
                [f"{records.names[i]} ({why})" for i, why in bad.items()],
                f"every record needs an int64 `{options.label_key}` and each listed feature with its shape",
            )
        )
    labels = np.full(len(records.serialized), -1, np.int64)
    good = np.asarray([i for i in range(len(labels)) if i not in bad], np.int64)
    if good.size:
        parsed = tf.io.parse_example(
            tf.constant(records.serialized[good].tolist(), tf.string), {options.label_key: spec[options.label_key]}
        )
        labels[good] = parsed[options.label_key].numpy()
    in_good = labels[good]
    num_classes = len(options.class_names) if options.class_names else int(max(in_good.max(initial=-1), -1)) + 1
    outside = [int(i) for i in good if not 0 <= labels[i] < num_classes]
    if outside:
        problems.append(
            labels_outside_problem(
                [f"{records.names[i]} ({options.label_key}={labels[i]})" for i in outside],
                num_classes=num_classes,
                named=bool(options.class_names),
            )
        )
        bad.update({i: f"label {labels[i]} outside the classes" for i in outside})
    if images:
        decodable = [int(i) for i in good if int(i) not in bad]
        blobs = tf.io.parse_example(
            tf.constant(records.serialized[decodable].tolist(), tf.string), {"image": spec["image"]}
        )["image"].numpy()
        undecodable = {
            decodable[i]: why for i, why in undecodable_records(blobs.tolist(), channels=config.image.channels).items()
        }
        if undecodable:
            problems.append(
                Problem(
                    f"{len(undecodable)} image record(s) do not decode",
                    [f"{records.names[i]} ({why})" for i, why in undecodable.items()],
                    "rewrite them with valid PNG/JPEG bytes",
                )
            )
            bad.update(undecodable)
    names = list(options.class_names or [str(i) for i in range(num_classes)])
    kept = labels[[i for i in range(len(labels)) if i not in bad]]
    counts = np.bincount(kept[kept >= 0], minlength=num_classes) if num_classes else np.zeros([0], np.int64)
    empty = [names[i] for i in range(num_classes) if counts[i] == 0]
    return labels, names, problems, dict(sorted(bad.items())), empty


def tfrecord_source(config: DataConfig) -> Source:
    if config.tfrecord.stream:
        from tfpilot.data.tfrecord_stream import streamed_source

        return streamed_source(config)
    files = shard_files(config)
    decode, feature_spec, images = record_decoder(config)
    records = read_shards(files)
    if records.serialized.size == 0 and not records.damaged:
        raise DataError(f"the TFRecord shards {files[:3]} hold no records", exit_code=2)
    labels, class_names, problems, bad, empty = _record_problems(config, records, images=bool(images))
    where = str(config.path)
    skip = config.on_bad_records == BadRecords.SKIP
    findings = settle_record_problems(
        where=where,
        problems=problems,
        empty_classes=empty,
        skip=skip,
        damaged=dict(records.damaged),
        bad={str(records.names[i]): why for i, why in bad.items()},
        bad_fix="rewrite those records",
    )
    keep = np.ones(len(labels), bool)
    keep[list(bad)] = False
    serialized, origin, names = records.serialized[keep], records.origin[keep], records.names[keep]
    if serialized.size == 0:
        raise DataError(f"`{where}`: every record was a bad record; nothing is left to train on", exit_code=2)
    label_array = labels[keep].astype(np.int32)
    if images:
        return Source(
            records={"serialized": serialized},
            labels=label_array,
            class_names=class_names,
            decode=decode,
            feature_spec=feature_spec,
            kind="image",
            files=origin,
            findings=findings,
            row_ids=names,
        )
    # Tabular records are parsed once here: statistics for normalisation need the values.
    numeric, categorical = tabular_columns(config)
    return Source(
        records=parsed_columns(config, serialized),
        labels=label_array,
        class_names=class_names,
        decode=lambda record: dict(record),
        feature_spec=feature_spec,
        kind="tabular",
        numeric_columns=numeric,
        categorical_columns=categorical,
        files=origin,
        findings=findings,
        row_ids=names,
    )


register_source(DataKind.TFRECORD, tfrecord_source)


def _example(features: dict[str, Any]) -> bytes:
    def feature(value: Any) -> tf.train.Feature:
        if isinstance(value, bytes):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
        array = np.asarray(value).reshape(-1)
        if array.dtype.kind in "iub":
            return tf.train.Feature(int64_list=tf.train.Int64List(value=array.astype(np.int64).tolist()))
        if array.dtype.kind == "f":
            return tf.train.Feature(float_list=tf.train.FloatList(value=array.astype(np.float32).tolist()))
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[str(v).encode() for v in array]))

    return tf.train.Example(
        features=tf.train.Features(feature={k: feature(v) for k, v in features.items()})
    ).SerializeToString()


def write_tfrecords(source: Source, out: str | Path, *, num_shards: int = 4) -> dict[str, Any]:
    """Write every example of an image-folder or CSV source as sharded TFRecords under ``out``.

    Images are stored as their encoded file bytes (smaller than pixels, decoded in the pipeline).
    Returns the `data` config section that reads the shards back."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise DataError(f"`{out}` is a file; `tfpilot data convert` writes a folder of shards", exit_code=2)
    out.mkdir(parents=True, exist_ok=True)
    num_shards = max(1, min(num_shards, len(source)))

    def rows() -> Iterator[dict[str, Any]]:
        for index in range(len(source)):
            row: dict[str, Any] = {"label": int(source.labels[index])}
            if source.kind == "image":
                row["image"] = Path(str(source.records["path"][index])).read_bytes()
            else:
                for name, values in source.records.items():
                    value = values[index]
                    row[name] = str(value).encode() if values.dtype == object or values.dtype.kind in "US" else value
            yield row

    paths = [out / f"data-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)]
    temporary = [p.with_name(f".{p.name}.tmp") for p in paths]
    writers = [tf.io.TFRecordWriter(str(t)) for t in temporary]
    try:
        for index, row in enumerate(rows()):
            writers[index % num_shards].write(_example(row))
    finally:
        for writer in writers:
            writer.close()
    for tmp, path in zip(temporary, paths, strict=True):
        os.replace(tmp, path)
    if source.kind == "image":
        features: dict[str, Any] = {"image": {"dtype": "image", "shape": []}}
    else:
        features = {
            name: {"dtype": "string" if spec.dtype == tf.string else spec.dtype.name, "shape": list(spec.shape)}
            for name, spec in source.feature_spec.items()
        }
        features = {
            n: {**f, "dtype": "float32" if f["dtype"] not in ("string", "int64") else f["dtype"]}
            for n, f in features.items()
        }
    section = {
        "kind": "tfrecord",
        "path": str(out),
        "tfrecord": {"features": features, "label_key": "label", "class_names": list(source.class_names)},
    }
    (out / "data_config.json").write_text(json.dumps(section, indent=2) + "\n")
    return section
