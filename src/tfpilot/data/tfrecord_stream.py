"""Streamed TFRecords (data.tfrecord.stream: true): shards read from disk every epoch, never held in memory.

For data larger than memory. What has to be known before the first step is learned in one
streaming pass that keeps only small per-example facts: the label, a content fingerprint (for
the duplicate check of the audit) and, for tables, the non-image values the normalisation
statistics need. Images are decoded once in a second parallel pass, so a record that does not
decode is named before training instead of crashing an epoch.

Splits are whole shards (data.tfrecord.splits globs, or shards assigned by the data.split
fractions and seed), the way large datasets ship (train-*, validation-*). Under multi-worker
training each worker reads only its own shards (sharding by file, as the tf.data guide does for
file-based input) instead of every worker reading every record.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import tensorflow as tf

from tfpilot.config.schema import BadRecords, DataConfig
from tfpilot.data.sources import Source
from tfpilot.data.tfrecord import (
    class_names_for,
    label_error,
    parsed_columns,
    parsing_spec,
    record_decoder,
    shard_files,
    tabular_columns,
)
from tfpilot.errors import DataError
from tfpilot.findings import Finding, Severity

__all__ = ["StreamedSplits", "streamed_source", "split_shards", "read_records"]

SPLITS = ("train", "validation", "test")
# Readers open at once; more shards than this are read in turns (memory per reader is a buffer).
MAX_CYCLE = 16


@dataclasses.dataclass
class StreamedSplits:
    """Where each split's records live on disk and how many usable records each holds.

    files:  split -> shard paths, in read order.
    counts: split -> records the pipeline yields (records that do not decode left out with skip).
    skip_undecodable: records that do not decode are dropped by the pipeline (data.on_bad_records: skip).
    """

    files: dict[str, list[str]]
    counts: dict[str, int]
    skip_undecodable: bool = False


def _glob(root: Path, pattern: str) -> list[str]:
    return sorted(str(p) for p in root.glob(pattern) if p.is_file())


def split_shards(config: DataConfig) -> dict[str, list[str]]:
    """split -> shards: the data.tfrecord.splits globs, or whole shards assigned by fraction and seed."""
    options = config.tfrecord
    root = Path(str(config.path))
    if options.splits:
        if not root.is_dir():
            raise DataError(
                f"data.tfrecord.splits names globs inside a folder, but `{root}` is not a folder; "
                "point data.path at the shards' folder",
                exit_code=2,
            )
        files = {split: _glob(root, pattern) for split, pattern in options.splits.items()}
        for split, found in files.items():
            if not found:
                raise DataError(
                    f"data.tfrecord.splits.{split} `{options.splits[split]}` matches no shard in `{root}`; "
                    "fix the glob or remove the split",
                    exit_code=2,
                )
        seen: dict[str, str] = {}
        for split, found in files.items():
            for path in found:
                if path in seen:
                    raise DataError(
                        f"shard `{path}` matches both splits.{seen[path]} and splits.{split}; "
                        "a shard belongs to one split",
                        exit_code=2,
                    )
                seen[path] = split
        return {split: files.get(split, []) for split in SPLITS}
    shards = shard_files(config)
    fractions = config.split
    order = [shards[i] for i in np.random.default_rng(fractions.seed).permutation(len(shards))]
    # At least one shard for a split that asks for any share of the data.
    num_test = max(1, round(len(shards) * fractions.test)) if fractions.test > 0 else 0
    num_validation = max(1, round(len(shards) * fractions.validation)) if fractions.validation > 0 else 0
    if num_test + num_validation >= len(shards):
        raise DataError(
            f"streamed shards are split whole, and {len(shards)} shard(s) cannot give train, validation "
            f"({fractions.validation}) and test ({fractions.test}) their own; write more shards "
            "(`tfpilot data convert --shards N`) or name each split's shards in data.tfrecord.splits",
            exit_code=2,
        )
    return {
        "test": sorted(order[:num_test]),
        "validation": sorted(order[num_test : num_test + num_validation]),
        "train": sorted(order[num_test + num_validation :]),
    }


def read_records(files: list[str], *, with_position: bool = False) -> tf.data.Dataset:
    """The records of `files` in a deterministic parallel interleave (AUTOTUNE); with positions,
    elements are (shard, index in shard, record)."""

    def read(path: tf.Tensor) -> tf.data.Dataset:
        records = tf.data.TFRecordDataset(path)
        if with_position:
            return records.enumerate().map(lambda i, r: (path, i, r))
        return records

    return tf.data.Dataset.from_tensor_slices(tf.constant(files, tf.string)).interleave(
        read,
        cycle_length=max(1, min(len(files), MAX_CYCLE)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )


def _scan(config: DataConfig, files: list[str], *, tabular: bool) -> tuple[np.ndarray, np.ndarray, dict, list]:
    """(labels, fingerprints, non-image columns, (shard, index) positions) of every record, streamed."""
    label_spec = {config.tfrecord.label_key: parsing_spec(config)[config.tfrecord.label_key]}
    labels: list[np.ndarray] = []
    prints: list[np.ndarray] = []
    positions: list[tuple[str, int]] = []
    columns: dict[str, list[np.ndarray]] = {}
    try:
        for shard, index, batch in read_records(files, with_position=True).batch(4096).prefetch(tf.data.AUTOTUNE):
            labels.append(tf.io.parse_example(batch, label_spec)[config.tfrecord.label_key].numpy())
            # A 64-bit content hash stands in for the record in the duplicate check.
            prints.append(tf.strings.to_hash_bucket_fast(batch, 2**63 - 1).numpy())
            positions.extend(zip((s.decode() for s in shard.numpy()), index.numpy().tolist(), strict=True))
            if tabular:
                for name, values in parsed_columns(config, batch).items():
                    columns.setdefault(name, []).append(values)
    except tf.errors.DataLossError as exc:
        raise DataError(
            f"a TFRecord shard is corrupt or truncated ({exc.message.splitlines()[0]}); rewrite it", exit_code=2
        ) from None
    except tf.errors.InvalidArgumentError as exc:
        raise label_error(config, exc) from None
    joined = {name: np.concatenate(parts) for name, parts in columns.items()}
    if not labels:
        return np.zeros([0], np.int32), np.zeros([0], np.int64), joined, positions
    return np.concatenate(labels).astype(np.int32), np.concatenate(prints), joined, positions


def _undecodable(config: DataConfig, files: list[str], positions: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """(shard, index) -> decode error of every image record that does not decode (one parallel pass)."""
    image = config.image
    spec = {"image": parsing_spec(config)["image"]}

    def decodes(shard: tf.Tensor, index: tf.Tensor, record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        data = tf.io.parse_single_example(record, spec)["image"]
        decoded = tf.io.decode_image(data, channels=image.channels, expand_animations=False, dtype=tf.uint8)
        # The decoded shape is an output, so the decode cannot be pruned from the graph.
        return shard, index, tf.shape(decoded)

    survivors = (
        read_records(files, with_position=True)
        .map(decodes, num_parallel_calls=tf.data.AUTOTUNE)
        .ignore_errors()
        .batch(4096)
    )
    good: set[tuple[str, int]] = set()
    for shard, index, _ in survivors:
        good.update(zip((s.decode() for s in shard.numpy()), index.numpy().tolist(), strict=True))
    bad = [p for p in positions if p not in good]
    problems: dict[tuple[str, int], str] = {}
    for path, position in bad:
        record = next(iter(tf.data.TFRecordDataset(path).skip(position).take(1)))
        try:
            decodes(tf.constant(path), tf.constant(position, tf.int64), record)
            problems[(path, position)] = "does not decode"
        except tf.errors.InvalidArgumentError as exc:
            problems[(path, position)] = (exc.message or "does not decode").strip().splitlines()[0][:160]
    return problems


def streamed_source(config: DataConfig) -> Source:
    files = split_shards(config)
    decode, feature_spec, images = record_decoder(config)
    tabular = not images
    scanned = {split: _scan(config, files[split], tabular=tabular) for split in SPLITS}
    empty = [split for split in SPLITS if files[split] and scanned[split][0].size == 0]
    if scanned["train"][0].size == 0 or empty:
        raise DataError(f"the streamed {empty or ['train']} shards hold no records; check data.tfrecord", exit_code=2)
    findings: list[Finding] = []
    keep: dict[str, np.ndarray] = {}
    problems: dict[tuple[str, int], str] = {}
    for split in SPLITS:
        positions = scanned[split][3]
        split_problems = _undecodable(config, files[split], positions) if images and positions else {}
        problems.update(split_problems)
        keep[split] = np.asarray([p not in split_problems for p in positions], dtype=bool)
    skip = config.on_bad_records == BadRecords.SKIP
    if problems:
        listed = "; ".join(f"{path} record {index}: {why}" for (path, index), why in list(problems.items())[:3])
        if not skip:
            raise DataError(
                f"{len(problems)} streamed record(s) do not decode ({listed}); rewrite those shards "
                "or set data.on_bad_records: skip to leave the records out",
                exit_code=2,
            )
        findings.append(
            Finding(
                code="DATA-SKIPPED-RECORDS",
                severity=Severity.WARNING,
                title=f"{len(problems)} record(s) that do not decode left out",
                message=f"{len(problems)} streamed record(s) were left out (data.on_bad_records: skip): {listed}",
                location=str(config.path),
                evidence={"records": [f"{path}#{index}" for path, index in problems]},
                fix="rewrite the shards that hold them",
            )
        )
    labels = np.concatenate([scanned[split][0][keep[split]] for split in SPLITS])
    prints = np.concatenate([scanned[split][1][keep[split]] for split in SPLITS])
    class_names = class_names_for(config, labels)
    records: dict[str, np.ndarray] = {"fingerprint": prints}
    numeric: list[str] = []
    categorical: list[str] = []
    if tabular:
        numeric, categorical = tabular_columns(config)
        for name in config.tfrecord.features:
            records[name] = np.concatenate([scanned[split][2][name][keep[split]] for split in SPLITS if files[split]])
    origin = np.asarray(
        [path for split in SPLITS for (path, _), k in zip(scanned[split][3], keep[split], strict=True) if k]
    )
    source = Source(
        # In-memory facts for the audit and the statistics only; the pipeline reads the shards.
        records=records,
        labels=labels,
        class_names=class_names,
        decode=decode,
        feature_spec=feature_spec,
        kind="image" if images else "tabular",
        numeric_columns=numeric,
        categorical_columns=categorical,
        files=origin,
        findings=findings,
        row_ids=np.asarray([f"{path} record {index}" for split in SPLITS for (path, index) in scanned[split][3]])[
            np.concatenate([keep[split] for split in SPLITS])
        ],
    )
    source.streamed = StreamedSplits(
        files=files, counts={split: int(keep[split].sum()) for split in SPLITS}, skip_undecodable=bool(problems)
    )
    return source
