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

from tfpilot.config.schema import DataConfig, DataKind
from tfpilot.data.image_resize import decode_and_resize
from tfpilot.data.sources import Source, register_source
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


def _read(files: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every serialized record and the shard it came from, read in parallel (deterministic order)."""
    names = tf.data.Dataset.from_tensor_slices(files)
    records = names.interleave(
        lambda f: tf.data.TFRecordDataset(f).map(lambda r: (r, f)),
        cycle_length=min(len(files), 16),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    serialized: list[bytes] = []
    origin: list[bytes] = []
    try:
        for batch, shard in records.batch(4096).prefetch(tf.data.AUTOTUNE):
            serialized.extend(batch.numpy().tolist())
            origin.extend(shard.numpy().tolist())
    except tf.errors.DataLossError as exc:
        raise DataError(
            f"a TFRecord shard is corrupt or truncated ({exc.message.splitlines()[0]}); rewrite it", exit_code=2
        ) from None
    return np.asarray(serialized, dtype=object), np.asarray([o.decode() for o in origin])


def class_names_for(config: DataConfig, labels: np.ndarray) -> list[str]:
    """The class names of int64 class ids (data.tfrecord.class_names, or the ids as strings)."""
    num_classes = int(labels.max()) + 1
    class_names = list(config.tfrecord.class_names or [str(i) for i in range(num_classes)])
    if len(class_names) < num_classes or labels.min() < 0:
        raise DataError(
            f"labels span 0..{num_classes - 1} but data.tfrecord.class_names has {len(class_names)} names",
            exit_code=2,
        )
    return class_names


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


def label_error(config: DataConfig, exc: tf.errors.InvalidArgumentError) -> DataError:
    return DataError(
        f"TFRecords do not match data.tfrecord ({exc.message.splitlines()[0]}); every record needs an int64 "
        f"`{config.tfrecord.label_key}` (data.tfrecord.label_key) and the listed features",
        exit_code=2,
    )


def tfrecord_source(config: DataConfig) -> Source:
    if config.tfrecord.stream:
        from tfpilot.data.tfrecord_stream import streamed_source

        return streamed_source(config)
    files = shard_files(config)
    spec = parsing_spec(config)
    options = config.tfrecord
    serialized, origin = _read(files)
    if serialized.size == 0:
        raise DataError(f"the TFRecord shards {files[:3]} hold no records", exit_code=2)
    try:
        labels = tf.io.parse_example(serialized, {options.label_key: spec[options.label_key]})[options.label_key]
    except tf.errors.InvalidArgumentError as exc:
        raise label_error(config, exc) from None
    label_array = labels.numpy().astype(np.int32)
    class_names = class_names_for(config, label_array)
    decode, feature_spec, images = record_decoder(config)
    if images:
        return Source(
            records={"serialized": serialized},
            labels=label_array,
            class_names=class_names,
            decode=decode,
            feature_spec=feature_spec,
            kind="image",
            files=origin,
        )
    # Tabular records are parsed once here: statistics for normalisation need the values.
    try:
        records = parsed_columns(config, serialized)
    except tf.errors.InvalidArgumentError as exc:
        raise label_error(config, exc) from None
    numeric, categorical = tabular_columns(config)
    return Source(
        records=records,
        labels=label_array,
        class_names=class_names,
        decode=lambda record: dict(record),
        feature_spec=feature_spec,
        kind="tabular",
        numeric_columns=numeric,
        categorical_columns=categorical,
        files=origin,
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
