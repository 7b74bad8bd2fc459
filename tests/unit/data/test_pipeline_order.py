"""Pipeline: deterministic split, per-epoch shuffle that is reproducible, cache, skip for resume."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tfpilot.config.schema import DataConfig
from tfpilot.data import build_pipeline, split_indices

NUM = 120


def arrays_pipeline(*, seed: int = 0, split_seed: int = 0, shuffle_buffer: int = 1000, batch_size: int = 8):
    # The feature is the example's own index, so a batch tells which examples it holds.
    features = {"x": np.arange(NUM, dtype=np.float32)}
    labels = np.arange(NUM) % 3
    config = DataConfig(
        kind="arrays", split={"validation": 0.2, "test": 0.1, "seed": split_seed}, shuffle_buffer=shuffle_buffer
    )
    return build_pipeline(config, batch_size=batch_size, seed=seed, features=features, labels=labels)


def order(pipeline, **kwargs) -> list[int]:
    """Example ids in the order the training batches deliver them (undoing the standardisation)."""
    pre = pipeline.preprocessor
    ids = []
    for features, _ in pipeline.train(**kwargs):
        ids.extend(np.rint(features.numpy()[:, 0] * pre.std[0] + pre.mean[0]).astype(int).tolist())
    return ids


def test_split_is_deterministic_disjoint_and_complete() -> None:
    first = split_indices(1000, validation=0.15, test=0.1, seed=7)
    again = split_indices(1000, validation=0.15, test=0.1, seed=7)
    other = split_indices(1000, validation=0.15, test=0.1, seed=8)
    for name in ("train", "validation", "test"):
        np.testing.assert_array_equal(first[name], again[name])
    assert not np.array_equal(first["test"], other["test"])
    assert (first["validation"].size, first["test"].size, first["train"].size) == (150, 100, 750)
    union = np.concatenate([first["train"], first["validation"], first["test"]])
    np.testing.assert_array_equal(np.sort(union), np.arange(1000))


def test_pipeline_split_follows_split_seed_only() -> None:
    a, b, c = (
        arrays_pipeline(seed=0, split_seed=5),
        arrays_pipeline(seed=99, split_seed=5),
        arrays_pipeline(split_seed=6),
    )
    np.testing.assert_array_equal(a.indices["test"], b.indices["test"])
    assert not np.array_equal(a.indices["test"], c.indices["test"])
    assert (a.num_examples("train"), a.num_examples("validation"), a.num_examples("test")) == (84, 24, 12)


def test_shuffle_differs_per_epoch_and_repeats_for_the_same_seed_and_epoch() -> None:
    pipeline = arrays_pipeline(seed=1)
    train_ids = sorted(pipeline.indices["train"].tolist())
    epoch0, epoch0_again, epoch1 = order(pipeline, epoch=0), order(pipeline, epoch=0), order(pipeline, epoch=1)
    assert sorted(epoch0) == train_ids and sorted(epoch1) == train_ids  # each epoch is one full pass
    assert epoch0 == epoch0_again  # iterating twice (e.g. after a resume) gives the same order
    assert epoch0 != epoch1
    assert epoch0 != train_ids  # it is actually shuffled
    # A fresh pipeline (a new process after a crash) with the same seed reproduces the order.
    assert order(arrays_pipeline(seed=1), epoch=1) == epoch1
    assert order(arrays_pipeline(seed=2), epoch=1) != epoch1


def test_no_shuffle_keeps_split_order() -> None:
    pipeline = arrays_pipeline(shuffle_buffer=0)
    assert order(pipeline, epoch=3) == pipeline.indices["train"].tolist()


def test_skip_batches_resumes_mid_epoch() -> None:
    pipeline = arrays_pipeline(seed=4, batch_size=8)
    full = order(pipeline, epoch=2)
    assert order(pipeline, epoch=2, skip_batches=3) == full[3 * 8 :]
    assert pipeline.steps_per_epoch() == -(-84 // 8)


def test_batches_and_evaluation_shapes() -> None:
    pipeline = arrays_pipeline(batch_size=10)
    sizes = [int(x.shape[0]) for x, _ in pipeline.train(epoch=0)]
    assert sizes == [10] * 8 + [4]
    dropped = [int(x.shape[0]) for x, _ in pipeline.train(epoch=0, drop_remainder=True)]
    assert dropped == [10] * 8
    features, labels = pipeline.arrays("validation")
    assert features.shape == (24, 1) and labels.shape == (24,)
    # Evaluation is never shuffled.
    ids = np.rint(features[:, 0] * pipeline.preprocessor.std[0] + pipeline.preprocessor.mean[0]).astype(int)
    np.testing.assert_array_equal(ids, pipeline.indices["validation"])


def test_memory_cache_serves_later_epochs_without_rereading_files(digits_folder: Path, tmp_path: Path) -> None:
    root = tmp_path / "digits"
    for label in ("0", "1", "2"):
        shutil.copytree(digits_folder / label, root / label)
    config = DataConfig(kind="image_folder", path=root, cache="memory", image={"height": 8, "width": 8})
    pipeline = build_pipeline(config, batch_size=64, seed=0)
    first = sorted(tuple(x.ravel()) for batch, _ in pipeline.train(epoch=0) for x in batch.numpy())
    shutil.rmtree(root)  # the files are gone: only the cache can deliver the next epoch
    second = sorted(tuple(x.ravel()) for batch, _ in pipeline.train(epoch=1) for x in batch.numpy())
    assert first == second and len(first) == pipeline.num_examples("train")


def test_no_cache_rereads_files(digits_folder: Path, tmp_path: Path) -> None:
    root = tmp_path / "digits"
    for label in ("0", "1"):
        shutil.copytree(digits_folder / label, root / label)
    config = DataConfig(kind="image_folder", path=root, cache="none")
    pipeline = build_pipeline(config, batch_size=64, seed=0)
    list(pipeline.train(epoch=0))
    shutil.rmtree(root)
    with pytest.raises(tf.errors.NotFoundError):
        list(pipeline.train(epoch=1))


def test_file_cache_writes_cache_files(digits_folder: Path, tmp_path: Path) -> None:
    root = tmp_path / "digits"
    for label in ("0", "1"):
        shutil.copytree(digits_folder / label, root / label)
    prefix = tmp_path / "cache" / "digits"
    prefix.parent.mkdir()
    config = DataConfig(kind="image_folder", path=root, cache=str(prefix))
    pipeline = build_pipeline(config, batch_size=64, seed=0)
    first = sorted(tuple(x.ravel()) for batch, _ in pipeline.train(epoch=0) for x in batch.numpy())
    assert any(p.name.startswith("digits_train") for p in prefix.parent.iterdir())
    shutil.rmtree(root)
    second = sorted(tuple(x.ravel()) for batch, _ in pipeline.train(epoch=1) for x in batch.numpy())
    assert first == second
