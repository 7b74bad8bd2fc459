"""Warmup records: what export writes the server reads back, within TF Serving's 1000-record limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfpilot.errors import ExportError
from tfpilot.savedmodel.warmup import MAX_WARMUP_RECORDS, WARMUP_PATH, read_warmup_records, write_warmup_records


def _predict_log(name: str) -> object:
    from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_log_pb2

    request = predict_pb2.PredictRequest(model_spec=model_pb2.ModelSpec(name=name))
    return prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))


def test_records_round_trip_at_the_tf_serving_path(tmp_path: Path) -> None:
    written = [_predict_log("a"), _predict_log("b")]
    path = write_warmup_records(tmp_path, written)
    assert path == tmp_path / "assets.extra" / "tf_serving_warmup_requests" == tmp_path / WARMUP_PATH
    assert read_warmup_records(path) == written


def test_more_records_than_tf_serving_reads_are_refused(tmp_path: Path) -> None:
    path = write_warmup_records(tmp_path, [_predict_log("m")] * (MAX_WARMUP_RECORDS + 1))
    with pytest.raises(ExportError, match="more than 1000 records"):
        read_warmup_records(path)


def test_a_file_that_is_not_a_tfrecord_is_refused(tmp_path: Path) -> None:
    path = tmp_path / WARMUP_PATH
    path.parent.mkdir(parents=True)
    path.write_bytes(b"plain text, no TFRecord framing")
    with pytest.raises(ExportError, match="is not a TFRecord of PredictionLog"):
        read_warmup_records(path)
