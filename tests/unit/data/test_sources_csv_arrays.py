"""CSV (numeric + categorical, incl. out-of-vocabulary) and in-memory array sources."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tfpilot.config.schema import DataConfig
from tfpilot.data import Preprocessor, arrays_source, build_pipeline, csv_source, load_source
from tfpilot.errors import DataError

CSV = """\
size,weight,color,label
1.0,10,red,small
2.0,,blue,small
3.0,30,red,big
4.0,40,green,big
5.0,50,red,big
6.0,60,blue,small
7.0,70,red,big
8.0,80,blue,small
9.0,90,green,big
10.0,100,red,small
"""


def csv_config(path: Path, **csv_options) -> DataConfig:
    return DataConfig(
        kind="csv",
        path=path,
        split={"validation": 0.2, "test": 0.2, "seed": 3},
        csv={"label_column": "label", "categorical_columns": ["color"], **csv_options},
    )


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "table.csv"
    path.write_text(CSV)
    return path


def test_csv_columns_are_inferred(table: Path) -> None:
    source = csv_source(csv_config(table))
    assert source.kind == "tabular"
    assert source.numeric_columns == ["size", "weight"]
    assert source.categorical_columns == ["color"]
    assert source.class_names == ["big", "small"]
    assert source.labels.tolist() == [1, 1, 0, 0, 0, 1, 0, 1, 0, 1]
    assert np.isnan(source.records["weight"][1])  # an empty numeric cell is missing, not 0
    assert source.feature_spec == {
        "size": tf.TensorSpec([], tf.float32),
        "weight": tf.TensorSpec([], tf.float32),
        "color": tf.TensorSpec([], tf.string),
    }


def test_csv_preprocessing_uses_training_statistics_and_handles_oov(table: Path) -> None:
    pipeline = build_pipeline(csv_config(table), batch_size=4, seed=0)
    train_rows = pipeline.indices["train"]
    pre = pipeline.preprocessor
    sizes = np.arange(1.0, 11.0)[train_rows]
    # Statistics come from the training split only (validation/test would leak).
    np.testing.assert_allclose(pre.mean[0], sizes.mean(), rtol=1e-6)
    np.testing.assert_allclose(pre.std[0], sizes.std(), rtol=1e-6)
    colors = np.asarray(CSV.split()[1:])[train_rows]
    vocabulary = pre.vocabularies["color"]
    assert set(vocabulary) == {line.split(",")[2] for line in colors}
    assert pre.output_dim == 2 + len(vocabulary) + 1  # numeric + one-hot + OOV slot
    out = pre(
        {
            "size": tf.constant([sizes.mean(), np.nan]),
            "weight": tf.constant([np.nan, np.nan]),
            "color": tf.constant([vocabulary[0], "purple"]),
        }
    ).numpy()
    assert out.shape == (2, pre.output_dim)
    np.testing.assert_allclose(out[:, :2], 0.0, atol=1e-6)  # the mean and missing values both map to 0
    np.testing.assert_array_equal(out[0, 2:], [1.0] + [0.0] * len(vocabulary))
    np.testing.assert_array_equal(out[1, 2:], [0.0] * len(vocabulary) + [1.0])  # unseen -> OOV slot
    # The preprocessor state is plain JSON and reloads to the same transform.
    pre.save(table.parent / "pre.json")
    again = Preprocessor.load(table.parent / "pre.json")
    assert again == pre
    features, labels = pipeline.arrays("train")
    assert features.shape == (train_rows.size, pre.output_dim) and np.isfinite(features).all()


def test_csv_explicit_numeric_columns(table: Path) -> None:
    source = csv_source(csv_config(table, numeric_columns=["size"], categorical_columns=[]))
    assert source.numeric_columns == ["size"] and list(source.records) == ["size"]


@pytest.mark.parametrize(
    ("text", "options", "match"),
    [
        ("a,label\n", {}, "no data rows"),
        ("a,b\n1,2\n", {"categorical_columns": []}, "no label column `label`"),
        ("a,label\n1,x\n", {"categorical_columns": ["colour"]}, r"lacks column\(s\) \['colour'\]"),
        ("a,label\nfoo,x\n", {"numeric_columns": ["a"], "categorical_columns": []}, "holds non-numbers"),
    ],
)
def test_bad_csv_raises_data_error(tmp_path: Path, text: str, options: dict, match: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    config = DataConfig(kind="csv", path=path, csv=options)
    with pytest.raises(DataError, match=match):
        load_source(config)


def test_arrays_source_images_and_tabular() -> None:
    images = np.arange(6 * 4 * 4, dtype=np.uint8).reshape(6, 4, 4)
    source = arrays_source(images, np.array([0, 1, 2, 0, 1, 2]))
    assert source.kind == "image" and source.records["image"].shape == (6, 4, 4, 1)  # channel added
    assert source.class_names == ["0", "1", "2"]
    assert source.feature_spec["image"] == tf.TensorSpec([4, 4, 1], tf.uint8)

    tabular = arrays_source(
        {"a": np.zeros(4, np.float32), "b": np.ones(4, np.float32)}, [0, 1, 0, 1], class_names=["no", "yes"]
    )
    assert tabular.kind == "tabular" and tabular.numeric_columns == ["a", "b"] and tabular.class_names == ["no", "yes"]

    dense = arrays_source(np.zeros((5, 3), np.float32), np.zeros(5))
    assert list(dense.records) == ["x"] and dense.labels.dtype == np.int32


def test_arrays_rows_must_match() -> None:
    with pytest.raises(DataError, match="has 4 rows but labels have 3"):
        arrays_source(np.zeros((4, 2), np.float32), np.zeros(3))


def test_arrays_kind_needs_python_api() -> None:
    with pytest.raises(DataError, match="only available from the Python API"):
        load_source(DataConfig(kind="arrays"))


def test_bare_feature_matrix_is_standardised_per_column() -> None:
    """`build_pipeline(..., features=X, labels=y)` with X of shape [N, k]: k model inputs, each standardised."""
    rng = np.random.default_rng(0)
    matrix = (rng.normal(size=(200, 3)) * [1.0, 10.0, 100.0] + [0.0, 5.0, -50.0]).astype(np.float32)
    config = DataConfig(kind="arrays", split={"validation": 0.1, "test": 0.1})
    pipeline = build_pipeline(config, batch_size=16, features=matrix, labels=(matrix[:, 0] > 0).astype(int))
    assert pipeline.preprocessor.output_shape() == (3,)
    features, _ = pipeline.arrays("train")
    assert features.shape == (pipeline.num_examples("train"), 3)
    np.testing.assert_allclose(features.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(features.std(axis=0), 1.0, atol=1e-4)
    one = pipeline.preprocessor({"x": tf.constant(matrix[0])})  # a single unbatched example (serving)
    assert one.shape == (3,)
