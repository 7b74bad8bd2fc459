"""Local multi-worker launcher: start N workers with TF_CONFIG on free 127.0.0.1 ports.

Every worker's output is streamed with a `[worker i]` prefix. The launcher never hangs silently:
when a worker dies the others are stopped at once (they would otherwise wait in a collective
forever) and the error names the worker, its exit code and its last lines; when the whole run
exceeds `timeout` seconds every worker is stopped and the error says so. Collectives inside the
workers get the same timeout (TFPILOT_COLLECTIVE_TIMEOUT_S, read by make_strategy), so a hung
all-reduce fails in the worker too. SIGTERM/SIGINT to the launcher is forwarded to every worker,
which checkpoint and exit (preemption); rerun with `--resume` to continue.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

from tfpilot.errors import TrainError

__all__ = [
    "LaunchResult",
    "free_ports",
    "cluster_spec",
    "launch_workers",
    "launch_parameter_server",
    "WORKER_DIR_ENV",
    "COLLECTIVE_TIMEOUT_ENV",
]

WORKER_DIR_ENV = "TFPILOT_WORKER_DIR"
COLLECTIVE_TIMEOUT_ENV = "TFPILOT_COLLECTIVE_TIMEOUT_S"
PREEMPTED_EXIT_CODE = 42
_TAIL_LINES = 15


@dataclasses.dataclass
class LaunchResult:
    exit_codes: list[int]
    preempted: bool
    seconds: float


def free_ports(count: int) -> list[int]:
    """Ports the OS reports free on 127.0.0.1 (all sockets held open together so they differ)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def cluster_spec(num_workers: int) -> dict[str, list[str]]:
    return {"worker": [f"127.0.0.1:{port}" for port in free_ports(num_workers)]}


class _Worker:
    def __init__(
        self, index: int, process: subprocess.Popen, echo: Callable[[str], None], *, label: str | None = None
    ) -> None:
        self.index = index
        self.label = label or f"worker {index}"
        self.process = process
        self.tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self.last_output = time.monotonic()
        self.thread = threading.Thread(target=self._pump, args=(echo,), daemon=True)
        self.thread.start()

    def _pump(self, echo: Callable[[str], None]) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            line = line.rstrip("\n")
            self.tail.append(line)
            self.last_output = time.monotonic()
            echo(f"[{self.label}] {line}")


def _last_activity(worker: _Worker) -> str:
    """What a worker was last seen doing: its last non-empty output line and how long ago."""
    lines = [line for line in worker.tail if line.strip()]
    last = lines[-1].strip() if lines else "(no output yet)"
    return f"{worker.label}: `{last}` ({time.monotonic() - worker.last_output:.0f}s ago)"


def _stop(workers: list[_Worker], *, grace: float) -> None:
    for worker in workers:
        if worker.process.poll() is None:
            worker.process.terminate()
    deadline = time.monotonic() + grace
    for worker in workers:
        try:
            worker.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            worker.process.kill()
            worker.process.wait()


def launch_workers(
    command: Sequence[str],
    *,
    num_workers: int,
    timeout: float | None = None,
    worker_dir: str | None = None,
    echo: Callable[[str], None] = print,
    poll_seconds: float = 0.2,
) -> LaunchResult:
    """Run `command` once per worker with its TF_CONFIG; return when all exit 0 or raise TrainError."""
    if num_workers < 1:
        raise TrainError(f"--workers must be >= 1, got {num_workers}", exit_code=2)
    if not command:
        raise TrainError(
            "no worker command given; expected `tfpilot launch --workers N -- tfpilot train CONFIG`", exit_code=2
        )
    cluster = cluster_spec(num_workers)
    started = time.monotonic()
    workers: list[_Worker] = []
    forwarded = {"signal": None}

    def forward(signum, frame) -> None:
        forwarded["signal"] = signum
        for worker in workers:
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGTERM)

    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for index in range(num_workers):
            env = {
                **os.environ,
                "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}),
                "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"),
                "PYTHONUNBUFFERED": "1",
            }
            if timeout:
                env[COLLECTIVE_TIMEOUT_ENV] = str(timeout)
            if worker_dir:
                env[WORKER_DIR_ENV] = os.path.join(worker_dir, f"worker-{index}")
            try:
                process = subprocess.Popen(
                    list(command), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
                )
            except OSError as exc:
                _stop(workers, grace=5)
                raise TrainError(
                    f"cannot start worker command `{command[0]}` ({exc}); expected an executable such as `tfpilot`",
                    exit_code=2,
                ) from None
            workers.append(_Worker(index, process, echo))
        while True:
            codes = [w.process.poll() for w in workers]
            failed = [w for w, code in zip(workers, codes, strict=False) if code not in (None, 0)]
            if forwarded["signal"] is not None and all(code is not None for code in codes):
                break
            if failed and forwarded["signal"] is None:
                worker = failed[0]
                # Snapshot the others before stopping them: they are usually waiting in a collective.
                others = "; ".join(_last_activity(w) for w in workers if w is not worker and w.process.poll() is None)
                _stop(workers, grace=10)
                worker.thread.join(timeout=2)
                tail = " | ".join(list(worker.tail)[-5:])
                raise TrainError(
                    f"worker {worker.index} exited with code {worker.process.returncode}; stopped the other "
                    f"{num_workers - 1} worker(s). Last lines: {tail or '(no output)'}"
                    + (f". The others were last at: {others}" if others else "")
                )
            if all(code == 0 for code in codes):
                break
            if timeout and time.monotonic() - started > timeout:
                running = [w for w, code in zip(workers, codes, strict=False) if code is None]
                activity = "; ".join(_last_activity(w) for w in running)
                _stop(workers, grace=10)
                raise TrainError(
                    f"workers {[w.index for w in running]} still running after --timeout {timeout:g}s (a hung "
                    f"collective or a stuck worker); stopped all workers. Last activity: {activity}. "
                    "Raise --timeout if the run is just long"
                )
            time.sleep(poll_seconds)
        for worker in workers:
            worker.thread.join(timeout=5)
    finally:
        _stop(workers, grace=30)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    # Every worker has exited here (the loop waits for all of them, _stop waits or kills).
    exit_codes = [w.process.wait() for w in workers]
    preempted = forwarded["signal"] is not None
    if preempted and any(code not in (0, PREEMPTED_EXIT_CODE) for code in exit_codes):
        raise TrainError(
            f"after SIGTERM the workers exited with codes {exit_codes}; expected {PREEMPTED_EXIT_CODE} (checkpoint saved)"
        )
    return LaunchResult(exit_codes=exit_codes, preempted=preempted, seconds=time.monotonic() - started)


def launch_parameter_server(
    command: Sequence[str],
    *,
    num_workers: int,
    num_ps: int,
    timeout: float | None = None,
    echo: Callable[[str], None] = print,
    poll_seconds: float = 0.2,
) -> LaunchResult:
    """ParameterServerStrategy cluster: M `ps` and N `worker` servers plus the chief running `command`.

    The servers (`python -m tfpilot.train.ps_server`) run no training code and never exit by
    themselves, so the run is over when the chief exits: 0 stops the servers and succeeds, anything
    else (or a server dying first, or the timeout) stops everything and raises TrainError.
    """
    import sys

    if num_workers < 1 or num_ps < 1:
        raise TrainError(
            f"parameter-server training needs --workers >= 1 and --ps >= 1, got {num_workers} and {num_ps}", exit_code=2
        )
    if not command:
        raise TrainError(
            "no chief command given; expected `tfpilot launch --workers N --ps M -- tfpilot train CONFIG`", exit_code=2
        )
    ports = free_ports(1 + num_workers + num_ps)
    cluster = {
        "chief": [f"127.0.0.1:{ports[0]}"],
        "worker": [f"127.0.0.1:{p}" for p in ports[1 : 1 + num_workers]],
        "ps": [f"127.0.0.1:{p}" for p in ports[1 + num_workers :]],
    }
    started = time.monotonic()
    servers: list[_Worker] = []
    chief: _Worker | None = None
    forwarded = {"signal": None}

    def forward(signum, frame) -> None:
        forwarded["signal"] = signum
        if chief is not None and chief.process.poll() is None:
            chief.process.send_signal(signal.SIGTERM)

    def start(argv: Sequence[str], kind: str, index: int) -> _Worker:
        env = {
            **os.environ,
            "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": kind, "index": index}}),
            "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"),
            "PYTHONUNBUFFERED": "1",
        }
        try:
            process = subprocess.Popen(
                list(argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
            )
        except OSError as exc:
            raise TrainError(
                f"cannot start {kind} command `{argv[0]}` ({exc}); expected an executable such as `tfpilot`",
                exit_code=2,
            ) from None
        return _Worker(index, process, echo, label=kind if kind == "chief" else f"{kind} {index}")

    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    server_command = [sys.executable, "-m", "tfpilot.train.ps_server"]
    try:
        for index in range(num_ps):
            servers.append(start(server_command, "ps", index))
        for index in range(num_workers):
            servers.append(start(server_command, "worker", index))
        chief = start(command, "chief", 0)
        while True:
            code = chief.process.poll()
            if code is not None:
                break
            dead = [s for s in servers if s.process.poll() is not None]
            if dead and forwarded["signal"] is None:
                server = dead[0]
                _stop([chief, *servers], grace=10)
                server.thread.join(timeout=2)
                tail = " | ".join(list(server.tail)[-5:])
                raise TrainError(
                    f"{server.label} exited with code {server.process.returncode} before the chief finished; stopped "
                    f"the cluster. Last lines: {tail or '(no output)'}"
                )
            if timeout and time.monotonic() - started > timeout:
                _stop([chief, *servers], grace=10)
                raise TrainError(
                    f"the chief was still running after --timeout {timeout:g}s; stopped the cluster. "
                    "Raise --timeout if the run is just long"
                )
            time.sleep(poll_seconds)
        chief.thread.join(timeout=5)
    finally:
        _stop([s for s in ([chief] if chief else []) + servers], grace=10)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    preempted = forwarded["signal"] is not None
    if chief.process.returncode != 0 and not preempted:
        tail = " | ".join(list(chief.tail)[-5:])
        raise TrainError(
            f"the chief exited with code {chief.process.returncode}; stopped the cluster. Last lines: {tail or '(no output)'}"
        )
    return LaunchResult(exit_codes=[chief.process.wait()], preempted=preempted, seconds=time.monotonic() - started)
