"""Text source and preprocessing: files, vocabulary from the training split, ids in tf.data and in a batch."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tfpilot.config.schema import DataConfig
from tfpilot.data import Preprocessor, build_pipeline
from tfpilot.data.text import OOV_ID, PAD_ID, text_source
from tfpilot.errors import DataError

SENTENCES = [
    ("pos", "Great phone, love it!"),
    ("neg", "Terrible... it broke."),
    ("pos", "GREAT great value"),
    ("neg", "awful, awful, AWFUL"),
    ("pos", "love the screen"),
    ("neg", "broke after a week"),
    ("pos", "great"),
    ("neg", "terrible battery"),
    ("pos", "love love love"),
    ("neg", "awful screen"),
]


def write_tsv(path: Path, rows=SENTENCES) -> Path:
    path.write_text("".join(f"{label}\t{text}\n" for label, text in rows), encoding="utf-8")
    return path


def config(path: Path, **overrides) -> DataConfig:
    raw = {
        "kind": "text",
        "path": str(path),
        "shuffle_buffer": 0,
        "split": {"validation": 0.2, "test": 0.2, "seed": 0},
        "text": {"vocab_size": 50, "max_length": 4, "bucket_boundaries": [2, 3]},
        "batching": "padded",
    }
    raw.update(overrides)
    return DataConfig(**raw)


def test_tsv_and_csv_give_the_same_source(tmp_path: Path) -> None:
    tsv = text_source(config(write_tsv(tmp_path / "r.tsv")))
    csv_path = tmp_path / "r.csv"
    csv_path.write_text("body,sentiment\n" + "".join(f'"{t}",{label}\n' for label, t in SENTENCES), encoding="utf-8")
    csv = text_source(config(csv_path, text={"text_column": "body", "label_column": "sentiment"}))
    assert tsv.kind == "text" and tsv.class_names == ["neg", "pos"]
    assert list(tsv.records["text"]) == list(csv.records["text"]) == [t for _, t in SENTENCES]
    np.testing.assert_array_equal(tsv.labels, csv.labels)
    assert tsv.feature_spec["text"] == tf.TensorSpec([], tf.string)


def test_bad_files_name_the_fix(tmp_path: Path) -> None:
    no_tab = tmp_path / "bad.txt"
    no_tab.write_text("pos great\n")
    with pytest.raises(DataError, match="TAB"):
        text_source(config(no_tab))
    csv_path = tmp_path / "bad.csv"
    csv_path.write_text("a,label\nx,1\n")
    with pytest.raises(DataError, match="data.text.text_column"):
        text_source(config(csv_path))


def test_vocabulary_comes_from_the_training_split_only(tmp_path: Path) -> None:
    pipeline = build_pipeline(config(write_tsv(tmp_path / "r.tsv")), batch_size=4)
    vocabulary = pipeline.preprocessor.extra["vocabulary"]
    held_out = {
        t
        for i in np.concatenate([pipeline.indices["validation"], pipeline.indices["test"]])
        for t in pipeline.source.records["text"][i]
        .lower()
        .replace(",", " ")
        .replace(".", " ")
        .replace("!", " ")
        .split()
    }
    train_words = {
        t
        for i in pipeline.indices["train"]
        for t in pipeline.source.records["text"][i]
        .lower()
        .replace(",", " ")
        .replace(".", " ")
        .replace("!", " ")
        .split()
    }
    assert set(vocabulary) == train_words  # lowercased, punctuation stripped, nothing from other splits
    assert not (held_out - train_words) & set(vocabulary)
    # Most frequent first (ties alphabetical): ids start at 2 after padding 0 and OOV 1.
    assert pipeline.preprocessor.vocab_size == len(vocabulary) + 2


def test_ids_match_between_tf_data_and_a_serving_batch(tmp_path: Path) -> None:
    pipeline = build_pipeline(config(write_tsv(tmp_path / "r.tsv")), batch_size=4)
    pre = pipeline.preprocessor
    vocabulary = pre.extra["vocabulary"]
    texts = ["Love, love!", "never-seen-token great", "", "great great great great great great"]
    batched = pre({"text": tf.constant(texts)}).numpy()
    assert batched.dtype == np.int32 and batched.shape == (4, 4)  # longest row truncated to max_length
    love, great = 2 + vocabulary.index("love"), 2 + vocabulary.index("great")
    assert "never" not in vocabulary and "seen" not in vocabulary
    np.testing.assert_array_equal(batched[0], [love, love, PAD_ID, PAD_ID])
    np.testing.assert_array_equal(batched[1], [OOV_ID, OOV_ID, OOV_ID, great])  # `-` separates tokens
    np.testing.assert_array_equal(batched[2], [OOV_ID, PAD_ID, PAD_ID, PAD_ID])  # empty text keeps one token
    np.testing.assert_array_equal(batched[3], [great] * 4)
    # The same texts one at a time inside a tf.data map (how the pipeline calls it).
    mapped = list(tf.data.Dataset.from_tensor_slices({"text": texts}).map(pre).as_numpy_iterator())
    for row, single in zip(batched, mapped, strict=False):
        np.testing.assert_array_equal(single, row[: len(single)])
        assert not np.any(row[len(single) :])


def test_state_is_json_and_reloads_to_the_same_ids(tmp_path: Path) -> None:
    pipeline = build_pipeline(config(write_tsv(tmp_path / "r.tsv")), batch_size=4)
    path = tmp_path / "preprocessing.json"
    pipeline.preprocessor.save(path)
    state = json.loads(path.read_text())
    assert state["kind"] == "text" and isinstance(state["extra"]["vocabulary"], list)
    reloaded = Preprocessor.load(path)
    texts = tf.constant(["great screen", "awful awful"])
    np.testing.assert_array_equal(reloaded({"text": texts}).numpy(), pipeline.preprocessor({"text": texts}).numpy())


@pytest.mark.parametrize("batching", ["padded", "bucketed", "batch"])
def test_batching_modes(tmp_path: Path, batching: str) -> None:
    rows = [("pos" if i % 2 else "neg", " ".join(["great" if i % 2 else "awful"] * (1 + i % 5))) for i in range(40)]
    pipeline = build_pipeline(config(write_tsv(tmp_path / "r.tsv", rows), batching=batching), batch_size=8)
    shapes = set()
    for features, _labels in pipeline.train(epoch=0):
        assert features.dtype == tf.int32
        shapes.add(int(features.shape[1]))
        lengths = np.count_nonzero(features.numpy(), axis=1)
        assert lengths.min() >= 1 and lengths.max() <= 4
    if batching == "batch":
        assert shapes == {4} and pipeline.preprocessor.output_shape() == (4,)
    else:
        assert pipeline.preprocessor.output_shape() == (None,)
        assert len(shapes) > 1 if batching == "bucketed" else max(shapes) <= 4
    features, labels = pipeline.arrays("train")
    assert features.shape[0] == labels.shape[0] == pipeline.num_examples("train")


def test_arrays_keep_split_order_under_bucketing(tmp_path: Path) -> None:
    rows = [("pos" if i % 2 else "neg", " ".join(["great" if i % 2 else "awful"] * (1 + i % 5))) for i in range(40)]
    pipeline = build_pipeline(config(write_tsv(tmp_path / "r.tsv", rows), batching="bucketed"), batch_size=8)
    features, labels = pipeline.arrays("train")
    np.testing.assert_array_equal(labels, pipeline.source.labels[pipeline.indices["train"]])
    lengths = [min(4, 1 + i % 5) for i in pipeline.indices["train"]]
    np.testing.assert_array_equal(np.count_nonzero(features, axis=1), lengths)
