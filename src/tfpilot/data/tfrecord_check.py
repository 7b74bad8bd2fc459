"""One pass over TFRecord shards that finds every bad record before the first step.

A damaged shard, a record without the label (or a listed feature, or with the wrong number of
values), a label outside the classes and an image that does not decode would each stop training
mid-epoch with a TensorFlow error naming no record, or, for a label outside the classes, train
on a class id the model has no output for. Each is found here, for every record, and named as
`shard record N` (the record's position in its shard).
"""

from __future__ import annotations

import dataclasses
import os
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import tensorflow as tf

from tfpilot.data.bad_records import Problem, problems_error, skipped_finding
from tfpilot.data.image_check import decode_problem
from tfpilot.findings import Finding, Severity

__all__ = ["ShardRecords", "read_shards", "damaged_shards", "unparsable_records", "undecodable_records"]

_BATCH = 4096


@dataclasses.dataclass
class ShardRecords:
    """The readable records of a list of shards.

    serialized: object array of the serialized tf.Examples, in a deterministic order.
    origin:     the shard each record came from.
    names:      `shard record N` of each record, what the findings and errors call it.
    damaged:    shard -> why its records from some point on cannot be read (truncated or corrupt).
    """

    serialized: np.ndarray
    origin: np.ndarray
    names: np.ndarray
    damaged: dict[str, str]


# Errors raised inside a tf.data or tf.function graph start with `{{function_node ...}}`: noise to a reader.
_FUNCTION_NODE = re.compile(r"\{\{function_node [^}]*\}\}\s*")
_OP_SUFFIX = re.compile(r"\s*\[Op:[^\]]*\](\s*name:.*)?$")


def _first_line(exc: tf.errors.OpError) -> str:
    text = _FUNCTION_NODE.sub("", exc.message or "").strip() or type(exc).__name__
    return _OP_SUFFIX.sub("", text.splitlines()[0])[:160]


def _read_parallel(files: list[str]) -> tuple[list[bytes], list[str], list[int]]:
    """Every record with its shard and position, one reader per shard in a deterministic interleave."""

    def read(path: tf.Tensor) -> tf.data.Dataset:
        return tf.data.TFRecordDataset(path).enumerate().map(lambda i, r: (path, i, r))

    records = tf.data.Dataset.from_tensor_slices(tf.constant(files, tf.string)).interleave(
        read, cycle_length=max(1, min(len(files), 16)), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    serialized: list[bytes] = []
    origin: list[str] = []
    position: list[int] = []
    for shard, index, batch in records.batch(_BATCH).prefetch(tf.data.AUTOTUNE):
        serialized.extend(batch.numpy().tolist())
        origin.extend(s.decode() for s in shard.numpy())
        position.extend(index.numpy().tolist())
    return serialized, origin, position


def _read_damaged(path: str) -> tuple[list[bytes], str | None]:
    """The records of one shard up to its damage, and why reading stopped there (None: it did not)."""
    try:
        return [r for batch in tf.data.TFRecordDataset(path).batch(_BATCH) for r in batch.numpy().tolist()], None
    except tf.errors.DataLossError:
        pass
    # Record by record, so every record before the damage is kept (a failed batch loses all of its records).
    records: list[bytes] = []
    iterator = iter(tf.data.TFRecordDataset(path))
    while True:
        try:
            records.append(next(iterator).numpy())
        except StopIteration:
            return records, None
        except tf.errors.DataLossError as exc:
            return records, f"unreadable from record {len(records)} on ({_first_line(exc)})"


def damaged_shards(files: list[str]) -> dict[str, tuple[int, str]]:
    """shard -> (records readable before its damage, why), streamed: no shard is held in memory."""
    damaged: dict[str, tuple[int, str]] = {}
    for path in files:
        try:
            for _ in tf.data.TFRecordDataset(path).batch(_BATCH):
                pass
            continue
        except tf.errors.DataLossError:
            pass
        count = 0
        iterator = iter(tf.data.TFRecordDataset(path))
        while True:
            try:
                next(iterator)
            except StopIteration:
                break
            except tf.errors.DataLossError as exc:
                damaged[path] = (count, f"unreadable from record {count} on ({_first_line(exc)})")
                break
            count += 1
    return damaged


def read_shards(files: list[str]) -> ShardRecords:
    """Read every shard; a damaged one keeps the records before its damage and is named in `damaged`."""
    damaged: dict[str, str] = {}
    try:
        serialized, origin, position = _read_parallel(files)
    except tf.errors.DataLossError:
        # Some shard is damaged: read each on its own, so every damaged shard is named, not just the first.
        serialized, origin, position = [], [], []
        for path in files:
            records, why = _read_damaged(path)
            serialized.extend(records)
            origin.extend([path] * len(records))
            position.extend(range(len(records)))
            if why is not None:
                damaged[path] = why
    return ShardRecords(
        serialized=np.asarray(serialized, dtype=object),
        origin=np.asarray(origin, dtype=str),
        names=np.asarray([f"{path} record {index}" for path, index in zip(origin, position, strict=True)], dtype=str),
        damaged=damaged,
    )


def unparsable_records(serialized: np.ndarray, spec: dict[str, tf.io.FixedLenFeature]) -> dict[int, str]:
    """index -> TensorFlow's parse error, for every record that does not parse with `spec`.

    Records are parsed a batch at a time; only a batch that fails is parsed record by record."""
    problems: dict[int, str] = {}
    for start in range(0, len(serialized), _BATCH):
        batch = serialized[start : start + _BATCH]
        try:
            tf.io.parse_example(tf.constant(batch.tolist(), tf.string), spec)
            continue
        except tf.errors.InvalidArgumentError:
            pass
        for offset, record in enumerate(batch.tolist()):
            try:
                tf.io.parse_single_example(record, spec)
            except tf.errors.InvalidArgumentError as exc:
                problems[start + offset] = _first_line(exc)
    return problems


def undecodable_records(images: list[bytes], *, channels: int) -> dict[int, str]:
    """index -> decode error of every encoded image that does not decode (threads: eager decodes release the GIL)."""
    workers = max(1, min(16, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        problems = list(pool.map(lambda data: decode_problem(data, channels), images))
    return {index: why for index, why in enumerate(problems) if why is not None}


def settle_record_problems(
    *,
    where: str,
    problems: list[Problem],
    empty_classes: list[str],
    skip: bool,
    damaged: dict[str, str],
    bad: dict[str, str],
    bad_fix: str,
) -> list[Finding]:
    """Every problem of the shards at once: one DataError listing them all (data.on_bad_records: error),
    or, with skip, the findings that name every shard tail and record left out and every empty class.
    Shared by the in-memory and the streamed TFRecord sources, so both say the same."""
    if empty_classes and not skip:
        problems.append(
            Problem(
                f"{len(empty_classes)} class(es) have no records",
                empty_classes,
                "a class with no examples cannot be learned: add records of them, or correct data.tfrecord.class_names",
            )
        )
    if problems and not skip:
        raise problems_error(where, problems)
    findings: list[Finding] = []
    if damaged:
        findings.append(
            skipped_finding(
                code="DATA-SHARDS-TRUNCATED",
                what="shard tails",
                where=where,
                reasons=damaged,
                fix="rewrite those shards; their records from the damage on were not read",
            )
        )
    if bad:
        findings.append(
            skipped_finding(code="DATA-SKIPPED-RECORDS", what="records", where=where, reasons=bad, fix=bad_fix)
        )
    if empty_classes:
        findings.append(
            Finding(
                code="DATA-EMPTY-CLASS",
                severity=Severity.WARNING,
                title=f"{len(empty_classes)} class(es) with no records",
                message=f"class(es) {empty_classes} of `{where}` have no records; the model has an output for each "
                "that it never learns",
                location=where,
                evidence={"classes": empty_classes},
                fix="add records of those classes, or correct data.tfrecord.class_names",
            )
        )
    return findings


def labels_outside_problem(items: list[str], *, num_classes: int, named: bool) -> Problem:
    """Records whose label is no class: `items` name each (`shard record 7 (label=9)`); `named`: the
    classes come from data.tfrecord.class_names."""
    expected = f"0..{num_classes - 1} (data.tfrecord.class_names has {num_classes} names)" if named else "0 or more"
    return Problem(
        f"{len(items)} record(s) have a label outside the classes {expected}",
        items,
        "correct those labels, or data.tfrecord.class_names",
    )
