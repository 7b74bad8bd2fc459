"""TF Serving's warmup records: ``assets.extra/tf_serving_warmup_requests`` in a version directory.

A TFRecord file of PredictionLog protos that the server replays before a version takes traffic;
TF Serving reads at most 1000 of them. Export writes the file and verifies it, the server reads
it at load: both go through this module so a file one accepts the other accepts too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tfpilot.errors import ExportError

__all__ = ["WARMUP_PATH", "MAX_WARMUP_RECORDS", "read_warmup_records", "write_warmup_records"]

WARMUP_PATH = Path("assets.extra") / "tf_serving_warmup_requests"
MAX_WARMUP_RECORDS = 1000


def write_warmup_records(version_dir: str | Path, records: list[Any]) -> Path:
    """Write PredictionLog protos to ``version_dir``'s warmup file; returns its path."""
    import tensorflow as tf

    path = Path(version_dir) / WARMUP_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record.SerializeToString())
    return path


def read_warmup_records(path: str | Path) -> list[Any]:
    """PredictionLog protos from a warmup TFRecord file.

    Raises ExportError (an artifact that is not what TF Serving accepts) when the file is not a
    TFRecord of PredictionLog or holds more than MAX_WARMUP_RECORDS records."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    records = []
    try:
        # One past the limit is read, so an over-long file is refused rather than cut short.
        for raw in tf.data.TFRecordDataset(str(path)).take(MAX_WARMUP_RECORDS + 1):
            records.append(prediction_log_pb2.PredictionLog.FromString(raw.numpy()))
    except Exception as error:
        raise ExportError(f"warmup file {path} is not a TFRecord of PredictionLog: {error}") from None
    if len(records) > MAX_WARMUP_RECORDS:
        raise ExportError(f"warmup file {path} holds more than {MAX_WARMUP_RECORDS} records, TF Serving's limit")
    return records
