"""Server-side batching: merge concurrent requests into one model call, off the event loop.

Requests for the same model version and signature wait in a FIFO queue. A worker (one of
``num_batch_threads``) takes the longest run of compatible requests from the head, up to
``max_batch_size`` rows, as soon as the batch is full, ``batch_timeout_micros`` has passed
since its oldest request arrived, or (timeout 0) whenever a worker is free - so batches grow
exactly while the model is busy. The merged call runs in a thread pool (TF releases the GIL),
and its outputs are split back per request; a worker that finishes a batch takes the next
ready one itself, so the model never waits for the event loop between batches. A full queue fails fast with RESOURCE_EXHAUSTED
(HTTP 429) instead of letting latency grow without bound.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tfpilot.serve.model_config import BatchingParameters
from tfpilot.serve.status import Code, RequestError

__all__ = ["Batcher", "UNBATCHED_QUEUE_CAPACITY"]

# Without batching each request is its own model call; this many may wait for a thread.
UNBATCHED_QUEUE_CAPACITY = 1024


@dataclasses.dataclass(eq=False)
class _Task:
    inputs: dict[str, np.ndarray]
    rows: int | None  # None: cannot be merged (scalar inputs or inputs of different lengths)
    merge_key: tuple[Any, ...] | None
    future: asyncio.Future[dict[str, np.ndarray]]
    enqueued_at: float
    dispatched: bool = False
    abandoned: bool = False

    @property
    def weight(self) -> int:
        return self.rows or 1


class _Queue:
    def __init__(self, servable: Any, signature_name: str) -> None:
        self.servable = servable
        self.signature_name = signature_name
        self.tasks: collections.deque[_Task] = collections.deque()
        self.pending_rows = 0

    def drop_abandoned_head(self) -> None:
        while self.tasks and self.tasks[0].abandoned:
            self.tasks.popleft()


def _merge_signature(inputs: dict[str, np.ndarray]) -> tuple[int | None, tuple[Any, ...] | None]:
    rows = None
    key = []
    for name in sorted(inputs):
        array = inputs[name]
        if array.ndim == 0 or (rows is not None and array.shape[0] != rows):
            return None, None
        rows = array.shape[0]
        key.append((name, array.dtype.str, array.shape[1:]))
    return rows, tuple(key)


class Batcher:
    """Schedules model calls. ``parameters`` None means one model call per request."""

    def __init__(
        self,
        parameters: BatchingParameters | None,
        *,
        on_batch: Callable[[str, int], None] | None = None,
        num_threads: int | None = None,
    ) -> None:
        self.parameters = parameters
        self.batching = parameters is not None
        threads = parameters.num_batch_threads if parameters else (num_threads or os.cpu_count() or 1)
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="tfpilot-model")
        self._threads = threads
        # The queues, their tasks' dispatched/abandoned flags and the free-worker count are shared
        # by the event loop (enqueue, abandon) and the workers (take the next batch): one lock.
        self._lock = threading.Lock()
        self._free_workers = threads
        self._undelivered = 0  # batches whose results a worker has handed to the loop, not yet set
        self._queues: dict[tuple[int, str], _Queue] = {}
        self._on_batch = on_batch
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        if parameters:
            self.capacity = parameters.max_enqueued_batches * parameters.max_batch_size
        else:
            self.capacity = UNBATCHED_QUEUE_CAPACITY

    # ------------------------------------------------------------------------ public

    async def run(
        self, servable: Any, signature_name: str, inputs: dict[str, np.ndarray], *, timeout: float | None = None
    ) -> dict[str, np.ndarray]:
        """Run one request through the queue; raises RequestError (429, 504 or the model's)."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        rows, merge_key = _merge_signature(inputs) if self.batching else (None, None)
        task = _Task(inputs, rows, merge_key, loop.create_future(), time.monotonic())
        queue_key = (id(servable), signature_name)
        with self._lock:
            queue = self._queues.get(queue_key)
            if queue is None:
                queue = self._queues[queue_key] = _Queue(servable, signature_name)
            pending = queue.pending_rows
            full = pending + task.weight > self.capacity and pending > 0
            if not full:
                queue.tasks.append(task)
                queue.pending_rows += task.weight
        if full:
            raise RequestError(
                Code.RESOURCE_EXHAUSTED,
                f"The batch scheduling queue for model {getattr(servable, 'name', '?')} is full "
                f"({pending} rows waiting, capacity {self.capacity}); retry later, or raise "
                "max_enqueued_batches / num_batch_threads",
            )
        self._dispatch()

        def expire() -> None:
            if not task.future.done():
                self._abandon(queue, task)
                task.future.set_exception(
                    RequestError(
                        Code.DEADLINE_EXCEEDED,
                        f"Deadline exceeded: no result within {(timeout or 0.0) * 1000:.0f} ms (--rest_api_timeout_in_ms)",
                    )
                )

        # A timer handle rather than asyncio.wait_for: wait_for costs a task per request.
        deadline = loop.call_later(timeout, expire) if timeout is not None else None
        try:
            return await task.future
        except asyncio.CancelledError:
            self._abandon(queue, task)  # the client went away
            raise
        finally:
            if deadline is not None:
                deadline.cancel()

    def queue_depth(self) -> dict[str, int]:
        """Rows waiting (not yet running), by model name."""
        depth: dict[str, int] = collections.defaultdict(int)
        with self._lock:
            for queue in self._queues.values():
                depth[getattr(queue.servable, "name", "?")] += queue.pending_rows
        return dict(depth)

    async def drain(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) until no request is queued or running."""
        deadline = time.monotonic() + timeout
        while (self._queues or self._free_workers < self._threads or self._undelivered) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._executor.shutdown(wait=True, cancel_futures=True)

    # --------------------------------------------------------------------- scheduling
    #
    # A worker that finishes a batch takes the next ready one itself, under the lock, and hands
    # the results to the loop with one call_soon_threadsafe per batch. Going back through the
    # loop to start the next batch would leave the model idle until the loop got round to it,
    # behind every request it was decoding or answering (1-3 ms per batch at concurrency 64).

    def _abandon(self, queue: _Queue, task: _Task) -> None:
        with self._lock:
            if not task.dispatched and not task.abandoned:
                task.abandoned = True
                queue.pending_rows -= task.weight
                queue.drop_abandoned_head()

    def _ready(self, queue: _Queue, now: float) -> bool:
        queue.drop_abandoned_head()
        if not queue.tasks:
            return False
        parameters = self.parameters
        if parameters is None or parameters.batch_timeout_micros == 0:
            return True
        if queue.pending_rows >= parameters.max_batch_size:
            return True
        return (now - queue.tasks[0].enqueued_at) * 1e6 >= parameters.batch_timeout_micros

    def _next_batch(self, now: float) -> tuple[_Queue, list[_Task]] | None:
        """The oldest ready queue's next batch (the lock is held)."""
        ready = [q for q in self._queues.values() if self._ready(q, now)]
        if not ready:
            return None
        queue = min(ready, key=lambda q: q.tasks[0].enqueued_at)  # oldest request first
        return queue, self._take(queue)

    def _dispatch(self) -> None:
        """On the loop: start batches on free workers, forget empty queues, arm the timeout."""
        now = time.monotonic()
        batches = []
        with self._lock:
            while self._free_workers > 0:
                taken = self._next_batch(now)
                if taken is None:
                    break
                self._free_workers -= 1
                batches.append(taken)
            self._forget_empty_queues()
            waits = self._timer_waits(now)
        for queue, batch in batches:
            self._executor.submit(self._work, queue, batch)
        self._arm_timer(waits)

    def _take(self, queue: _Queue) -> list[_Task]:
        limit = self.parameters.max_batch_size if self.parameters else 1
        batch: list[_Task] = []
        rows = 0
        while queue.tasks:
            task = queue.tasks[0]
            if task.abandoned:
                queue.tasks.popleft()
                continue
            if batch:
                head = batch[0]
                if head.merge_key is None or task.merge_key != head.merge_key or rows + task.weight > limit:
                    break
            queue.tasks.popleft()
            task.dispatched = True
            queue.pending_rows -= task.weight
            batch.append(task)
            rows += task.weight
            if not self.batching or task.merge_key is None:
                break
        return batch

    def _work(self, queue: _Queue, batch: list[_Task]) -> None:
        """A worker thread: run ``batch``, then every batch that is ready when it finishes."""
        loop = self._loop
        assert loop is not None
        while True:
            try:
                results = _execute(queue.servable, queue.signature_name, batch, self.parameters)
            except BaseException as error:  # _execute does not raise; if it ever did, answer with it
                results = [error] * len(batch)
            with self._lock:
                self._undelivered += 1
            try:
                loop.call_soon_threadsafe(self._finished, queue, batch, results)
            except RuntimeError:  # the loop is closed: nobody waits for an answer any more
                with self._lock:
                    self._undelivered -= 1
                    self._free_workers += 1
                return
            with self._lock:
                taken = self._next_batch(time.monotonic())
                if taken is None:
                    self._free_workers += 1
                    self._forget_empty_queues()
                    waiting = bool(self._queues)
                    break
            queue, batch = taken
        if waiting:  # not ready yet (batch_timeout_micros): the loop arms the timer for them
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._dispatch)

    def _finished(self, queue: _Queue, batch: list[_Task], results: list[Any]) -> None:
        with self._lock:
            self._undelivered -= 1
            self._forget_empty_queues()
        if self._on_batch is not None:
            self._on_batch(getattr(queue.servable, "name", "?"), sum(task.weight for task in batch))
        for task, result in zip(batch, results, strict=False):
            if task.future.done():
                continue
            if isinstance(result, BaseException):
                task.future.set_exception(result)
            else:
                task.future.set_result(result)

    def _forget_empty_queues(self) -> None:
        # Queues hold their servable; dropping empty ones lets an unloaded version be freed.
        for key in [k for k, q in self._queues.items() if not q.tasks]:
            del self._queues[key]

    def _timer_waits(self, now: float) -> list[float]:
        """Seconds until each queue's oldest request times out (the lock is held)."""
        parameters = self.parameters
        if parameters is None or parameters.batch_timeout_micros == 0 or self._free_workers == 0:
            return []  # with no timeout a request is ready at once: nothing to wake up for
        timeout = parameters.batch_timeout_micros / 1e6
        return [q.tasks[0].enqueued_at + timeout - now for q in self._queues.values() if q.tasks]

    def _arm_timer(self, waits: list[float]) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if waits:
            self._timer = asyncio.get_running_loop().call_later(max(0.0, min(waits)), self._dispatch)


def _execute(
    servable: Any, signature_name: str, batch: list[_Task], parameters: BatchingParameters | None
) -> list[dict[str, np.ndarray] | BaseException]:
    """Runs in a worker thread: merge, one model call, split. Never raises."""
    total = sum(task.weight for task in batch)
    padded = total
    if parameters is not None and parameters.allowed_batch_sizes and batch[0].merge_key is not None:
        padded = next((size for size in parameters.allowed_batch_sizes if size >= total), total)
    if len(batch) == 1 and padded == total:
        return [_run_one(servable, signature_name, batch[0].inputs)]
    names = sorted(batch[0].inputs)
    merged = {name: np.concatenate([task.inputs[name] for task in batch]) for name in names}
    if padded > total:
        # Pad with copies of the first row, as TF Serving does, so the model sees few shapes.
        merged = {
            name: np.concatenate([array, np.repeat(array[:1], padded - total, axis=0)])
            for name, array in merged.items()
        }
    try:
        outputs = servable.run(signature_name, merged)
    except Exception:
        # One bad request must not fail its neighbours: rerun each alone for its own answer.
        return [_run_one(servable, signature_name, task.inputs) for task in batch]
    if any(np.ndim(value) == 0 or value.shape[0] != padded for value in outputs.values()):
        # An output without a batch dimension cannot be split; answer each request alone.
        return [_run_one(servable, signature_name, task.inputs) for task in batch]
    results: list[dict[str, np.ndarray] | BaseException] = []
    offset = 0
    for task in batch:
        results.append({name: value[offset : offset + task.weight] for name, value in outputs.items()})
        offset += task.weight
    return results


def _run_one(
    servable: Any, signature_name: str, inputs: dict[str, np.ndarray]
) -> dict[str, np.ndarray] | BaseException:
    try:
        outputs: dict[str, np.ndarray] = servable.run(signature_name, inputs)
        return outputs
    except Exception as error:
        return error
