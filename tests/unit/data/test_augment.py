"""data.augment: training batches differ between epochs, are reproducible, and evaluation sees none."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tfpilot.config.schema import DataConfig
from tfpilot.data import build_pipeline
from tfpilot.errors import DataError

AUGMENT = {"flip": "horizontal", "rotation": 0.1, "crop": 1, "contrast": 0.2, "brightness": 0.1}


def config(root: Path, augment: dict) -> DataConfig:
    # No shuffle, so batches line up example by example and only augmentation can change them.
    return DataConfig(kind="image_folder", path=root, shuffle_buffer=0, augment=augment)


def first_batches(pipeline, epoch: int) -> np.ndarray:
    return np.concatenate([x.numpy() for x, _ in pipeline.train(epoch=epoch).take(3)])


def test_two_epochs_see_different_images_and_a_rerun_sees_the_same(digits_folder: Path) -> None:
    plain = build_pipeline(config(digits_folder, {}), batch_size=32, seed=0)
    augmented = build_pipeline(config(digits_folder, AUGMENT), batch_size=32, seed=0)
    original = first_batches(plain, 0)
    epoch0, epoch1 = first_batches(augmented, 0), first_batches(augmented, 1)
    assert epoch0.shape == original.shape
    assert not np.allclose(epoch0, original) and not np.allclose(epoch0, epoch1)
    # Most images change (a flip or crop of an 8x8 digit moves pixels).
    changed = np.mean([not np.allclose(a, b) for a, b in zip(epoch0, original, strict=True)])
    assert changed > 0.5
    again = build_pipeline(config(digits_folder, AUGMENT), batch_size=32, seed=0)
    np.testing.assert_allclose(first_batches(again, 0), epoch0, atol=1e-6)
    # Same labels in the same order: augmentation never touches labels.
    labels = [y.numpy() for _, y in augmented.train(epoch=1).take(3)]
    np.testing.assert_array_equal(np.concatenate(labels), np.concatenate([y.numpy() for _, y in plain.train().take(3)]))


def test_evaluation_and_raw_splits_see_no_augmentation(digits_folder: Path) -> None:
    plain = build_pipeline(config(digits_folder, {}), batch_size=64, seed=0)
    augmented = build_pipeline(config(digits_folder, AUGMENT), batch_size=64, seed=0)
    for split in ("validation", "test"):
        np.testing.assert_array_equal(augmented.arrays(split)[0], plain.arrays(split)[0])
    # The serving signature is built from the preprocessor, which is identical with and without augment.
    assert augmented.preprocessor.to_json() == plain.preprocessor.to_json()


def test_augment_on_tabular_data_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("x,label\n" + "".join(f"{i},{i % 2}\n" for i in range(10)))
    pipeline = build_pipeline(
        DataConfig(kind="csv", path=tmp_path / "t.csv", augment={"flip": "horizontal"}), batch_size=4
    )
    with pytest.raises(DataError, match="data.augment applies to images"):
        pipeline.train(epoch=0)
