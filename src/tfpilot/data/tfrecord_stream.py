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
from tfpilot.data.bad_records import Problem
from tfpilot.data.sources import Source
from tfpilot.data.tfrecord import (
    parsed_columns,
    parsing_spec,
    record_decoder,
    shard_files,
    tabular_columns,
)
from tfpilot.data.tfrecord_check import (
    damaged_shards,
    labels_outside_problem,
    settle_record_problems,
    unparsable_records,
)
from tfpilot.errors import DataError

__all__ = ["StreamedSplits", "streamed_source", "split_shards", "read_records"]

SPLITS = ("train", "validation", "test")
# Readers open at once; more shards than this are read in turns (memory per reader is a buffer).
MAX_CYCLE = 16


@dataclasses.dataclass
class StreamedSplits:
    """Where each split's records live on disk and how many usable records each holds.

    files:    split -> shard paths, in read order.
    counts:   split -> records the pipeline yields (bad records left out with skip).
    skip_bad: records that do not parse or decode are dropped by the pipeline, and labels outside
              0..num_classes-1 filtered out (data.on_bad_records: skip; the scan named each one).
    limits:   damaged shard -> the records before its damage, the only ones read from it.
    """

    files: dict[str, list[str]]
    counts: dict[str, int]
    skip_bad: bool = False
    limits: dict[str, int] = dataclasses.field(default_factory=dict)
    num_classes: int = 0


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


def read_records(
    files: list[str], *, with_position: bool = False, limits: dict[str, int] | None = None
) -> tf.data.Dataset:
    """The records of `files` in a deterministic parallel interleave (AUTOTUNE); with positions,
    elements are (shard, index in shard, record). `limits` caps what is read of a damaged shard
    at the records before its damage."""
    caps = [int((limits or {}).get(path, -1)) for path in files]  # take(-1) takes everything

    def read(path: tf.Tensor, cap: tf.Tensor) -> tf.data.Dataset:
        records = tf.data.TFRecordDataset(path).take(cap)
        if with_position:
            return records.enumerate().map(lambda i, r: (path, i, r))
        return records

    slices = (tf.constant(files, tf.string), tf.constant(caps, tf.int64))
    return tf.data.Dataset.from_tensor_slices(slices).interleave(
        read,
        cycle_length=max(1, min(len(files), MAX_CYCLE)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )


@dataclasses.dataclass
class _Scan:
    """Small per-record facts of one split's parsable records, and its records that do not parse."""

    labels: np.ndarray
    prints: np.ndarray
    columns: dict[str, np.ndarray]
    positions: list[tuple[str, int]]
    unparsable: dict[tuple[str, int], str]


def _scan(config: DataConfig, files: list[str], *, tabular: bool, limits: dict[str, int]) -> _Scan:
    """One streaming pass over a split: labels, fingerprints and non-image columns of every record
    that parses, and why each other record does not (a DataLossError from a damaged shard propagates)."""
    spec = parsing_spec(config)
    key = config.tfrecord.label_key
    labels: list[np.ndarray] = []
    prints: list[np.ndarray] = []
    positions: list[tuple[str, int]] = []
    columns: dict[str, list[np.ndarray]] = {}
    unparsable: dict[tuple[str, int], str] = {}
    for shard, index, batch in (
        read_records(files, with_position=True, limits=limits).batch(4096).prefetch(tf.data.AUTOTUNE)
    ):
        named = list(zip((s.decode() for s in shard.numpy()), index.numpy().tolist(), strict=True))
        bad = unparsable_records(batch.numpy(), spec)
        unparsable.update({named[i]: why for i, why in bad.items()})
        ok = [i for i in range(len(named)) if i not in bad]
        good = tf.gather(batch, ok)
        labels.append(tf.io.parse_example(good, {key: spec[key]})[key].numpy())
        # A 64-bit content hash stands in for the record in the duplicate check.
        prints.append(tf.strings.to_hash_bucket_fast(good, 2**63 - 1).numpy())
        positions.extend(named[i] for i in ok)
        if tabular:
            for name, values in parsed_columns(config, good).items():
                columns.setdefault(name, []).append(values)
    joined = {name: np.concatenate(parts) for name, parts in columns.items()}
    if not labels:
        return _Scan(np.zeros([0], np.int64), np.zeros([0], np.int64), joined, positions, unparsable)
    return _Scan(np.concatenate(labels), np.concatenate(prints), joined, positions, unparsable)


def _undecodable(
    config: DataConfig, files: list[str], positions: list[tuple[str, int]], limits: dict[str, int]
) -> dict[tuple[str, int], str]:
    """(shard, index) -> decode error of every image record that does not decode (one parallel pass)."""
    image = config.image
    spec = {"image": parsing_spec(config)["image"]}

    def decodes(shard: tf.Tensor, index: tf.Tensor, record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        data = tf.io.parse_single_example(record, spec)["image"]
        decoded = tf.io.decode_image(data, channels=image.channels, expand_animations=False, dtype=tf.uint8)
        # The decoded shape is an output, so the decode cannot be pruned from the graph.
        return shard, index, tf.shape(decoded)

    survivors = (
        read_records(files, with_position=True, limits=limits)
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
    options = config.tfrecord
    damaged: dict[str, tuple[int, str]] = {}
    try:
        scanned = {split: _scan(config, files[split], tabular=tabular, limits={}) for split in SPLITS}
    except tf.errors.DataLossError:
        # A damaged shard: find every one (and where), then scan again reading each only up to its damage.
        damaged = damaged_shards([path for split in SPLITS for path in files[split]])
        limits = {path: count for path, (count, _) in damaged.items()}
        scanned = {split: _scan(config, files[split], tabular=tabular, limits=limits) for split in SPLITS}
    limits = {path: count for path, (count, _) in damaged.items()}
    empty = [split for split in SPLITS if files[split] and not scanned[split].positions]
    if not scanned["train"].positions or empty:
        raise DataError(f"the streamed {empty or ['train']} shards hold no records; check data.tfrecord", exit_code=2)
    # Every record is checked before any problem is reported: fixing the shards takes one round.
    problems: list[Problem] = []
    bad: dict[tuple[str, int], str] = {}
    if damaged:
        problems.append(
            Problem(
                f"{len(damaged)} shard(s) are truncated or corrupt",
                [f"`{path}` {why}" for path, (_, why) in damaged.items()],
                "rewrite them; the records before the damage are read",
            )
        )
    unparsable = {p: why for split in SPLITS for p, why in scanned[split].unparsable.items()}
    if unparsable:
        problems.append(
            Problem(
                f"{len(unparsable)} record(s) do not match data.tfrecord",
                [f"{path} record {index} ({why})" for (path, index), why in unparsable.items()],
                f"every record needs an int64 `{options.label_key}` and each listed feature with its shape",
            )
        )
        bad.update(unparsable)
    every_label = np.concatenate([scanned[split].labels for split in SPLITS])
    num_classes = len(options.class_names) if options.class_names else int(max(every_label.max(initial=-1), -1)) + 1
    keep: dict[str, np.ndarray] = {}
    outside: dict[tuple[str, int], int] = {}
    for split in SPLITS:
        labels = scanned[split].labels
        keep[split] = (labels >= 0) & (labels < num_classes)
        outside.update(
            {p: int(label) for p, label, k in zip(scanned[split].positions, labels, keep[split], strict=True) if not k}
        )
    if outside:
        problems.append(
            labels_outside_problem(
                [f"{path} record {index} ({options.label_key}={label})" for (path, index), label in outside.items()],
                num_classes=num_classes,
                named=bool(options.class_names),
            )
        )
        bad.update({p: f"label {label} outside the classes" for p, label in outside.items()})
    undecodable: dict[tuple[str, int], str] = {}
    for split in SPLITS:
        positions = [p for p, k in zip(scanned[split].positions, keep[split], strict=True) if k]
        split_problems = _undecodable(config, files[split], positions, limits) if images and positions else {}
        undecodable.update(split_problems)
        keep[split] &= np.asarray([p not in split_problems for p in scanned[split].positions], dtype=bool)
    if undecodable:
        problems.append(
            Problem(
                f"{len(undecodable)} image record(s) do not decode",
                [f"{path} record {index} ({why})" for (path, index), why in undecodable.items()],
                "rewrite them with valid PNG/JPEG bytes",
            )
        )
        bad.update(undecodable)
    names = list(options.class_names or [str(i) for i in range(num_classes)])
    kept = np.concatenate([scanned[split].labels[keep[split]] for split in SPLITS])
    counts = np.bincount(kept, minlength=num_classes) if num_classes else np.zeros([0], np.int64)
    empty_classes = [names[i] for i in range(num_classes) if counts[i] == 0]
    skip = config.on_bad_records == BadRecords.SKIP
    where = str(config.path)
    findings = settle_record_problems(
        where=where,
        problems=problems,
        empty_classes=empty_classes,
        skip=skip,
        damaged={path: why for path, (_, why) in damaged.items()},
        bad={f"{path} record {index}": why for (path, index), why in bad.items()},
        bad_fix="rewrite the shards that hold them",
    )
    if not any(keep[split].any() for split in SPLITS):
        raise DataError(f"`{where}`: every record was a bad record; nothing is left to train on", exit_code=2)
    labels = np.concatenate([scanned[split].labels[keep[split]] for split in SPLITS]).astype(np.int32)
    prints = np.concatenate([scanned[split].prints[keep[split]] for split in SPLITS])
    records: dict[str, np.ndarray] = {"fingerprint": prints}
    numeric: list[str] = []
    categorical: list[str] = []
    if tabular:
        numeric, categorical = tabular_columns(config)
        for name in options.features:
            records[name] = np.concatenate(
                [scanned[split].columns[name][keep[split]] for split in SPLITS if scanned[split].positions]
            )
    kept_positions = [p for split in SPLITS for p, k in zip(scanned[split].positions, keep[split], strict=True) if k]
    source = Source(
        # In-memory facts for the audit and the statistics only; the pipeline reads the shards.
        records=records,
        labels=labels,
        class_names=names,
        decode=decode,
        feature_spec=feature_spec,
        kind="image" if images else "tabular",
        numeric_columns=numeric,
        categorical_columns=categorical,
        files=np.asarray([path for path, _ in kept_positions]),
        findings=findings,
        row_ids=np.asarray([f"{path} record {index}" for path, index in kept_positions]),
    )
    source.streamed = StreamedSplits(
        files=files,
        counts={split: int(keep[split].sum()) for split in SPLITS},
        skip_bad=bool(bad),
        limits=limits,
        num_classes=num_classes,
    )
    return source
