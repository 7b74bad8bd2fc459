"""Sampled request/response log in SQLite, for drift monitoring.

The server calls :meth:`RequestLog.record` on its event loop; that only samples and puts the
arrays on a bounded queue (a full queue drops the record and counts it), so logging never
blocks or slows a request. A background thread converts arrays to JSON and appends them in
transactions, deleting the oldest rows beyond ``max_rows``. Readers use :func:`read_requests`,
a stable API the monitor builds on.

Schema (version 1)::

    CREATE TABLE requests (
        id        INTEGER PRIMARY KEY AUTOINCREMENT,
        timestamp REAL    NOT NULL,  -- seconds since the epoch, when the request finished
        model     TEXT    NOT NULL,
        version   INTEGER NOT NULL,
        signature TEXT    NOT NULL,
        inputs    TEXT    NOT NULL,  -- JSON object {input name: nested list, batch first}
        outputs   TEXT    NOT NULL   -- JSON object {output name: nested list, batch first}
    );
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);  -- schema_version = 1
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import queue
import random
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from tfpilot.errors import ServeError

__all__ = ["LoggedRequest", "RequestLog", "read_requests", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
_log = logging.getLogger("tfpilot.serve")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    timestamp REAL    NOT NULL,
    model     TEXT    NOT NULL,
    version   INTEGER NOT NULL,
    signature TEXT    NOT NULL,
    inputs    TEXT    NOT NULL,
    outputs   TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS requests_by_model ON requests (model, id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclasses.dataclass(frozen=True)
class LoggedRequest:
    """One logged request. Lists are per-request batches; bytes are base64 strings."""

    timestamp: float
    model: str
    version: int
    signature: str
    inputs: dict[str, list[Any]]
    outputs: dict[str, list[Any]]


def _jsonable(array: Any) -> Any:
    array = np.asarray(array)
    if array.dtype.kind in "OSU":
        flat = [
            base64.b64encode(item).decode("ascii") if isinstance(item, bytes) else str(item)
            for item in array.reshape(-1).tolist()
        ]
        if array.ndim == 0:
            return flat[0]
        holder = np.empty(len(flat), dtype=object)
        holder[:] = flat
        return holder.reshape(array.shape).tolist()
    if array.dtype.kind == "f" or array.dtype.name == "bfloat16":
        return array.astype(np.float64).tolist()
    return array.tolist()


def _examples_to_columns(serialized: Any) -> dict[str, list[Any]]:
    """Serialized tf.Examples -> {feature: [values per example]}, which drift checks can use."""
    from tensorflow.core.example import example_pb2

    columns: dict[str, list[Any]] = {}
    items = list(np.asarray(serialized, dtype=object).reshape(-1))
    for index, raw in enumerate(items):
        example = example_pb2.Example.FromString(raw)
        for name, feature in example.features.feature.items():
            kind = feature.WhichOneof("kind")
            values: list[Any] = []
            if kind == "float_list":
                values = list(feature.float_list.value)
            elif kind == "int64_list":
                values = list(feature.int64_list.value)
            elif kind == "bytes_list":
                values = [base64.b64encode(v).decode("ascii") for v in feature.bytes_list.value]
            columns.setdefault(name, [None] * len(items))[index] = values
    return columns


class RequestLog:
    """Non-blocking, sampled, size-bounded request log backed by one SQLite file."""

    def __init__(
        self,
        path: str | Path,
        *,
        sample_rate: float = 1.0,
        max_rows: int = 100_000,
        queue_size: int = 1024,
        seed: int | None = None,
    ) -> None:
        if not 0.0 <= sample_rate <= 1.0:
            raise ServeError(f"--request_log_sample_rate must be within [0, 1], got {sample_rate}")
        if max_rows < 1:
            raise ServeError(f"request log max_rows must be >= 1, got {max_rows}")
        self.path = Path(path)
        self.sample_rate = sample_rate
        self.max_rows = max_rows
        self.dropped = 0
        self.written = 0
        self._counter_lock = threading.Lock()
        self._random = random.Random(seed)
        self._queue: queue.Queue[tuple[Any, ...] | None] = queue.Queue(maxsize=queue_size)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = self._connect()  # fail at startup, not in the thread, if the path is unusable
        connection.close()
        self._thread = threading.Thread(target=self._write_loop, name="tfpilot-request-log", daemon=True)
        self._thread.start()

    def _connect(self) -> sqlite3.Connection:
        try:
            connection = sqlite3.connect(self.path, timeout=10.0, check_same_thread=False)
            # WAL lets the monitor read while the server appends.
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.executescript(_SCHEMA)
            connection.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
            connection.commit()
        except sqlite3.Error as error:
            raise ServeError(f"cannot open request log {self.path}: {error}") from None
        return connection

    def record(
        self,
        *,
        model: str,
        version: int,
        signature: str,
        inputs: dict[str, Any],
        outputs: dict[str, Any],
        examples: bool = False,
    ) -> bool:
        """Queue one request for logging. Never blocks; returns whether it was queued.

        ``examples`` True means ``inputs`` holds serialized tf.Examples (classify / regress),
        which are stored as feature columns instead of opaque bytes.
        """
        if self.sample_rate < 1.0 and self._random.random() >= self.sample_rate:
            return False
        try:
            self._queue.put_nowait((time.time(), model, int(version), signature, inputs, outputs, examples))
        except queue.Full:
            self._count_dropped(1)
            return False
        return True

    def _count_dropped(self, count: int) -> None:
        with self._counter_lock:
            self.dropped += count

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until everything queued so far is written (for tests and shutdown)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.005)

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout=30)

    def _write_loop(self) -> None:
        connection = self._connect()
        inserts_since_trim = 0
        try:
            while True:
                item = self._queue.get()
                batch = [item]
                # Drain what is already waiting so one transaction covers a burst.
                while item is not None and len(batch) < 512:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    batch.append(item)
                stop = batch[-1] is None
                candidates = [self._row(entry) for entry in batch if entry is not None]
                rows = [row for row in candidates if row is not None]
                if rows:
                    try:
                        with connection:
                            connection.executemany(
                                "INSERT INTO requests (timestamp, model, version, signature, inputs, outputs) "
                                "VALUES (?, ?, ?, ?, ?, ?)",
                                rows,
                            )
                            inserts_since_trim += len(rows)
                            # Trim in steps of ~1% so rotation costs little per insert.
                            if inserts_since_trim >= max(1, self.max_rows // 100):
                                self._trim(connection)
                                inserts_since_trim = 0
                        self.written += len(rows)
                    except sqlite3.Error as error:
                        self._count_dropped(len(rows))
                        _log.warning("request log: could not write %d rows: %s", len(rows), error)
                for _ in batch:
                    self._queue.task_done()
                if stop:
                    break
            with connection:
                self._trim(connection)
        finally:
            connection.close()

    def _trim(self, connection: sqlite3.Connection) -> None:
        connection.execute("DELETE FROM requests WHERE id <= (SELECT MAX(id) FROM requests) - ?", (self.max_rows,))

    def _row(self, entry: tuple[Any, ...]) -> tuple[Any, ...] | None:
        timestamp, model, version, signature, inputs, outputs, examples = entry
        try:
            if examples:
                encoded_inputs: dict[str, Any] = {}
                for value in inputs.values():
                    encoded_inputs.update(_examples_to_columns(value))
            else:
                encoded_inputs = {name: _jsonable(value) for name, value in inputs.items()}
            encoded_outputs = {name: _jsonable(value) for name, value in outputs.items()}
            return (
                timestamp,
                model,
                version,
                signature,
                json.dumps(encoded_inputs),
                json.dumps(encoded_outputs),
            )
        except Exception as error:  # a record that cannot be encoded is dropped, never fatal
            self._count_dropped(1)
            _log.warning("request log: dropped a record that could not be encoded: %s", error)
            return None


def read_requests(path: str | Path, *, model: str | None = None, limit: int | None = None) -> list[LoggedRequest]:
    """The logged requests, oldest first; ``limit`` keeps the most recent N (after ``model``)."""
    path = Path(path)
    if not path.exists():
        raise ServeError(f"request log {path} does not exist; start `tfpilot serve --request_log {path}` first")
    if limit is not None and limit < 0:
        raise ServeError(f"limit must be >= 0, got {limit}")
    query = "SELECT timestamp, model, version, signature, inputs, outputs FROM requests"
    parameters: list[Any] = []
    if model is not None:
        query += " WHERE model = ?"
        parameters.append(model)
    query += " ORDER BY id DESC"
    if limit is not None:
        query += " LIMIT ?"
        parameters.append(limit)
    try:
        connection = sqlite3.connect(path, timeout=10.0)
        try:
            rows = connection.execute(query, parameters).fetchall()
        finally:
            connection.close()
    except sqlite3.Error as error:
        raise ServeError(f"cannot read request log {path}: {error}") from None
    return [
        LoggedRequest(
            timestamp=float(timestamp),
            model=str(model_name),
            version=int(version),
            signature=str(signature),
            inputs=json.loads(inputs),
            outputs=json.loads(outputs),
        )
        for timestamp, model_name, version, signature, inputs, outputs in reversed(rows)
    ]
