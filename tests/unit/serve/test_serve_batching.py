"""The batcher: merging, splitting, isolation of bad requests, deadlines and a bounded queue.

The batcher is generic over any object with ``name`` and ``run(signature, inputs)``; these
tests drive it with a plain numpy model so timings are deterministic. Live-server tests
exercise it with real SavedModels.
"""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

from tfpilot.serve.batching import Batcher
from tfpilot.serve.model_config import BatchingParameters
from tfpilot.serve.status import Code, RequestError


class NumpyModel:
    """y = 2x + 1 per row; records the batch size of every call; optional delay and gate."""

    name = "numpy"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls: list[int] = []
        self.gate = threading.Event()
        self.gate.set()
        self._lock = threading.Lock()

    def run(self, signature_name: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.gate.wait(10)
        x = inputs["x"]
        if np.any(x < 0):
            raise RequestError.invalid("negative input")
        with self._lock:
            self.calls.append(x.shape[0] if x.ndim else 0)
        if self.delay:
            time.sleep(self.delay)
        return {"y": 2 * x + 1, "total": np.sum(x, axis=tuple(range(1, x.ndim))) if x.ndim > 1 else 2 * x}


def run(coroutine):
    return asyncio.run(coroutine)


def test_concurrent_requests_merge_into_batches_and_split_back():
    model = NumpyModel(delay=0.02)
    batcher = Batcher(BatchingParameters(max_batch_size=16, num_batch_threads=1))

    async def main():
        requests = [np.full((1 + i % 3, 4), float(i), np.float32) for i in range(40)]
        results = await asyncio.gather(*(batcher.run(model, "serving_default", {"x": x}) for x in requests))
        for x, result in zip(requests, results, strict=False):
            np.testing.assert_array_equal(result["y"], 2 * x + 1)
            assert result["y"].shape == x.shape
        return requests

    requests = run(main())
    batcher.close()
    assert sum(model.calls) == sum(x.shape[0] for x in requests)
    assert len(model.calls) < len(requests) / 3, model.calls  # merged while the model was busy
    assert max(model.calls) <= 16


def test_incompatible_shapes_are_not_merged():
    model = NumpyModel(delay=0.01)
    batcher = Batcher(BatchingParameters(max_batch_size=64, num_batch_threads=1))

    async def main():
        shapes = [(1, 2), (1, 3), (1, 2), (1, 3)] * 5
        results = await asyncio.gather(
            *(batcher.run(model, "s", {"x": np.ones(shape, np.float32)}) for shape in shapes)
        )
        assert [r["y"].shape for r in results] == shapes

    run(main())
    batcher.close()


def test_a_bad_request_fails_alone():
    model = NumpyModel(delay=0.01)
    model.gate.clear()
    batcher = Batcher(BatchingParameters(max_batch_size=8, num_batch_threads=1))

    async def main():
        values = [1.0, -1.0, 2.0, 3.0]
        tasks = [asyncio.ensure_future(batcher.run(model, "s", {"x": np.array([v], np.float32)})) for v in values]
        await asyncio.sleep(0.05)
        model.gate.set()
        return await asyncio.gather(*tasks, return_exceptions=True)

    results = run(main())
    batcher.close()
    assert isinstance(results[1], RequestError) and results[1].message == "negative input"
    for value, result in zip([1.0, 2.0, 3.0], [results[0], results[2], results[3]], strict=False):
        np.testing.assert_array_equal(result["y"], [2 * value + 1])


def test_full_queue_answers_resource_exhausted_and_deadline_answers_504():
    model = NumpyModel()
    model.gate.clear()  # the model blocks: requests pile up
    batcher = Batcher(BatchingParameters(max_batch_size=2, max_enqueued_batches=2, num_batch_threads=1))

    async def main():
        running = asyncio.ensure_future(batcher.run(model, "s", {"x": np.ones(2, np.float32)}))
        await asyncio.sleep(0.02)  # first batch now occupies the only worker
        waiting = [asyncio.ensure_future(batcher.run(model, "s", {"x": np.ones(1, np.float32)})) for _ in range(4)]
        await asyncio.sleep(0.01)
        with pytest.raises(RequestError) as full:
            await batcher.run(model, "s", {"x": np.ones(1, np.float32)})
        assert full.value.code == Code.RESOURCE_EXHAUSTED
        assert batcher.queue_depth() == {"numpy": 4}
        with pytest.raises(RequestError) as late:
            await batcher.run(model, "other", {"x": np.ones(1, np.float32)}, timeout=0.05)
        assert late.value.code == Code.DEADLINE_EXCEEDED
        model.gate.set()
        await asyncio.gather(running, *waiting)
        assert batcher.queue_depth() == {}

    run(main())
    batcher.close()


async def _wait_queued(batcher: Batcher, count: int) -> None:
    """Yield to the event loop until `count` requests are queued (bounded by a generous deadline)."""
    deadline = time.monotonic() + 60
    while batcher.queue_depth().get("numpy", 0) < count:
        assert time.monotonic() < deadline, batcher.queue_depth()
        await asyncio.sleep(0.001)


def test_batch_timeout_waits_to_fill_a_batch():
    model = NumpyModel()
    # An hour: a batch can only be dispatched here because it became full, never because time ran out.
    batcher = Batcher(BatchingParameters(max_batch_size=4, batch_timeout_micros=3_600_000_000, num_batch_threads=1))

    async def main():
        first = asyncio.ensure_future(batcher.run(model, "s", {"x": np.ones(1, np.float32)}))
        await _wait_queued(batcher, 1)
        assert model.calls == []  # the lone request waits for company instead of running alone
        others = [asyncio.ensure_future(batcher.run(model, "s", {"x": np.ones(1, np.float32)})) for _ in range(3)]
        await asyncio.gather(first, *others)

    run(main())
    batcher.close()
    assert model.calls == [4]  # one full batch, dispatched as soon as it was full


def test_a_lone_request_runs_once_the_batch_timeout_passes():
    model = NumpyModel()
    batcher = Batcher(BatchingParameters(max_batch_size=4, batch_timeout_micros=20_000, num_batch_threads=1))

    async def main():
        return await batcher.run(model, "s", {"x": np.ones(1, np.float32)})

    result = run(main())
    batcher.close()
    np.testing.assert_array_equal(result["y"], [3.0])
    assert model.calls == [1]


def test_allowed_batch_sizes_pad_and_unbatched_runs_one_request_per_call():
    model = NumpyModel(delay=0.01)
    batcher = Batcher(BatchingParameters(max_batch_size=8, num_batch_threads=1, allowed_batch_sizes=(4, 8)))

    async def main(b):
        results = await asyncio.gather(*(b.run(model, "s", {"x": np.array([float(i)], np.float32)}) for i in range(6)))
        assert [r["y"].tolist() for r in results] == [[2.0 * i + 1] for i in range(6)]

    run(main(batcher))
    batcher.close()
    assert set(model.calls) <= {4, 8}
    model.calls.clear()
    unbatched = Batcher(None, num_threads=2)
    run(main(unbatched))
    unbatched.close()
    assert model.calls == [1] * 6


def test_closed_loop_clients_each_get_their_own_rows():
    # Like the benchmark's load generator: each client sends its next request when the previous
    # one is answered, so batches form while the model is busy and a worker runs them back to back.
    model = NumpyModel(delay=0.005)
    batcher = Batcher(BatchingParameters(max_batch_size=8, num_batch_threads=2))

    async def client(index: int) -> list[bool]:
        answers = []
        for step in range(12):
            value = float(index * 100 + step)
            rows = 1 + (index + step) % 2
            x = np.full((rows, 3), value, np.float32)
            result = await batcher.run(model, "serving_default", {"x": x})
            answers.append(result["y"].shape == (rows, 3) and bool(np.all(result["y"] == 2 * value + 1)))
        return answers

    async def main():
        return await asyncio.gather(*(client(i) for i in range(20)))

    answers = run(main())
    batcher.close()
    assert all(all(a) for a in answers)
    assert sum(model.calls) == sum(1 + (i + s) % 2 for i in range(20) for s in range(12))
    assert max(model.calls) <= 8 and len(model.calls) < 240 / 2, model.calls  # merged


def test_a_worker_starts_the_next_batch_without_the_event_loop():
    model = NumpyModel()
    model.gate.clear()
    batcher = Batcher(BatchingParameters(max_batch_size=4, num_batch_threads=1))

    async def main():
        first = asyncio.ensure_future(batcher.run(model, "s", {"x": np.ones(1, np.float32)}))
        await asyncio.sleep(0.01)  # the worker holds the first batch, waiting at the gate
        queued = [asyncio.ensure_future(batcher.run(model, "s", {"x": np.ones(1, np.float32)})) for _ in range(3)]
        await _wait_queued(batcher, 3)
        # Block the event loop, then let the model go: the worker must take the queued batch itself.
        model.gate.set()
        deadline = time.monotonic() + 30
        while len(model.calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.001)  # deliberately blocking: the loop cannot dispatch anything now
        assert model.calls == [1, 3]
        results = await asyncio.gather(first, *queued)
        assert [r["y"].tolist() for r in results] == [[3.0]] * 4
        await batcher.drain(timeout=30)
        assert batcher.queue_depth() == {}

    run(main())
    batcher.close()
