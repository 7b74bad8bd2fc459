"""Issue 33: every data problem in one pass, for each source kind that is not an image folder.

Each test plants several different problems in one tiny dataset on disk and checks that one
error names all of them (exit code 2, one line, the key that skips them), that DataError.problems
holds the same list, and that `data.on_bad_records: skip` names every record it left out.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
import tensorflow as tf

from tfpilot.config.schema import DataConfig
from tfpilot.data import load_source
from tfpilot.errors import DataError

# ----------------------------------------------------------------------------- TFRecord


def example(x: float, label: int | None) -> bytes:
    feature = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=[x]))}
    if label is not None:
        feature["label"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


@pytest.fixture
def broken_shards(tmp_path: Path) -> Path:
    """Three shards of 10 records, labels 0/1 of classes a, b, c: record 3 of shard 1 has no label,
    record 5 of shard 1 has label 7, shard 2 is truncated in its last record, and class c is empty."""
    root = tmp_path / "shards"
    root.mkdir()
    for shard in range(3):
        with tf.io.TFRecordWriter(str(root / f"d-{shard}.tfrecord")) as writer:
            for row in range(10):
                label = None if (shard, row) == (1, 3) else 7 if (shard, row) == (1, 5) else row % 2
                writer.write(example(float(row), label))
    truncated = root / "d-2.tfrecord"
    truncated.write_bytes(truncated.read_bytes()[:-10])
    return root


def tfrecord_config(root: Path, **extra: object) -> DataConfig:
    return DataConfig(
        kind="tfrecord",
        path=root,
        tfrecord={"features": {"x": {"dtype": "float32", "shape": []}}, "class_names": ["a", "b", "c"]},
        **extra,
    )


def test_tfrecord_shard_damage_missing_feature_label_outside_and_empty_class_in_one_error(broken_shards: Path) -> None:
    with pytest.raises(DataError) as caught:
        load_source(tfrecord_config(broken_shards))
    error = caught.value
    message = str(error)
    assert error.exit_code == 2 and "\n" not in message
    assert "4 problem(s)" in message and "data.on_bad_records: skip" in message
    assert "d-2.tfrecord` unreadable from record 9" in message  # the damaged shard and where
    assert "d-1.tfrecord record 3 (Feature: label" in message  # the record without its label
    assert "d-1.tfrecord record 5 (label=7)" in message and "outside the classes 0..2" in message
    assert "1 class(es) have no records: c" in message
    assert len(error.problems) == 4 and all(problem in message for problem in error.problems)


def test_tfrecord_skip_names_every_left_out_record_and_keeps_the_rest(broken_shards: Path) -> None:
    source = load_source(tfrecord_config(broken_shards, on_bad_records="skip"))
    # 30 written: the truncated last record of shard 2, and 2 bad records of shard 1, are out.
    assert len(source) == 27 and source.class_names == ["a", "b", "c"]
    by_code = {f.code: f for f in source.findings}
    assert sorted(by_code) == ["DATA-EMPTY-CLASS", "DATA-SHARDS-TRUNCATED", "DATA-SKIPPED-RECORDS"]
    skipped = by_code["DATA-SKIPPED-RECORDS"].evidence["records"]
    assert [Path(name).name for name in skipped] == ["d-1.tfrecord record 3", "d-1.tfrecord record 5"]
    assert list(by_code["DATA-SHARDS-TRUNCATED"].evidence["shard tails"]) == [str(broken_shards / "d-2.tfrecord")]
    assert by_code["DATA-EMPTY-CLASS"].evidence == {"classes": ["c"]}
    assert not any("record 3" in str(name) or "record 5" in str(name) for name in source.row_ids if "d-1" in name)


def test_tfrecord_listing_is_bounded_in_the_message_but_complete_in_the_problems(tmp_path: Path) -> None:
    root = tmp_path / "shards"
    root.mkdir()
    with tf.io.TFRecordWriter(str(root / "d.tfrecord")) as writer:
        for row in range(20):
            writer.write(example(float(row), 9 if row < 8 else row % 2))
    with pytest.raises(DataError) as caught:
        load_source(DataConfig(kind="tfrecord", path=root, tfrecord={"features": {"x": {"dtype": "float32"}}}))
    (problem,) = caught.value.problems
    # No class_names: labels 0..9 are classes and 2..8 are empty; the 8 records of 9 are fine.
    assert "7 class(es) have no records" in problem
    with pytest.raises(DataError) as caught:
        load_source(
            DataConfig(
                kind="tfrecord",
                path=root,
                tfrecord={"features": {"x": {"dtype": "float32"}}, "class_names": ["a", "b"]},
            )
        )
    (problem,) = caught.value.problems
    assert all(f"d.tfrecord record {row} (label=9)" in problem for row in range(8))
    assert "and 3 more" in str(caught.value) and "record 7 (label=9)" not in str(caught.value)


def test_streamed_tfrecords_report_the_same_problems_and_skip_them_while_streaming(broken_shards: Path) -> None:
    from tfpilot.data import build_pipeline

    tfrecord = {
        "features": {"x": {"dtype": "float32", "shape": []}},
        "class_names": ["a", "b", "c"],
        "stream": True,
        "splits": {"train": "d-[01].tfrecord", "validation": "d-2.tfrecord"},
    }
    with pytest.raises(DataError) as caught:
        load_source(DataConfig(kind="tfrecord", path=broken_shards, tfrecord=tfrecord))
    message = str(caught.value)
    assert "4 problem(s)" in message and "d-2.tfrecord` unreadable from record 9" in message
    assert "d-1.tfrecord record 3 (Feature: label" in message and "d-1.tfrecord record 5 (label=7)" in message
    assert "1 class(es) have no records: c" in message
    pipeline = build_pipeline(
        DataConfig(kind="tfrecord", path=broken_shards, tfrecord=tfrecord, on_bad_records="skip", shuffle_buffer=0),
        batch_size=4,
    )
    codes = sorted(f.code for f in pipeline.source.findings)
    assert codes == ["DATA-EMPTY-CLASS", "DATA-SHARDS-TRUNCATED", "DATA-SKIPPED-RECORDS"]
    # What the pipeline streams is what the scan counted: the two bad records and the damaged tail are out.
    assert pipeline.num_examples("train") == 18 and pipeline.num_examples("validation") == 9
    labels = [int(v) for _, y in pipeline.evaluation("train") for v in y.numpy()]
    assert len(labels) == 18 and set(labels) <= {0, 1}
    assert sum(int(y.shape[0]) for _, y in pipeline.evaluation("validation")) == 9
    assert sum(int(y.shape[0]) for _, y in pipeline.train(epoch=0)) == 18


# ----------------------------------------------------------------------------- the CLI end to end


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tfpilot.cli.main", *args], capture_output=True, text=True, timeout=300
    )


def test_tfpilot_train_and_inspect_report_the_same_tfrecord_problems(broken_shards: Path) -> None:
    config = broken_shards.parent / "cfg.yaml"
    config.write_text(
        f"name: broken\nruns_dir: {broken_shards.parent / 'runs'}\ndata:\n  kind: tfrecord\n  path: {broken_shards}\n"
        "  tfrecord:\n    features: {x: {dtype: float32, shape: []}}\n    class_names: [a, b, c]\n"
        "train:\n  epochs: 1\n"
    )
    trained = run_cli("train", str(config))
    assert trained.returncode == 2, trained.stderr[-2000:]
    line = trained.stderr.strip().splitlines()[-1]
    report_path = broken_shards.parent / "runs" / "broken" / "data_report.json"
    assert "4 problem(s)" in line and str(report_path) in line and "data.on_bad_records: skip" in line
    report = json.loads(report_path.read_text())
    assert report["kind"] == "tfrecord" and len(report["problems"]) == 4
    inspected = run_cli("data", "inspect", str(config), "--format", "json")
    assert inspected.returncode == 2
    assert json.loads(inspected.stdout)["problems"] == report["problems"]


# ----------------------------------------------------------------------------- CSV


def write_csv(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def broken_table(tmp_path: Path) -> Path:
    """A bad cell (line 4), an empty label (line 6), a row with an extra cell whose class `medium`
    appears nowhere else (line 8), and, after a blank line, a bad cell on line 12."""
    lines = ["size,weight,label"] + [f"{i}.0,{10 * i},{'big' if i % 2 else 'small'}" for i in range(1, 10)]
    lines[3] = "3.4cm,30,small"
    lines[5] = "5.0,50,"
    lines[7] = "7.0,70,medium,extra"
    lines += ["", "11.0,abc,big", "12.0,120,small"]
    return write_csv(tmp_path / "t.csv", lines)


def csv_config(path: Path, **extra: object) -> DataConfig:
    return DataConfig(kind="csv", path=path, split={"validation": 0.0, "test": 0.0}, **extra)


def test_csv_bad_cells_missing_label_ragged_row_and_empty_class_in_one_error(tmp_path: Path) -> None:
    with pytest.raises(DataError) as caught:
        load_source(csv_config(broken_table(tmp_path)))
    error = caught.value
    message = str(error)
    assert error.exit_code == 2 and "\n" not in message and "5 problem(s)" in message
    assert "do not have the header's 3 cells: line 8 (4 cells)" in message
    assert "column `size` holds non-numbers ['3.4cm']: line 4" in message
    # The blank line 10 is counted: the bad weight is named on its real line.
    assert "column `weight` holds non-numbers ['abc']: line 12" in message
    assert "label `label` is empty on 1 row(s): line 6" in message
    assert "1 class(es) have rows only on the bad lines: medium" in message
    assert "data.on_bad_records: skip" in message and len(error.problems) == 5


def test_csv_skip_names_every_skipped_row_and_the_class_it_lost(tmp_path: Path) -> None:
    source = load_source(csv_config(broken_table(tmp_path), on_bad_records="skip"))
    assert source.class_names == ["big", "small"] and len(source) == 7
    by_code = {f.code: f for f in source.findings}
    assert by_code["DATA-ROWS-SKIPPED"].evidence["lines"] == [4, 6, 8, 12]
    assert by_code["DATA-EMPTY-CLASS"].evidence == {"classes": ["medium"]}
    assert source.row_ids.tolist() == [2, 3, 5, 7, 9, 10, 13]


def test_csv_label_column_that_is_never_on_is_an_empty_class(tmp_path: Path) -> None:
    lines = ["size,cat,dog,eel"] + [f"{i},{i % 2},{1 - i % 2},0" for i in range(8)]
    lines[2] = "x,1,0,0"
    path = write_csv(tmp_path / "m.csv", lines)
    with pytest.raises(DataError) as caught:
        load_source(csv_config(path, csv={"label_columns": ["cat", "dog", "eel"]}))
    assert "2 problem(s)" in str(caught.value) and "are on in no usable row: eel" in str(caught.value)
    source = load_source(csv_config(path, csv={"label_columns": ["cat", "dog", "eel"]}, on_bad_records="skip"))
    assert {f.code: f.evidence for f in source.findings}["DATA-EMPTY-CLASS"] == {"classes": ["eel"]}


def test_train_run_writes_the_csv_problems_to_data_report_and_skip_trains_naming_them(tmp_path: Path) -> None:
    from tfpilot.config import config_from_dict
    from tfpilot.workflow import train_run

    path = broken_table(tmp_path)

    def config(**data: object):
        return config_from_dict(
            {
                "name": "t",
                "runs_dir": str(tmp_path / "runs"),
                "data": {"kind": "csv", "path": str(path), "split": {"validation": 0.2, "test": 0.0}, **data},
                "train": {"epochs": 1, "batch_size": 4},
                "export": {"enabled": False},
            }
        )

    report_path = tmp_path / "runs" / "t" / "data_report.json"
    with pytest.raises(DataError) as caught:
        train_run(config())
    assert f"every problem is listed in {report_path}" in str(caught.value)
    report = json.loads(report_path.read_text())
    assert report["kind"] == "csv" and report["problems"] == caught.value.problems and len(report["problems"]) == 5
    train_run(config(on_bad_records="skip"))
    findings = json.loads((tmp_path / "runs" / "t" / "findings.json").read_text())
    skipped = [f for f in findings if f["code"] == "DATA-ROWS-SKIPPED"]
    assert skipped and skipped[0]["evidence"]["lines"] == [4, 6, 8, 12]
    assert "DATA-EMPTY-CLASS" in {f["code"] for f in json.loads(report_path.read_text())["findings"]}


# ----------------------------------------------------------------------------- text


def test_text_file_every_bad_line_in_one_error_and_skip_names_them(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    lines = [f"{'pos' if i % 2 else 'neg'}\tsentence number {i}".encode() for i in range(8)]
    lines[1] = b"pos sentence without a tab"
    lines[3] = b"\tno label here"
    lines[5] = b"neg\tcaf\xe9 in latin-1"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(DataError) as caught:
        load_source(DataConfig(kind="text", path=path))
    message = str(caught.value)
    assert "3 problem(s)" in message and "\n" not in message
    assert "1 line(s) have no TAB between label and text: line 2" in message
    assert "1 line(s) have an empty label: line 4" in message
    assert "1 line(s) are not valid UTF-8: line 6 (not valid UTF-8 (byte b'\\xe9'" in message
    source = load_source(DataConfig(kind="text", path=path, on_bad_records="skip"))
    assert len(source) == 5 and source.row_ids.tolist() == [1, 3, 5, 7, 8]
    (finding,) = [f for f in source.findings if f.code == "DATA-ROWS-SKIPPED"]
    assert finding.evidence["lines"] == ["line 2", "line 4", "line 6"]


def test_text_csv_ragged_rows_and_a_class_only_on_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for i in range(6):
            writer.writerow([f"sentence {i}", "pos" if i % 2 else "neg"])
        writer.writerow(["only row of its class", "maybe", "stray cell"])
        writer.writerow(["no label", ""])
    with pytest.raises(DataError) as caught:
        load_source(DataConfig(kind="text", path=path))
    message = str(caught.value)
    assert "3 problem(s)" in message
    assert "do not have the header's number of cells: line 8" in message and "empty label: line 9" in message
    assert "1 class(es) have rows only on the bad lines: maybe" in message
    source = load_source(DataConfig(kind="text", path=path, on_bad_records="skip"))
    assert source.class_names == ["neg", "pos"]
    assert {f.code for f in source.findings} == {"DATA-ROWS-SKIPPED", "DATA-EMPTY-CLASS"}
