"""Wiring: registry + batcher + request log + metrics behind REST and gRPC on one event loop.

``ModelServer.start()`` loads every model once (so the server answers as soon as it is up),
then runs the event loop in a background thread and polls the base paths in another. It is
what ``tfpilot serve`` runs and what tests and benchmarks start on port 0.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import math
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfpilot.errors import ServeError
from tfpilot.serve.batching import Batcher
from tfpilot.serve.metrics import MetricsRegistry, ServerMetrics
from tfpilot.serve.model_config import BatchingParameters, ServedModel, load_model_config_file
from tfpilot.serve.registry import ModelRegistry
from tfpilot.serve.request_log import RequestLog
from tfpilot.serve.servable import load_servable
from tfpilot.serve.transport import ConcurrencyLimit, TlsConfig, grpc_limit_interceptor

__all__ = ["ServerOptions", "ModelServer", "DEFAULT_MAX_REQUEST_BYTES"]

if TYPE_CHECKING:
    from tfpilot.serve.rest_fast import FastRestServer

_log = logging.getLogger("tfpilot.serve")
DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024


@dataclasses.dataclass
class ServerOptions:
    """Everything `tfpilot serve` accepts; port None disables that API, 0 picks a free port."""

    models: list[ServedModel]
    host: str = "127.0.0.1"
    grpc_port: int | None = 8500
    rest_port: int | None = 8501
    file_system_poll_wait_seconds: float = 1.0
    model_config_file: Path | None = None
    model_config_file_poll_wait_seconds: float = 0.0
    batching: BatchingParameters | None = None
    rest_api_timeout_in_ms: int = 30_000
    enable_model_warmup: bool = True
    # TF Serving's default: classify/regress run on any signature with the right inputs and outputs,
    # whatever its method name (TF2 SavedModels carry the predict method name on every signature).
    enable_signature_method_name_check: bool = False
    # grpc.health.v1.Health on the gRPC port (TF Serving's --enable_grpc_healthcheck_service).
    enable_grpc_healthcheck_service: bool = False
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    request_log_path: Path | None = None
    request_log_sample_rate: float = 1.0
    request_log_max_rows: int = 100_000
    grpc_socket_path: Path | None = None
    # Where Prometheus scrapes (REST port); None serves no metrics (a monitoring config with
    # `enable: false`). TF Serving needs --monitoring_config_file for any; tfpilot defaults on.
    metrics_path: str | None = "/monitoring/prometheus/metrics"
    enable_profiler: bool = True
    warmup_iterations: int = 1  # --num_request_iterations_for_warmup
    saved_model_tags: tuple[str, ...] = ("serve",)
    cors: bool = False  # --rest_api_enable_cors_support
    # --ssl_config_file: TLS on the gRPC port and socket (as TF Serving) and on the REST port.
    tls: TlsConfig | None = None
    # --grpc_channel_arguments, applied after tfpilot's own options so they win.
    grpc_channel_arguments: tuple[tuple[str, int | str], ...] = ()
    grpc_max_threads: int = 0  # most gRPC calls handled at once (0 = no bound)
    rest_api_num_threads: int = 0  # most REST requests handled at once (0 = no bound)
    # TF Serving's defaults: a failed load is retried 5 times, a minute apart, then it is END.
    max_num_load_retries: int = 5
    load_retry_interval_micros: int = 60_000_000
    num_load_threads: int = 0  # 0: versions load one after another in the polling thread
    allow_version_labels_for_unavailable_models: bool = False

    def __post_init__(self) -> None:
        if self.max_request_bytes < 1:
            raise ServeError(f"--max_request_bytes must be >= 1, got {self.max_request_bytes}")
        if self.rest_api_timeout_in_ms < 1:
            raise ServeError(f"--rest_api_timeout_in_ms must be >= 1, got {self.rest_api_timeout_in_ms}")
        for name, port in (("--port", self.grpc_port), ("--rest_api_port", self.rest_port)):
            if port is not None and not 0 <= port <= 65535:
                raise ServeError(f"{name} must be within 0..65535 (0 picks a free port), got {port}")
        if self.warmup_iterations < 1:
            raise ServeError(f"--num_request_iterations_for_warmup must be >= 1, got {self.warmup_iterations}")
        if not self.saved_model_tags or not all(self.saved_model_tags):
            raise ServeError("--saved_model_tags must name at least one tag, e.g. `serve` or `serve,gpu`")
        if self.metrics_path is not None and not self.metrics_path.startswith("/"):
            raise ServeError(f"the metrics path must start with `/`, got `{self.metrics_path}`")
        if self.grpc_port is None and self.rest_port is None:
            raise ServeError("both the REST and the gRPC API are disabled; enable at least one port")
        for flag, count in (
            ("--grpc_max_threads", self.grpc_max_threads),
            ("--rest_api_num_threads", self.rest_api_num_threads),
            ("--max_num_load_retries", self.max_num_load_retries),
            ("--num_load_threads", self.num_load_threads),
        ):
            if count < 0:
                raise ServeError(f"{flag} must be >= 0, got {count}")
        if self.file_system_poll_wait_seconds < 0:
            # TF Serving reserves negative values for its own tests: the server never polls and
            # waits forever for a model that cannot arrive. Refusing says so instead of hanging.
            raise ServeError(
                f"--file_system_poll_wait_seconds must be >= 0 (0 loads once, without polling), "
                f"got {self.file_system_poll_wait_seconds}"
            )


def new_event_loop() -> asyncio.AbstractEventLoop:
    """The serving loop: uvloop's when it is installed, asyncio's otherwise.

    Every request's HTTP/2 or HTTP/1.1 work, decoding and response runs on this one loop, and
    uvloop's C loop and transports cost about a fifth less CPU per request (aiohttp and grpc.aio
    both run on it); on a machine where the server shares the cores with the model, that CPU
    is throughput.
    """
    try:
        import uvloop
    except ImportError:  # pragma: no cover - depends on the environment
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _bind(host: str, port: int, *, what: str) -> socket.socket:
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
        sock.setblocking(False)
    except OSError as error:
        raise ServeError(
            f"cannot bind the {what} port {port} on {host}: {error.strerror}; choose another port"
        ) from None
    return sock


class ModelServer:
    def __init__(self, options: ServerOptions, *, metrics: MetricsRegistry | None = None) -> None:
        self.options = options
        self.metrics = metrics or MetricsRegistry()
        self.server_metrics = ServerMetrics(self.metrics)
        self.registry = ModelRegistry(
            options.models,
            enable_warmup=options.enable_model_warmup,
            warmup_iterations=options.warmup_iterations,
            loader=functools.partial(load_servable, tags=options.saved_model_tags),
            on_load=lambda path, ok, seconds: self.server_metrics.observe_load(path=str(path), ok=ok, seconds=seconds),
            max_num_load_retries=options.max_num_load_retries,
            load_retry_interval_seconds=max(options.load_retry_interval_micros, 0) / 1e6,
            num_load_threads=options.num_load_threads,
            allow_version_labels_for_unavailable_models=options.allow_version_labels_for_unavailable_models,
        )
        self.rest_limit = ConcurrencyLimit(options.rest_api_num_threads) if options.rest_api_num_threads else None
        self.grpc_limit = ConcurrencyLimit(options.grpc_max_threads) if options.grpc_max_threads else None
        self.request_log: RequestLog | None = None
        self.rest_port: int | None = None
        self.fast_rest: FastRestServer | None = None  # the REST port's lean front (None with TLS)
        self.grpc_port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._poll_thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._started = False
        self._batcher: Batcher | None = None
        self._shutdown: Any = None
        self._config_mtime: float | None = None

    # ------------------------------------------------------------------------- public

    @property
    def rest_url(self) -> str:
        host = self.options.host if ":" not in self.options.host else f"[{self.options.host}]"
        scheme = "https" if self.options.tls is not None else "http"
        return f"{scheme}://{host}:{self.rest_port}"

    @property
    def grpc_target(self) -> str:
        host = self.options.host if ":" not in self.options.host else f"[{self.options.host}]"
        return f"{host}:{self.grpc_port}"

    def start(self) -> ModelServer:
        if self._started:
            return self
        options = self.options
        if options.model_config_file is not None and options.model_config_file.exists():
            self._config_mtime = options.model_config_file.stat().st_mtime
        # Bind first so a busy port fails in a second, not after every model has loaded.
        rest_socket = _bind(options.host, options.rest_port, what="REST") if options.rest_port is not None else None
        try:
            if options.request_log_path is not None:
                self.request_log = RequestLog(
                    options.request_log_path,
                    sample_rate=options.request_log_sample_rate,
                    max_rows=options.request_log_max_rows,
                )
            self.registry.poll()  # initial load: requests are answered from the first moment
            # Labels are checked once the first versions are in: TF Serving checks them before any
            # load, which refuses every label at startup without the flag; tfpilot accepts labels
            # that point at a version that loaded (a deliberate, documented difference).
            self.registry.check_version_labels()
        except BaseException:
            if rest_socket is not None:
                rest_socket.close()
            self.registry.unload_all()
            raise
        self._register_gauges()
        ready = threading.Event()
        failure: list[BaseException] = []

        def run_loop() -> None:
            loop = new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self._shutdown = loop.run_until_complete(self._start_async(rest_socket))
            except BaseException as error:
                failure.append(error)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self._shutdown())
                loop.close()
                self._stopped.set()

        self._loop_thread = threading.Thread(target=run_loop, name="tfpilot-serve-loop", daemon=True)
        self._loop_thread.start()
        ready.wait()
        if failure:
            if rest_socket is not None:
                rest_socket.close()
            if self.request_log is not None:
                self.request_log.close()
            error = failure[0]
            raise error if isinstance(error, ServeError) else ServeError(f"server failed to start: {error}")
        if (
            options.file_system_poll_wait_seconds > 0
            or (options.model_config_file is not None and options.model_config_file_poll_wait_seconds > 0)
            or self.registry.next_retry_in() is not None
        ):
            self._poll_thread = threading.Thread(target=self._poll_loop, name="tfpilot-serve-poll", daemon=True)
            self._poll_thread.start()
        self._started = True
        return self

    def stop(self) -> None:
        if not self._started or self._stopping.is_set():
            return
        self._stopping.set()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._loop_thread is not None:
            self._loop_thread.join(timeout=30)
        if self._poll_thread is not None:
            self._poll_thread.join(timeout=30)
        if self._batcher is not None:
            self._batcher.close()
        if self.request_log is not None:
            self.request_log.close()
        self.registry.unload_all()

    def wait(self) -> None:
        """Block until ``stop()`` is called (from a signal handler, say)."""
        while not self._stopped.wait(0.5):
            pass

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------------- internals

    def _register_gauges(self) -> None:
        def queue_depth() -> dict[tuple[str, ...], float]:
            depth = self._batcher.queue_depth() if self._batcher else {}
            return {(name,): float(depth.get(name, 0)) for name in self.registry.model_names()}

        def version_states() -> dict[tuple[str, ...], float]:
            counts: dict[tuple[str, ...], float] = {}
            for name, statuses in self.registry.all_status().items():
                for status in statuses:
                    key = (name, status.state.name)
                    counts[key] = counts.get(key, 0.0) + 1
            return counts

        def log_dropped() -> float:
            return float(self.request_log.dropped) if self.request_log else 0.0

        self.metrics.register_gauge(
            "tfpilot_serve_queue_depth", "Rows waiting for a model call.", queue_depth, labelnames=("model",)
        )
        self.metrics.register_gauge(
            "tfpilot_serve_model_versions", "Model versions by state.", version_states, labelnames=("model", "state")
        )
        self.metrics.register_gauge(
            "tfpilot_serve_request_log_dropped", "Request-log records dropped (queue full or unwritable).", log_dropped
        )

    async def _start_async(self, rest_socket: socket.socket | None) -> Any:
        from aiohttp import web

        from tfpilot.serve.rest import build_rest_server
        from tfpilot.serve.rest_fast import FastRestServer
        from tfpilot.serve.service import InferenceService

        options = self.options
        self._batcher = Batcher(options.batching, on_batch=self.server_metrics.observe_batch)
        service = InferenceService(
            registry=self.registry,
            batcher=self._batcher,
            metrics=self.server_metrics,
            request_log=self.request_log,
            method_name_check=options.enable_signature_method_name_check,
        )
        runner = None
        grpc_server = None
        fast_rest: FastRestServer | None = None
        fast_listener: asyncio.AbstractServer | None = None
        if rest_socket is not None:
            rest_server, inference_body = build_rest_server(
                service,
                limit=self.rest_limit,
                metrics=self.metrics,
                metrics_path=options.metrics_path,
                cors=options.cors,
                max_request_bytes=options.max_request_bytes,
                timeout_seconds=options.rest_api_timeout_in_ms / 1000.0,
            )
            runner = web.ServerRunner(rest_server, handle_signals=False, shutdown_timeout=10.0)
            await runner.setup()
            if options.tls is not None:
                await web.SockSite(runner, rest_socket, ssl_context=options.tls.ssl_context()).start()
            else:
                # Plain HTTP: inference POSTs take the lean front, the rest goes to aiohttp.
                fast_rest = FastRestServer(inference_body, rest_server, max_body=options.max_request_bytes)
                fast_listener = await asyncio.get_running_loop().create_server(fast_rest, sock=rest_socket)
                self.fast_rest = fast_rest
            self.rest_port = rest_socket.getsockname()[1]

        async def close_rest() -> None:  # the gRPC port could not be bound: give the REST port back
            if fast_listener is not None:
                fast_listener.close()
            if runner is not None:
                await runner.cleanup()

        if options.grpc_port is not None:
            import grpc

            from tfpilot.serve.grpc import add_servicers

            # A dict, so --grpc_channel_arguments replace tfpilot's defaults instead of
            # depending on which duplicate gRPC core happens to read.
            channel_options: dict[str, int | str] = {
                "grpc.max_receive_message_length": options.max_request_bytes,
                "grpc.max_send_message_length": -1,
                "grpc.so_reuseport": 0,
            }
            channel_options.update(options.grpc_channel_arguments)
            grpc_server = grpc.aio.server(
                options=list(channel_options.items()),
                interceptors=[grpc_limit_interceptor(self.grpc_limit)] if self.grpc_limit is not None else None,
            )
            add_servicers(
                grpc_server,
                service,
                profiler=options.enable_profiler,
                health=options.enable_grpc_healthcheck_service,
            )
            host = options.host if ":" not in options.host else f"[{options.host}]"
            credentials = options.tls.grpc_credentials() if options.tls is not None else None

            def add_port(address: str) -> int:
                if credentials is not None:
                    return int(grpc_server.add_secure_port(address, credentials))
                return int(grpc_server.add_insecure_port(address))

            try:
                port = add_port(f"{host}:{options.grpc_port}")
            except RuntimeError:
                port = 0
            if port == 0:
                await close_rest()
                raise ServeError(
                    f"cannot bind the gRPC port {options.grpc_port} on {options.host}; choose another --port"
                )
            if options.grpc_socket_path is not None:
                # TF Serving's --grpc_socket_path: the same services on a Unix socket beside the TCP port.
                if add_port(f"unix:{options.grpc_socket_path}") == 0:
                    await close_rest()
                    raise ServeError(
                        f"cannot bind the gRPC Unix socket {options.grpc_socket_path}; check the directory exists"
                    )
            await grpc_server.start()
            self.grpc_port = port

        async def shutdown() -> None:
            # Stop accepting, let requests already accepted finish, then let the model
            # threads finish while the loop can still deliver their results.
            if grpc_server is not None:
                await grpc_server.stop(grace=2.0)
            if fast_listener is not None:
                fast_listener.close()  # stop accepting; its connections are closed below
            if runner is not None:
                await runner.cleanup()
            if fast_rest is not None:
                await fast_rest.shutdown(timeout=10.0)
            assert self._batcher is not None
            await self._batcher.drain(timeout=10.0)

        return shutdown

    def _poll_loop(self) -> None:
        """File-system polls, config re-reads and load retries, each on its own schedule.

        With both poll intervals 0 (TF Serving: poll exactly once) the thread exists only
        while a failed load waits for its retry, and those polls revisit only versions already
        seen, so "load once" still never discovers a new version.
        """
        options = self.options
        fs_wait = options.file_system_poll_wait_seconds
        config_wait = options.model_config_file_poll_wait_seconds if options.model_config_file is not None else 0.0
        now = time.monotonic()
        next_fs = now + fs_wait if fs_wait > 0 else math.inf
        next_config = now + config_wait if config_wait > 0 else math.inf
        while True:
            retry_in = self.registry.next_retry_in()
            next_retry = time.monotonic() + retry_in if retry_in is not None else math.inf
            wake = min(next_fs, next_config, next_retry)
            if wake == math.inf:
                return  # loaded once, nothing left to retry
            if self._stopping.wait(max(0.0, wake - time.monotonic())):
                return
            now = time.monotonic()
            full = False
            if now >= next_config:
                next_config = now + config_wait
                self._reload_config_file(options.model_config_file)  # type: ignore[arg-type]
                full = True  # a new model in the config loads even when the base paths are not polled
            if now >= next_fs:
                next_fs = now + fs_wait
                full = True
            self.registry.poll(known_versions_only=not full)

    def _reload_config_file(self, path: Path) -> None:
        try:
            mtime = path.stat().st_mtime
            if mtime == self._config_mtime:
                return
            models = load_model_config_file(path)
            self.registry.set_models(models)
            self._config_mtime = mtime
            _log.info("reloaded model config %s: %s", path, ", ".join(m.name for m in models))
        except Exception as error:  # a bad edit keeps the current config serving
            _log.warning("model config %s not reloaded: %s", path, error)
