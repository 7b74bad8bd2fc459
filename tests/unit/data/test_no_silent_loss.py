"""Issue 13: nothing is dropped or invented silently. Each case failed (or passed silently) before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tfpilot.config.schema import DataConfig
from tfpilot.data import build_pipeline, load_source, split_indices
from tfpilot.errors import DataError


def csv_config(path: Path, **options) -> DataConfig:
    bad = options.pop("on_bad_records", "error")
    split = options.pop("split", {"validation": 0.2, "test": 0.2, "seed": 0})
    return DataConfig(kind="csv", path=path, on_bad_records=bad, split=split, csv=options)


def write_table(path: Path, rows: list[str], header: str = "size,weight,label") -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


ROWS = [f"{i}.0,{10 * i},{'big' if i % 2 else 'small'}" for i in range(1, 11)]


# ----------------------------------------------------------------------------- CSV cells


def test_non_numeric_cell_is_an_error_naming_column_line_and_value(tmp_path: Path) -> None:
    rows = list(ROWS)
    rows[3] = "3.4cm,40,small"  # file line 5
    with pytest.raises(DataError) as caught:
        load_source(csv_config(write_table(tmp_path / "t.csv", rows)))
    message = str(caught.value)
    assert "`size`" in message and "'3.4cm'" in message and "line 5" in message
    assert caught.value.exit_code == 2 and "\n" not in message


def test_skip_leaves_the_row_out_keeps_the_column_and_names_the_row(tmp_path: Path) -> None:
    rows = list(ROWS)
    rows[3] = "3.4cm,40,small"
    source = load_source(csv_config(write_table(tmp_path / "t.csv", rows), on_bad_records="skip"))
    assert source.numeric_columns == ["size", "weight"]
    assert len(source) == 9
    assert 5 not in source.row_ids.tolist()
    (finding,) = [f for f in source.findings if f.code == "DATA-ROWS-SKIPPED"]
    assert finding.evidence["lines"] == [5] and "3.4cm" in finding.message


def test_na_is_a_missing_value_not_a_reason_to_drop_the_column(tmp_path: Path) -> None:
    rows = list(ROWS)
    rows[0] = "NA,10,big"
    rows[1] = "2.0,,small"
    pipeline = build_pipeline(csv_config(write_table(tmp_path / "t.csv", rows)), batch_size=4)
    assert pipeline.source.numeric_columns == ["size", "weight"]
    report, _ = pipeline.audit()
    assert report["missing_values"] == {"size": 1, "weight": 1}
    # mean imputation: a missing value is the training mean, i.e. 0 after scaling.
    out = pipeline.preprocessor({"size": tf.constant([np.nan]), "weight": tf.constant([np.nan])}).numpy()
    np.testing.assert_allclose(out, [[0.0, 0.0]], atol=1e-6)
    # Filling a cell changes the data: the user is told which cells and with what.
    (filled,) = [f for f in pipeline.source.findings if f.code == "DATA-IMPUTED"]
    assert filled.evidence == {"missing": {"size": 1, "weight": 1}, "impute": "mean"}
    assert "`size` on line(s) 2" in filled.message and "`weight` on line(s) 3" in filled.message


def test_impute_median_and_constant_fill_before_scaling(tmp_path: Path) -> None:
    rows = [f"{v},1,{'a' if i % 2 else 'b'}" for i, v in enumerate([1, 2, 3, 100, "NA", 4, 5, 6, 7, 8])]
    path = write_table(tmp_path / "t.csv", rows)
    no_split = {"validation": 0.0, "test": 0.0, "seed": 0}
    median = build_pipeline(csv_config(path, impute="median", split=no_split), batch_size=4).preprocessor
    constant = build_pipeline(
        csv_config(path, impute="constant", impute_value=-5.0, split=no_split), batch_size=4
    ).preprocessor
    present = np.array([1, 2, 3, 100, 4, 5, 6, 7, 8], np.float64)
    mean, std = present.mean(), present.std()
    missing = {"size": tf.constant([np.nan]), "weight": tf.constant([1.0])}
    np.testing.assert_allclose(median(missing).numpy()[0, 0], (np.median(present) - mean) / std, rtol=1e-5)
    np.testing.assert_allclose(constant(missing).numpy()[0, 0], (-5.0 - mean) / std, rtol=1e-5)


def test_impute_error_names_the_column_and_line(tmp_path: Path) -> None:
    rows = list(ROWS)
    rows[6] = "7.0,NA,big"  # line 8
    with pytest.raises(DataError, match=r"missing numeric values \{'weight': 1\}.*line 8"):
        load_source(csv_config(write_table(tmp_path / "t.csv", rows), impute="error"))


def test_empty_label_is_never_a_class_called_empty(tmp_path: Path) -> None:
    rows = list(ROWS)
    rows[2] = "3.0,30,"  # line 4
    path = write_table(tmp_path / "t.csv", rows)
    with pytest.raises(DataError, match=r"label `label` is empty on 1 row\(s\): line 4"):
        load_source(csv_config(path))
    source = load_source(csv_config(path, on_bad_records="skip"))
    assert source.class_names == ["big", "small"]
    assert [f.evidence["lines"] for f in source.findings if f.code == "DATA-ROWS-SKIPPED"] == [[4]]


def test_unlisted_text_column_is_kept_as_categorical_and_reported(tmp_path: Path) -> None:
    rows = [f"{r.split(',')[0]},{'red' if i % 3 else 'blue'},{r.split(',')[2]}" for i, r in enumerate(ROWS)]
    source = load_source(csv_config(write_table(tmp_path / "t.csv", rows, header="size,color,label")))
    assert source.categorical_columns == ["color"]
    assert [f.evidence["column"] for f in source.findings if f.code == "DATA-COLUMN-CATEGORICAL"] == ["color"]


def test_latin1_file_names_the_encoding_and_works_with_it(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    text = "city,size,label\n" + "".join(f"{'Zürich' if i % 2 else 'Genève'},{i},{i % 2}\n" for i in range(10))
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(DataError, match=r"not valid utf-8.*data\.csv\.encoding") as caught:
        load_source(csv_config(path))
    assert caught.value.exit_code == 2
    source = load_source(csv_config(path, encoding="latin-1"))
    assert sorted(set(source.records["city"].tolist())) == ["Genève", "Zürich"]


def test_folder_given_as_csv_and_file_given_as_image_folder(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"is the folder .* reads a file") as caught:
        load_source(csv_config(tmp_path))
    assert caught.value.exit_code == 2
    path = write_table(tmp_path / "t.csv", ROWS)
    with pytest.raises(DataError, match=r"is the file .* reads a folder"):
        load_source(DataConfig(kind="image_folder", path=path))


def test_any_column_name_keeps_its_name_in_the_pipeline(tmp_path: Path) -> None:
    header = "sepal length (cm),petal width (cm),target"
    path = write_table(tmp_path / "t.csv", [r.replace("big", "1").replace("small", "0") for r in ROWS], header)
    pipeline = build_pipeline(csv_config(path, label_column="target"), batch_size=4)
    assert pipeline.source.numeric_columns == ["sepal length (cm)", "petal width (cm)"]
    signature = pipeline.preprocessor.input_signature()
    assert list(signature) == ["sepal length (cm)", "petal width (cm)"]
    assert [spec.name for spec in signature.values()] == ["sepal_length_cm", "petal_width_cm"]


# ----------------------------------------------------------------------------- images


def write_png(path: Path, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, size=(8, 8, 1), dtype=np.uint8)
    path.write_bytes(tf.io.encode_png(pixels).numpy())


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for index, label in enumerate(("cat", "dog")):
        for i in range(4):
            write_png(tmp_path / "images" / label / f"{i}.png", seed=10 * index + i)
    return tmp_path / "images"


def image_config(root: Path, **extra) -> DataConfig:
    return DataConfig(kind="image_folder", path=root, image={"height": 8, "width": 8, "channels": 1}, **extra)


def test_empty_class_folder_is_an_error_or_a_reported_skip(folder: Path) -> None:
    (folder / "eel").mkdir()
    with pytest.raises(DataError, match=r"class folder\(s\) \['eel'\] hold no"):
        load_source(image_config(folder))
    source = load_source(image_config(folder, on_bad_records="skip"))
    assert source.class_names == ["cat", "dog"]
    assert [f.code for f in source.findings] == ["DATA-EMPTY-CLASS"]


def truncated_jpeg(path: Path) -> None:
    pixels = np.random.default_rng(0).integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
    data = tf.io.encode_jpeg(pixels).numpy()
    path.write_bytes(data[: len(data) // 2])  # valid JPEG header, body cut off


def test_truncated_jpeg_is_found_before_training_and_named(folder: Path) -> None:
    bad = folder / "dog" / "cut.jpg"
    truncated_jpeg(bad)
    assert bad.read_bytes()[:3] == b"\xff\xd8\xff"
    with pytest.raises(DataError, match=r"1 image file\(s\) do not decode") as caught:
        load_source(image_config(folder))
    assert str(bad) in str(caught.value)
    source = load_source(image_config(folder, on_bad_records="skip"))
    assert str(bad) not in source.records["path"].tolist() and len(source) == 8
    (finding,) = source.findings
    assert finding.code == "DATA-FILES-SKIPPED" and finding.evidence["files"] == [str(bad)]
    # Every file left decodes through the pipeline (the error is not deferred to mid-epoch).
    pipeline = build_pipeline(image_config(folder, on_bad_records="skip"), batch_size=4)
    assert sum(int(y.shape[0]) for _, y in pipeline.evaluation("train")) == pipeline.num_examples("train")


def test_an_empty_class_and_a_truncated_jpeg_are_reported_together(folder: Path) -> None:
    """Every problem of the data in one message (issue 33): fixing it takes one round, not two."""
    (folder / "eel").mkdir()
    bad = folder / "cat" / "cut.jpg"
    truncated_jpeg(bad)
    with pytest.raises(DataError) as caught:
        load_source(image_config(folder))
    message = str(caught.value)
    assert "2 problem(s)" in message and "['eel']" in message and str(bad) in message and "\n" not in message
    assert len(caught.value.problems) == 2
    source = load_source(image_config(folder, on_bad_records="skip"))
    assert sorted(f.code for f in source.findings) == ["DATA-EMPTY-CLASS", "DATA-FILES-SKIPPED"]


def test_tfpilot_train_exits_2_naming_every_problem_and_writes_them_to_the_data_report(folder: Path) -> None:
    import json
    import subprocess
    import sys

    (folder / "eel").mkdir()
    truncated_jpeg(folder / "dog" / "cut.jpg")
    config = folder.parent / "cfg.yaml"
    config.write_text(
        f"name: broken\nruns_dir: {folder.parent / 'runs'}\ndata:\n  kind: image_folder\n  path: {folder}\n"
        "  image: {height: 8, width: 8, channels: 1}\ntrain:\n  epochs: 1\n"
    )
    completed = subprocess.run(
        [sys.executable, "-m", "tfpilot.cli.main", "train", str(config)], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 2
    line = completed.stderr.strip().splitlines()[-1]
    assert "2 problem(s)" in line and "eel" in line and "cut.jpg" in line
    report = json.loads((folder.parent / "runs" / "broken" / "data_report.json").read_text())
    assert len(report["problems"]) == 2


# ----------------------------------------------------------------------------- splits and audit


def test_stratified_split_keeps_each_class_share() -> None:
    labels = np.array([0] * 90 + [1] * 10)
    for seed in range(5):
        split = split_indices(100, validation=0.1, test=0.1, seed=seed, labels=labels)
        assert {name: int((labels[index] == 1).sum()) for name, index in split.items()} == {
            "test": 1,
            "validation": 1,
            "train": 8,
        }
        assert sorted(np.concatenate(list(split.values())).tolist()) == list(range(100))
    # Without stratify some seed leaves the rare class out of a split (what stratify prevents).
    plain = [split_indices(100, validation=0.1, test=0.1, seed=s) for s in range(20)]
    assert any((labels[p["validation"]] == 1).sum() == 0 for p in plain)


def test_audit_reports_counts_duplicates_constant_columns_and_tiny_classes(tmp_path: Path) -> None:
    rows = [f"{i % 7}.5,3,{'rare' if i == 0 else 'a' if i % 2 else 'b'}" for i in range(40)]
    pipeline = build_pipeline(
        csv_config(write_table(tmp_path / "t.csv", rows), split={"validation": 0.2, "test": 0.2, "seed": 1}),
        batch_size=8,
    )
    report, findings = pipeline.audit()
    assert sum(sum(c.values()) for c in report["examples_per_class"].values()) == 40
    assert {s: sum(c.values()) for s, c in report["examples_per_class"].items()} == report["examples"]
    assert report["constant_columns"] == ["weight"]
    assert report["duplicates_across_splits"]  # only 7 distinct sizes x 2 labels among 40 rows
    assert "rare" in report["tiny_classes"]
    codes = {f.code for f in findings}
    assert {"DATA-CONSTANT-COLUMN", "DATA-DUPLICATE-ACROSS-SPLITS", "DATA-TINY-CLASS"} <= codes
