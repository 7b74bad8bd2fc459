"""Streamed TFRecords (data.tfrecord.stream): splits are whole shards, every record is read from
disk each epoch, a worker reads only its own shards, and undecodable records are named up front."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tfpilot.config.schema import DataConfig
from tfpilot.data import build_pipeline, load_source
from tfpilot.data.tfrecord import write_tfrecords
from tfpilot.errors import DataError


def _example(shard: int, row: int, label: int) -> bytes:
    feature = {
        # `where` records the shard and row each example came from, so a test can see who read what.
        "where": tf.train.Feature(float_list=tf.train.FloatList(value=[float(shard), float(row)])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_shards(folder: Path, *, prefix: str, shards: int, rows: int, first: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for shard in range(first, first + shards):
        with tf.io.TFRecordWriter(str(folder / f"{prefix}-{shard:03d}.tfrecord")) as writer:
            for row in range(rows):
                writer.write(_example(shard, row, (shard + row) % 3))


def config(folder: Path, **tfrecord: object) -> DataConfig:
    return DataConfig(
        kind="tfrecord",
        path=folder,
        shuffle_buffer=16,
        tfrecord={"features": {"where": {"dtype": "float32", "shape": [2]}}, "stream": True, **tfrecord},
    )


def rows(pipeline, dataset: tf.data.Dataset) -> list[tuple[int, int]]:
    """(shard, row) of every example of preprocessed batches (the features are standardised)."""
    mean, std = np.asarray(pipeline.preprocessor.mean), np.asarray(pipeline.preprocessor.std)
    values = np.concatenate([x.numpy() for x, _ in dataset]) * std + mean
    return [(int(round(a)), int(round(b))) for a, b in values]


def shards_seen(pipeline, dataset: tf.data.Dataset) -> set[int]:
    return {shard for shard, _ in rows(pipeline, dataset)}


def test_splits_are_whole_shards_and_each_worker_reads_only_its_own(tmp_path: Path) -> None:
    write_shards(tmp_path, prefix="train", shards=4, rows=10)
    write_shards(tmp_path, prefix="val", shards=1, rows=6, first=4)
    write_shards(tmp_path, prefix="test", shards=1, rows=5, first=5)
    cfg = config(tmp_path, splits={"train": "train-*", "validation": "val-*", "test": "test-*"})
    pipeline = build_pipeline(cfg, batch_size=4, seed=0)
    assert {s: pipeline.num_examples(s) for s in ("train", "validation", "test")} == {
        "train": 40,
        "validation": 6,
        "test": 5,
    }
    # Streaming: no record is held in the source, only what the audit and statistics need.
    assert "serialized" not in pipeline.source.records
    assert shards_seen(pipeline, pipeline.evaluation("validation")) == {4}
    assert shards_seen(pipeline, pipeline.evaluation("test")) == {5}
    epoch0 = rows(pipeline, pipeline.train(epoch=0))
    epoch1 = rows(pipeline, pipeline.train(epoch=1))
    assert sorted(epoch0) == sorted(epoch1) and len(epoch0) == 40 and len(set(epoch0)) == 40
    assert epoch0 != epoch1  # a new order every epoch
    # The same epoch twice is the same order (resume sees what an uninterrupted run saw).
    assert epoch0 == rows(pipeline, pipeline.train(epoch=0))
    workers = [
        shards_seen(pipeline, pipeline.train(epoch=0, input_context=tf.distribute.InputContext(2, worker, 2)))
        for worker in range(2)
    ]
    assert workers[0] | workers[1] == {0, 1, 2, 3} and not workers[0] & workers[1]
    report, _ = pipeline.audit()
    assert report["examples"] == {"train": 40, "validation": 6, "test": 5}


def test_shards_split_by_fraction_and_too_few_shards_is_one_line_error(tmp_path: Path) -> None:
    write_shards(tmp_path, prefix="data", shards=10, rows=4)
    pipeline = build_pipeline(config(tmp_path), batch_size=8, seed=0)
    splits = {s: shards_seen(pipeline, pipeline.evaluation(s)) for s in ("train", "validation", "test")}
    assert [len(splits[s]) for s in ("train", "validation", "test")] == [6, 2, 2]
    assert not (splits["train"] & splits["validation"]) and not (splits["train"] & splits["test"])
    few = tmp_path / "few"
    write_shards(few, prefix="data", shards=2, rows=4)
    with pytest.raises(DataError, match="cannot give train, validation"):
        load_source(config(few))


def test_more_workers_than_shards_is_refused(tmp_path: Path) -> None:
    write_shards(tmp_path, prefix="data", shards=3, rows=4)
    cfg = config(tmp_path, splits={"train": "data-000.tfrecord", "validation": "data-001.tfrecord"})
    pipeline = build_pipeline(cfg, batch_size=4, seed=0)
    with pytest.raises(DataError, match="1 training shard"):
        pipeline.train(epoch=0, input_context=tf.distribute.InputContext(2, 0, 2))


def test_undecodable_streamed_image_is_named_before_training_or_skipped(digits_folder: Path, tmp_path: Path) -> None:
    source = load_source(DataConfig(kind="image_folder", path=digits_folder))
    section = write_tfrecords(source, tmp_path / "shards", num_shards=6)
    # One more shard whose second record holds a PNG header with a truncated body.
    png = Path(source.records["path"][0]).read_bytes()
    bad = tmp_path / "shards" / "zz-bad.tfrecord"
    with tf.io.TFRecordWriter(str(bad)) as writer:
        for data in (png, png[:40]):
            feature = {
                "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[0])),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    section["tfrecord"] = {**section["tfrecord"], "stream": True, "pattern": "*.tfrecord"}
    splits = {"train": "*.tfrecord", "validation": "data-00000-*"}
    section["tfrecord"]["splits"] = splits
    with pytest.raises(DataError, match="matches both"):
        load_source(DataConfig(**section))
    section["tfrecord"]["splits"] = {"train": "data-0000[1-5]-*", "validation": "data-00000-*", "test": "zz-*"}
    with pytest.raises(DataError, match=r"zz-bad.tfrecord record 1"):
        load_source(DataConfig(**section))
    pipeline = build_pipeline(DataConfig(**section, on_bad_records="skip"), batch_size=32, seed=0)
    assert pipeline.num_examples("test") == 1
    assert [f.code for f in pipeline.source.findings] == ["DATA-SKIPPED-RECORDS"]
    assert sum(int(tf.shape(y)[0]) for _, y in pipeline.evaluation("test")) == 1
    train_images = sum(int(tf.shape(y)[0]) for _, y in pipeline.train(epoch=0))
    assert train_images == pipeline.num_examples("train") == len(source) - pipeline.num_examples("validation")
    labels = np.concatenate([y.numpy() for _, y in pipeline.evaluation("validation")])
    assert labels.size == pipeline.num_examples("validation")
