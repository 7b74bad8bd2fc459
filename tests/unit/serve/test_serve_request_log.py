"""The SQLite request log: public reader, sampling, rotation, never blocking."""

from __future__ import annotations

import base64
import dataclasses
import sqlite3
import time

import numpy as np
import pytest

from tfpilot.errors import ServeError
from tfpilot.serve.request_log import LoggedRequest, RequestLog, read_requests


def record(log: RequestLog, index: int, model: str = "half") -> bool:
    return log.record(
        model=model,
        version=1,
        signature="serving_default",
        inputs={"x": np.array([float(index), 2.0], np.float32), "raw": np.array([b"\x00\xff"], dtype=object)},
        outputs={"y": np.array([[index], [3]], np.int64)},
    )


def test_records_read_back_as_stable_dataclasses(tmp_path):
    path = tmp_path / "requests.sqlite"
    log = RequestLog(path)
    before = time.time()
    for index in range(3):
        assert record(log, index)
    record(log, 9, model="other")
    log.close()
    rows = read_requests(path)
    assert [f.name for f in dataclasses.fields(LoggedRequest)] == [
        "timestamp",
        "model",
        "version",
        "signature",
        "inputs",
        "outputs",
    ]
    assert len(rows) == 4
    first = rows[0]
    assert first.model == "half" and first.version == 1 and first.signature == "serving_default"
    assert first.inputs == {"x": [0.0, 2.0], "raw": [base64.b64encode(b"\x00\xff").decode()]}
    assert first.outputs == {"y": [[0], [3]]}
    assert before <= first.timestamp <= time.time()
    assert [r.inputs["x"][0] for r in read_requests(path, model="half")] == [0.0, 1.0, 2.0]
    assert [r.inputs["x"][0] for r in read_requests(path, model="half", limit=2)] == [1.0, 2.0]  # most recent, in order
    assert read_requests(path, model="missing") == []


def test_rotation_keeps_the_newest_rows(tmp_path):
    path = tmp_path / "requests.sqlite"
    log = RequestLog(path, max_rows=50)
    for index in range(230):
        record(log, index)
        if index % 40 == 0:
            log.flush()
    log.close()
    rows = read_requests(path)
    assert len(rows) == 50
    assert [r.inputs["x"][0] for r in rows] == [float(i) for i in range(180, 230)]


def test_sampling_rate_is_respected(tmp_path):
    nothing = RequestLog(tmp_path / "none.sqlite", sample_rate=0.0)
    assert not any(record(nothing, i) for i in range(50))
    nothing.close()
    assert read_requests(tmp_path / "none.sqlite") == []
    half = RequestLog(tmp_path / "half.sqlite", sample_rate=0.5, seed=7)
    accepted = sum(record(half, i) for i in range(1000))
    half.close()
    assert 400 < accepted < 600
    assert len(read_requests(tmp_path / "half.sqlite")) == accepted


def test_a_blocked_writer_drops_records_instead_of_blocking(tmp_path):
    path = tmp_path / "requests.sqlite"
    log = RequestLog(path, queue_size=4)
    assert record(log, -1)
    log.flush()  # the writer has created the schema and is idle: taking the lock cannot race it
    blocker = sqlite3.connect(path, timeout=30)
    blocker.execute("BEGIN EXCLUSIVE")  # the writer thread now waits on the database lock
    # Every call returns while the writer cannot write: a blocking record() would never get here.
    accepted = sum(record(log, i) for i in range(200))
    blocker.rollback()
    blocker.close()
    log.close()
    assert accepted < 100  # the bounded queue (4) plus what the writer holds, not all 200
    assert log.dropped >= 200 - accepted > 0
    assert len(read_requests(path)) == log.written == accepted + 1


def test_reader_and_writer_errors_are_one_line_serve_errors(tmp_path):
    with pytest.raises(ServeError, match="does not exist"):
        read_requests(tmp_path / "missing.sqlite")
    with pytest.raises(ServeError, match="sample_rate"):
        RequestLog(tmp_path / "x.sqlite", sample_rate=1.5)
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(ServeError, match="cannot open request log"):
        RequestLog(tmp_path / "dir.sqlite")
