"""TFRecord source and writer: shards written from an image folder or CSV read back the same examples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from tfpilot.config.schema import DataConfig
from tfpilot.data import build_pipeline, load_source
from tfpilot.data.tfrecord import write_tfrecords


def test_bundled_digits_round_trip_through_tfrecords_and_train(digits_folder: Path, tmp_path: Path) -> None:
    import keras

    folder_config = DataConfig(kind="image_folder", path=digits_folder)
    source = load_source(folder_config)
    section = write_tfrecords(source, tmp_path / "shards", num_shards=3)
    assert len(list((tmp_path / "shards").glob("*.tfrecord"))) == 3
    config = DataConfig(**section, split={"validation": 0.15, "test": 0.15, "seed": 0})
    pipeline = build_pipeline(config, batch_size=64)
    assert pipeline.num_classes == 10 and len(pipeline.source) == 1797
    assert pipeline.class_names == source.class_names
    # The same pixels: every decoded TFRecord image equals the PNG it came from (shards interleave,
    # so match by content rather than order).
    folder_pixels = {
        (int(y), x["image"].numpy().tobytes())
        for x, y in build_pipeline(folder_config, batch_size=64, seed=0).raw("train").take(300)
    }
    tfrecord_pixels = {(int(y), x["image"].numpy().tobytes()) for x, y in pipeline.raw("train")}
    tfrecord_pixels |= {(int(y), x["image"].numpy().tobytes()) for x, y in pipeline.raw("validation")}
    tfrecord_pixels |= {(int(y), x["image"].numpy().tobytes()) for x, y in pipeline.raw("test")}
    assert folder_pixels <= tfrecord_pixels
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(32, "relu"), keras.layers.Dense(10)]
    )
    model.compile(
        keras.optimizers.Adam(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
    )
    model.fit(pipeline.train(epoch=0), epochs=10, verbose=0)
    _, accuracy = model.evaluate(pipeline.evaluation("test"), verbose=0)
    assert accuracy > 0.8


def test_csv_to_tfrecord_keeps_columns_values_and_labels(tmp_path: Path) -> None:
    rows = [f"{i}.5,{'red' if i % 2 else 'blue'},{'a' if i % 3 else 'b'}" for i in range(12)]
    (tmp_path / "t.csv").write_text("size (cm),color,label\n" + "\n".join(rows) + "\n")
    source = load_source(DataConfig(kind="csv", path=tmp_path / "t.csv", csv={"categorical_columns": ["color"]}))
    section = write_tfrecords(source, tmp_path / "out", num_shards=2)
    back = load_source(DataConfig(**section))
    assert back.numeric_columns == ["size (cm)"] and back.categorical_columns == ["color"]
    order = np.argsort(back.records["size (cm)"])
    np.testing.assert_allclose(back.records["size (cm)"][order], source.records["size (cm)"])
    assert back.records["color"][order].tolist() == source.records["color"].tolist()
    assert [back.class_names[i] for i in back.labels[order]] == [source.class_names[i] for i in source.labels]
    assert back.feature_spec["color"] == tf.TensorSpec([], tf.string)
