"""Text / sequence classification source and its preprocessing (tokenise -> vocabulary ids).

Source: `data.kind: text` reads a CSV (`data.text.text_column`, `data.text.label_column`) or a
.txt/.tsv file of `label<TAB>text` lines. The raw serving feature is `text`, one tf.string
scalar per example, so a client sends sentences and never re-implements tokenisation.

Tokenisation uses TensorFlow string ops only (lowercase, punctuation -> space, whitespace
split), both when the vocabulary is built and when it is applied, so Python and the graph can
never tokenise differently. Ids: 0 = padding, 1 = out of vocabulary, 2.. = the most frequent
training-split tokens. The vocabulary is a JSON list in preprocessing.json; the lookup table is
a tf.lookup.StaticHashTable created eagerly (tf.init_scope) and held by a tf.Module that export
tracks, so the same table serves tf.data, the Python SavedModel loader and the v1 session loader
(its initializer is part of the SavedModel's init op).
"""

from __future__ import annotations

import csv
import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from tfpilot.config.schema import BadRecords, Batching, DataConfig, DataKind, TextOptions
from tfpilot.data.bad_records import Problem, problems_error, skipped_finding
from tfpilot.data.csv_table import check_file_path
from tfpilot.data.preprocessing import Preprocessor
from tfpilot.data.sources import Source, register_source
from tfpilot.errors import DataError
from tfpilot.findings import Finding, Severity

__all__ = [
    "text_source",
    "fit_text_preprocessor",
    "normalize_text",
    "tokenize",
    "TextLookup",
    "text_transform",
    "PAD_ID",
    "OOV_ID",
]

PAD_ID = 0
OOV_ID = 1
TEXT_FEATURE = "text"
# Unicode-aware: letters and digits of any script survive, everything else separates tokens.
_PUNCTUATION = r"[^\p{L}\p{N}\s]+"


def normalize_text(text: tf.Tensor) -> tf.Tensor:
    return tf.strings.regex_replace(tf.strings.lower(text, encoding="utf-8"), _PUNCTUATION, " ")


def tokenize(text: tf.Tensor) -> tf.Tensor | tf.RaggedTensor:
    """Scalar string -> 1-D string tokens; [batch] strings -> RaggedTensor [batch, None]."""
    return tf.strings.split(normalize_text(text))


# ----------------------------------------------------------------------------------- source


@dataclasses.dataclass
class _Lines:
    """What a text file holds: the usable examples with their file lines, and every bad line with why."""

    texts: list[str] = dataclasses.field(default_factory=list)
    labels: list[str] = dataclasses.field(default_factory=list)
    lines: list[int] = dataclasses.field(default_factory=list)
    bad: dict[int, str] = dataclasses.field(default_factory=dict)  # file line -> why it is not an example
    problems: list[Problem] = dataclasses.field(default_factory=list)  # not about lines: a missing column
    # label -> file lines of the bad lines that name it (a class seen only there would vanish with skip).
    bad_labels: dict[str, list[int]] = dataclasses.field(default_factory=dict)


def _read_delimited(path: Path, options: TextOptions) -> _Lines:
    read = _Lines()
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        # Each line is decoded on its own, so one stray byte names its line instead of failing the file.
        try:
            line = raw.rstrip(b"\r").decode("utf-8")
        except UnicodeDecodeError as exc:
            read.bad[number] = f"not valid UTF-8 (byte {raw[exc.start : exc.start + 1]!r} at column {exc.start + 1})"
            continue
        if not line.strip():
            continue
        label, tab, text = line.partition("\t")
        if not tab:
            read.bad[number] = "no TAB between label and text"
        elif not label.strip():
            read.bad[number] = "empty label"
        else:
            read.texts.append(text)
            read.labels.append(label.strip())
            read.lines.append(number)
    return read


def _read_csv(path: Path, options: TextOptions) -> _Lines:
    read = _Lines()
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = list(reader.fieldnames or [])
            rows = [(reader.line_num, row) for row in reader]
    except UnicodeDecodeError as exc:
        raise DataError(
            f"text CSV `{path}` is not valid UTF-8 (byte {exc.object[exc.start : exc.start + 1]!r} at offset "
            f"{exc.start}); save it as UTF-8",
            exit_code=2,
        ) from None
    absent = [
        (field, column)
        for field, column in (("text_column", options.text_column), ("label_column", options.label_column))
        if column not in header
    ]
    if absent:
        read.problems.append(
            Problem(
                f"no column(s) {[column for _, column in absent]} (columns: {header})",
                fix="set " + " and ".join(f"`data.text.{field}`" for field, _ in absent),
            )
        )
        return read
    for number, row in rows:
        # DictReader puts extra cells under the key None and leaves missing ones None.
        if None in row or any(value is None for value in row.values()):
            read.bad[number] = "a different number of cells than the header"
        elif not row[options.label_column].strip():
            read.bad[number] = "empty label"
        else:
            read.texts.append(row[options.text_column] or "")
            read.labels.append(row[options.label_column].strip())
            read.lines.append(number)
            continue
        label = row.get(options.label_column)
        if isinstance(label, str) and label.strip():
            read.bad_labels.setdefault(label.strip(), []).append(number)
    return read


def _sorted_labels(raw: list[str]) -> list[str]:
    def key(value: str):
        try:
            return (0, float(value), value)
        except ValueError:
            return (1, 0.0, value)

    return sorted(set(raw), key=key)


def text_source(config: DataConfig) -> Source:
    path = Path(str(config.path))
    if path.is_dir():
        check_file_path(path, kind="text")
    if not path.is_file():
        raise DataError(f"`data.path` must be a .csv, .tsv or .txt file for kind text, got `{path}`")
    reader = _read_csv if path.suffix.lower() == ".csv" else _read_delimited
    read = reader(path, config.text)
    if read.problems:
        raise problems_error(str(path), read.problems, skippable=False)
    # Every bad line is collected before any is reported: fixing the file takes one round.
    problems: list[Problem] = []
    by_reason: dict[str, list[int]] = {}
    for number, why in read.bad.items():
        by_reason.setdefault(why.split(" (")[0], []).append(number)
    for why, numbers in by_reason.items():
        what, fix = _LINE_PROBLEMS[why]
        problems.append(
            Problem(
                f"{len(numbers)} line(s) {what}",
                [
                    f"line {number}" + (f" ({read.bad[number]})" if read.bad[number] != why else "")
                    for number in numbers
                ],
                fix,
            )
        )
    vanished = sorted(set(read.bad_labels) - set(read.labels))
    skip = config.on_bad_records == BadRecords.SKIP
    findings: list[Finding] = []
    if vanished:
        fix = "fix those lines: with data.on_bad_records: skip these classes would have no examples"
        if not skip:
            problems.append(Problem(f"{len(vanished)} class(es) have rows only on the bad lines", vanished, fix))
        findings.append(
            Finding(
                code="DATA-EMPTY-CLASS",
                severity=Severity.WARNING,
                title=f"{len(vanished)} class(es) with no examples",
                message=f"`{path}`: class(es) {vanished} have rows only on skipped lines; they are not classes of "
                "this model",
                location=str(path),
                evidence={"classes": vanished},
                fix=fix,
            )
        )
    if problems and not skip:
        raise problems_error(str(path), problems)
    if read.bad:
        findings.append(
            skipped_finding(
                code="DATA-ROWS-SKIPPED",
                what="lines",
                where=str(path),
                reasons={f"line {number}": why for number, why in sorted(read.bad.items())},
                fix="fix those lines to train on every example",
            )
        )
    if not read.texts:
        raise DataError(f"text file `{path}` holds no examples; expected one example per line/row")
    class_names = _sorted_labels(read.labels)
    if len(class_names) < 2:
        raise DataError(
            f"text file `{path}` has {len(class_names)} distinct label(s) {class_names}; a classifier needs at least 2"
        )
    index = {name: i for i, name in enumerate(class_names)}
    return Source(
        records={TEXT_FEATURE: np.asarray(read.texts, dtype=object)},
        labels=np.asarray([index[v] for v in read.labels], np.int32),
        class_names=class_names,
        decode=lambda record: dict(record),
        feature_spec={TEXT_FEATURE: tf.TensorSpec([], tf.string)},
        kind="text",
        findings=findings,
        row_ids=np.asarray(read.lines, np.int64),
    )


# Each reason a line is not an example: what the error says of those lines, and how to fix them.
_LINE_PROBLEMS = {
    "no TAB between label and text": (
        "have no TAB between label and text",
        "write `label<TAB>text` lines, or use a .csv with data.text.text_column / label_column",
    ),
    "empty label": ("have an empty label", "an empty label is never a class: write the label"),
    "not valid UTF-8": ("are not valid UTF-8", "save the file as UTF-8"),
    "a different number of cells than the header": (
        "do not have the header's number of cells",
        "fix the delimiters or quoting on those lines",
    ),
}


register_source(DataKind.TEXT, text_source)


# ----------------------------------------------------------------------------- preprocessing


def build_vocabulary(texts: np.ndarray, *, vocab_size: int) -> list[str]:
    """The `vocab_size - 2` most frequent tokens (ties broken alphabetically), tokenised by the graph ops."""
    counts: Counter = Counter()
    batch = 4096
    for start in range(0, len(texts), batch):
        tokens = tokenize(tf.constant([str(t) for t in texts[start : start + batch]], tf.string))
        counts.update(t.decode("utf-8") for t in tokens.flat_values.numpy())
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [token for token, _ in ranked[: vocab_size - 2]]


def fit_text_preprocessor(source: Source, train_indices: np.ndarray, config: DataConfig) -> Preprocessor:
    """Vocabulary from the training split only; extra numeric inputs get mean/std like tabular data."""
    spec = {
        name: {"shape": [int(d) for d in s.shape], "dtype": s.dtype.name} for name, s in source.feature_spec.items()
    }
    if TEXT_FEATURE not in source.records:
        raise DataError(f"a text source needs a `{TEXT_FEATURE}` feature, got {sorted(source.records)}")
    texts = np.asarray(source.records[TEXT_FEATURE], dtype=object)[train_indices]
    options = config.text
    vocabulary = build_vocabulary(texts, vocab_size=options.vocab_size)
    numeric = [c for c in source.numeric_columns if c != TEXT_FEATURE]
    mean: list[float] = []
    std: list[float] = []
    for column in numeric:
        values = np.asarray(source.records[column], np.float64)[train_indices].reshape(len(train_indices), -1)
        for series in values.T:
            mean.append(float(np.nanmean(series)) if np.isfinite(series).any() else 0.0)
            deviation = float(np.nanstd(series)) if np.isfinite(series).any() else 1.0
            std.append(deviation if deviation > 1e-12 else 1.0)
    pad = config.batching == Batching.BATCH
    return Preprocessor(
        kind="text",
        feature_spec=spec,
        numeric_columns=numeric,
        mean=mean,
        std=std,
        extra={
            "vocabulary": vocabulary,
            "max_length": options.max_length,
            # `batching: batch` stacks examples, so every sequence must have the same length.
            "pad_to_max_length": pad,
            "output_shape": [options.max_length if pad else None],
            "pad_id": PAD_ID,
            "oov_id": OOV_ID,
            "tokenizer": "lower(utf-8) | regex_replace([^\\p{L}\\p{N}\\s]+, ' ') | split(whitespace)",
        },
    )


class TextLookup(tf.Module):
    """Owns the token -> id table; export tracks it so the SavedModel initialises the table."""

    def __init__(self, vocabulary: list[str]) -> None:
        super().__init__(name="text_lookup")
        # init_scope: created eagerly even if first used while tracing tf.data or an export function.
        with tf.init_scope():
            keys = tf.constant(vocabulary or [""], tf.string)
            values = tf.range(2, 2 + len(vocabulary or [""]), dtype=tf.int64)
            self.table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(keys, values), default_value=OOV_ID
            )

    def ids(self, tokens: tf.Tensor) -> tf.Tensor:
        return tf.cast(self.table.lookup(tokens), tf.int32)


def text_transform(preprocessor: Preprocessor, features: dict[str, tf.Tensor]) -> tf.Tensor | dict[str, tf.Tensor]:
    """Raw `text` (scalar or [batch]) -> int32 ids (truncated, padded with 0 in a batch);
    with extra numeric inputs -> {"tokens": ids, "numeric": standardised floats}."""
    lookup = preprocessor.trackable
    extra = preprocessor.extra
    max_length = int(extra["max_length"])
    text = tf.convert_to_tensor(features[TEXT_FEATURE])
    tokens = tokenize(text)
    if isinstance(tokens, tf.RaggedTensor):
        ids = tf.ragged.map_flat_values(lookup.ids, tokens)[:, :max_length]
        # An empty text would be an all-padding row (masked mean 0/0): give it one OOV token.
        ids = _fill_empty(ids)
        ids = ids.to_tensor(default_value=PAD_ID, shape=[None, max_length] if extra.get("pad_to_max_length") else None)
    else:
        ids = lookup.ids(tokens)[:max_length]
        ids = tf.cond(tf.equal(tf.size(ids), 0), lambda: tf.constant([OOV_ID], tf.int32), lambda: ids)
        if extra.get("pad_to_max_length"):
            ids = tf.pad(ids, [[0, max_length - tf.shape(ids)[0]]], constant_values=PAD_ID)
            ids = tf.ensure_shape(ids, [max_length])
    if not preprocessor.numeric_columns:
        return ids
    numeric = tf.concat([preprocessor.flat_numeric(features[c], c) for c in preprocessor.numeric_columns], axis=-1)
    scaled = (numeric - tf.constant(preprocessor.mean, tf.float32)) / tf.constant(preprocessor.std, tf.float32)
    return {"tokens": ids, "numeric": tf.where(tf.math.is_nan(scaled), tf.zeros_like(scaled), scaled)}


def _fill_empty(ids: tf.RaggedTensor) -> tf.RaggedTensor:
    """Rows with no token become [OOV]: keeps every row's mask non-empty."""
    lengths = ids.row_lengths()
    empty = tf.equal(lengths, 0)
    filler = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(tf.cast(empty, tf.int64))], tf.constant(OOV_ID, tf.int32)), tf.cast(empty, tf.int64)
    )
    return tf.concat([ids, filler], axis=1)


def text_output_shape(preprocessor: Preprocessor) -> Any:
    shape = tuple(preprocessor.extra.get("output_shape", [None]))
    if preprocessor.numeric_columns:
        return {"tokens": shape, "numeric": (sum(preprocessor.numeric_width(c) for c in preprocessor.numeric_columns),)}
    return shape
