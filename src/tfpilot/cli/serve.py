"""`tfpilot serve`: a TF-Serving-compatible REST + gRPC model server, with its flag names.

    tfpilot serve --model_name half --model_base_path /models/half --rest_api_port 8501 --port 8500

Flags follow tensorflow_model_server (underscores, `--flag=value`, `--enable_batching=true`
and `--noenable_batching` all work), so existing launch scripts keep working.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand

__all__ = ["register"]

_BOOLEAN_FLAGS = (
    "enable_batching",
    "enable_model_warmup",
    "enable_signature_method_name_check",
    "enable_profiler",
    "rest_api_enable_cors_support",
    "allow_version_labels_for_unavailable_models",
    "enable_grpc_healthcheck_service",
)
_TRUE = {"true", "1", "yes", "t", "y"}
_FALSE = {"false", "0", "no", "f", "n"}


class _AbslStyleCommand(TyperCommand):
    """Accepts absl's ``--flag=true|false`` spelling of boolean flags, as TF Serving does."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        import sys

        from tfpilot.serve.tf_serving_flags import strip_accepted_flags

        args, notices = strip_accepted_flags(list(args))
        for notice in notices:
            print(notice, file=sys.stderr)
        rewritten = []
        for arg in args:
            name, _, value = arg.partition("=")
            if value and name.lstrip("-") in _BOOLEAN_FLAGS and name.startswith("--"):
                lowered = value.lower()
                if lowered in _TRUE:
                    arg = name
                elif lowered in _FALSE:
                    arg = "--no" + name[2:]
            rewritten.append(arg)
        return super().parse_args(ctx, rewritten)


def _set_parallelism(*, intra: int, inter: int) -> None:
    """TF Serving's thread flags, applied before any model loads (TensorFlow fixes them at its first op)."""
    from tfpilot.errors import ServeError

    if intra < 0 or inter < 0:
        raise ServeError(f"thread counts must be >= 0 (0 = TensorFlow decides), got intra {intra}, inter {inter}")
    if not intra and not inter:
        return
    import tensorflow as tf

    try:
        if intra:
            tf.config.threading.set_intra_op_parallelism_threads(intra)
        if inter:
            tf.config.threading.set_inter_op_parallelism_threads(inter)
    except RuntimeError as error:
        raise ServeError(f"cannot set TensorFlow's thread pools ({error}); pass the flags at server start") from None


def _rest_port(value: str) -> int | None:
    """TF Serving's meaning (0 or less: no REST server) plus `auto` for a free port."""
    from tfpilot.errors import ServeError

    if value.strip().lower() == "auto":
        return 0
    try:
        number = int(value)
    except ValueError:
        raise ServeError(
            f"--rest_api_port must be a port number, 0 to disable REST, or `auto` for a free port; got `{value}`"
        ) from None
    if number > 65535:
        raise ServeError(f"--rest_api_port must be at most 65535, got {number}")
    return None if number <= 0 else number


def register(app: typer.Typer) -> None:
    @app.command("serve", cls=_AbslStyleCommand)
    def serve(
        port: int = typer.Option(8500, "--port", help="gRPC port (0 picks a free port, -1 disables gRPC)."),
        rest_api_port: str = typer.Option(
            "8501",
            "--rest_api_port",
            help="REST port; 0 disables REST, as in TF Serving; `auto` picks a free port (printed at start).",
        ),
        host: str = typer.Option(
            "127.0.0.1", "--host", help="Address to bind; 0.0.0.0 exposes the server to the network."
        ),
        model_name: str = typer.Option("default", "--model_name", help="Name of the model (with --model_base_path)."),
        model_base_path: Path = typer.Option(
            None, "--model_base_path", help="Directory of numeric version subdirectories, e.g. runs/<name>/model."
        ),
        model_config_file: Path = typer.Option(
            None, "--model_config_file", help="Text-proto model_config_list: several models, version policies, labels."
        ),
        model_config_file_poll_wait_seconds: float = typer.Option(
            0.0, "--model_config_file_poll_wait_seconds", help="Re-read --model_config_file this often (0 = never)."
        ),
        file_system_poll_wait_seconds: float = typer.Option(
            1.0, "--file_system_poll_wait_seconds", help="Poll base paths for new versions this often (0 = load once)."
        ),
        enable_batching: bool = typer.Option(
            False, "--enable_batching/--noenable_batching", help="Merge concurrent requests into one model call."
        ),
        batching_parameters_file: Path = typer.Option(
            None, "--batching_parameters_file", help="Text-proto BatchingParameters (implies --enable_batching)."
        ),
        rest_api_timeout_in_ms: int = typer.Option(
            30000, "--rest_api_timeout_in_ms", help="Per-request deadline for REST calls; later answers are 504."
        ),
        enable_signature_method_name_check: bool = typer.Option(
            False,
            "--enable_signature_method_name_check/--noenable_signature_method_name_check",
            help="Refuse classify/regress on signatures whose method name says otherwise (TF Serving: off).",
        ),
        enable_grpc_healthcheck_service: bool = typer.Option(
            False,
            "--enable_grpc_healthcheck_service/--noenable_grpc_healthcheck_service",
            help="Serve grpc.health.v1.Health on the gRPC port: SERVING once every model has a version available.",
        ),
        enable_model_warmup: bool = typer.Option(
            True,
            "--enable_model_warmup/--noenable_model_warmup",
            help="Replay assets.extra/tf_serving_warmup_requests before a version takes traffic.",
        ),
        max_request_bytes: int = typer.Option(
            64 * 1024 * 1024, "--max_request_bytes", help="Largest request body accepted (REST 413 / gRPC beyond)."
        ),
        request_log: Path = typer.Option(
            None, "--request_log", help="SQLite file for sampled requests and responses (drift monitoring)."
        ),
        request_log_sample_rate: float = typer.Option(
            1.0, "--request_log_sample_rate", help="Fraction of requests written to --request_log."
        ),
        request_log_max_rows: int = typer.Option(
            100_000, "--request_log_max_rows", help="Rows kept in --request_log; the oldest rotate out."
        ),
        reference_stats: Path = typer.Option(
            None,
            "--reference_stats",
            help="Training run (or its reference_stats.json): expose drift of the logged traffic on the metrics endpoint.",
        ),
        drift_window: int = typer.Option(
            1000, "--drift_window", help="Newest logged examples judged for drift (with --reference_stats)."
        ),
        grpc_socket_path: Path = typer.Option(
            None, "--grpc_socket_path", help="Also serve gRPC on this Unix socket (as TF Serving does)."
        ),
        monitoring_config_file: Path = typer.Option(
            None,
            "--monitoring_config_file",
            help="TF Serving's MonitoringConfig text proto: Prometheus on/off and its path (default: on, "
            "/monitoring/prometheus/metrics).",
        ),
        num_request_iterations_for_warmup: int = typer.Option(
            1, "--num_request_iterations_for_warmup", help="Times each warmup record is replayed."
        ),
        saved_model_tags: str = typer.Option(
            "serve", "--saved_model_tags", help="Comma-separated MetaGraph tags to load (TF Serving's default: serve)."
        ),
        rest_api_enable_cors_support: bool = typer.Option(
            False,
            "--rest_api_enable_cors_support/--norest_api_enable_cors_support",
            help="Send CORS headers and answer browser preflight requests on the REST port.",
        ),
        enable_profiler: bool = typer.Option(
            True, "--enable_profiler/--noenable_profiler", help="TensorFlow's ProfilerService on the gRPC port."
        ),
        tensorflow_session_parallelism: int = typer.Option(
            0, "--tensorflow_session_parallelism", help="Threads per op and across ops (0 = TensorFlow decides)."
        ),
        tensorflow_intra_op_parallelism: int = typer.Option(
            0, "--tensorflow_intra_op_parallelism", help="Threads inside one op (0 = TensorFlow decides)."
        ),
        tensorflow_inter_op_parallelism: int = typer.Option(
            0, "--tensorflow_inter_op_parallelism", help="Ops run in parallel (0 = TensorFlow decides)."
        ),
        ssl_config_file: Path = typer.Option(
            None,
            "--ssl_config_file",
            help="Text-proto tensorflow.serving.SSLConfig (server_key, server_cert, custom_ca, client_verify): "
            "TLS on the gRPC port and socket and on the REST port.",
        ),
        grpc_channel_arguments: str = typer.Option(
            "",
            "--grpc_channel_arguments",
            help="Comma-separated gRPC server arguments, e.g. grpc.max_connection_age_ms=2000 (integers as integers).",
        ),
        grpc_max_threads: int = typer.Option(
            0, "--grpc_max_threads", help="Most gRPC calls handled at once; the rest wait (0 = no bound)."
        ),
        rest_api_num_threads: int = typer.Option(
            0, "--rest_api_num_threads", help="Most REST requests handled at once; the rest wait (0 = no bound)."
        ),
        max_num_load_retries: int = typer.Option(
            5, "--max_num_load_retries", help="Retries of a failed load before its version is END (0 = one attempt)."
        ),
        load_retry_interval_micros: int = typer.Option(
            60_000_000, "--load_retry_interval_micros", help="Wait between load retries (negative = no wait)."
        ),
        num_load_threads: int = typer.Option(
            0, "--num_load_threads", help="Models loaded side by side (0 = one after another)."
        ),
        allow_version_labels_for_unavailable_models: bool = typer.Option(
            False,
            "--allow_version_labels_for_unavailable_models/--noallow_version_labels_for_unavailable_models",
            help="Let a new version label point at a version that is not loaded (yet).",
        ),
        version: bool = typer.Option(False, "--version", help="Print the server and TensorFlow versions and exit."),
    ) -> None:
        """Serve SavedModels over TF Serving's REST and gRPC APIs, with hot reload and batching."""
        import logging
        import signal
        import threading

        from tfpilot.cli.render import console
        from tfpilot.errors import ServeError
        from tfpilot.serve import (
            BatchingParameters,
            ModelServer,
            ServedModel,
            ServerOptions,
            load_batching_parameters_file,
            load_model_config_file,
        )
        from tfpilot.serve.model_config import load_monitoring_config_file
        from tfpilot.serve.transport import load_ssl_config_file, parse_grpc_channel_arguments

        if version:
            from importlib.metadata import version as package_version

            import tensorflow as tf

            # The two lines tensorflow_model_server --version prints, so scripts that parse them work.
            console.print(f"TensorFlow ModelServer: tfpilot-{package_version('tfpilot')}", highlight=False)
            console.print(f"TensorFlow Library: {tf.__version__}", highlight=False)
            return
        _set_parallelism(
            intra=tensorflow_intra_op_parallelism or tensorflow_session_parallelism,
            inter=tensorflow_inter_op_parallelism or tensorflow_session_parallelism,
        )
        if model_config_file is not None and model_base_path is not None:
            raise ServeError("pass either --model_config_file or --model_base_path, not both")
        if model_config_file is not None:
            models = load_model_config_file(model_config_file)
        elif model_base_path is not None:
            models = [ServedModel(name=model_name, base_path=model_base_path)]
        else:
            raise ServeError(
                "no model to serve; pass --model_base_path DIR (with --model_name NAME) or --model_config_file FILE"
            )
        batching = None
        if batching_parameters_file is not None:
            batching = load_batching_parameters_file(batching_parameters_file)
        elif enable_batching:
            batching = BatchingParameters()
        if not 0.0 <= request_log_sample_rate <= 1.0:
            raise ServeError(f"--request_log_sample_rate must be within [0, 1], got {request_log_sample_rate}")
        options = ServerOptions(
            models=models,
            host=host,
            grpc_port=None if port < 0 else port,
            rest_port=_rest_port(rest_api_port),
            file_system_poll_wait_seconds=file_system_poll_wait_seconds,
            model_config_file=model_config_file,
            model_config_file_poll_wait_seconds=model_config_file_poll_wait_seconds,
            batching=batching,
            rest_api_timeout_in_ms=rest_api_timeout_in_ms,
            enable_model_warmup=enable_model_warmup,
            enable_signature_method_name_check=enable_signature_method_name_check,
            enable_grpc_healthcheck_service=enable_grpc_healthcheck_service,
            max_request_bytes=max_request_bytes,
            request_log_path=request_log,
            request_log_sample_rate=request_log_sample_rate,
            request_log_max_rows=request_log_max_rows,
            grpc_socket_path=grpc_socket_path,
            metrics_path=(
                "/monitoring/prometheus/metrics"
                if monitoring_config_file is None
                else load_monitoring_config_file(monitoring_config_file)
            ),
            enable_profiler=enable_profiler,
            warmup_iterations=num_request_iterations_for_warmup,
            saved_model_tags=tuple(tag.strip() for tag in saved_model_tags.split(",")),
            cors=rest_api_enable_cors_support,
            tls=None if ssl_config_file is None else load_ssl_config_file(ssl_config_file),
            grpc_channel_arguments=parse_grpc_channel_arguments(grpc_channel_arguments),
            grpc_max_threads=grpc_max_threads,
            rest_api_num_threads=rest_api_num_threads,
            max_num_load_retries=max_num_load_retries,
            load_retry_interval_micros=load_retry_interval_micros,
            num_load_threads=num_load_threads,
            allow_version_labels_for_unavailable_models=allow_version_labels_for_unavailable_models,
        )
        drift = None
        if reference_stats is not None:
            # Checked before any model loads, so a wrong path fails in a second with one line.
            from tfpilot.monitor.drift import DriftThresholds, DriftWindow

            if request_log is None:
                raise ServeError(
                    "--reference_stats needs --request_log PATH: drift is computed from the logged requests"
                )
            if drift_window < 1:
                raise ServeError(f"--drift_window must be >= 1, got {drift_window}")
            thresholds = DriftThresholds()
            config_path = reference_stats / "config.yaml" if reference_stats.is_dir() else None
            if config_path is not None and config_path.is_file():
                from tfpilot.config import load_config

                thresholds = DriftThresholds.from_config(load_config(config_path).monitor)
            drift = DriftWindow(reference_stats, request_log, window=drift_window, thresholds=thresholds)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        server = ModelServer(options).start()
        if drift is not None:
            drift.register(server.metrics)
        try:
            for name, statuses in server.registry.all_status().items():
                states = ", ".join(f"v{s.version} {s.state.name}" for s in statuses) or "no versions yet"
                console.print(f"model [bold]{name}[/bold]: {states}", highlight=False, soft_wrap=True)
            if server.rest_port is not None:
                console.print(f"REST  {server.rest_url}/v1/models/{models[0].name}", highlight=False, soft_wrap=True)
            if server.grpc_port is not None:
                tls = " (TLS)" if options.tls is not None else ""
                console.print(f"gRPC  {server.grpc_target}{tls}", highlight=False, soft_wrap=True)
            if batching is not None:
                console.print(
                    f"batching: max_batch_size={batching.max_batch_size} "
                    f"batch_timeout_micros={batching.batch_timeout_micros} "
                    f"num_batch_threads={batching.num_batch_threads}",
                    highlight=False,
                    soft_wrap=True,
                )
            console.print("serving; Ctrl-C stops", highlight=False, soft_wrap=True)
            while not stop.wait(0.5):
                pass
        finally:
            server.stop()
