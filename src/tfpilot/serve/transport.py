"""How the servers are built: TLS, gRPC channel arguments and the request-concurrency limits.

These are tensorflow_model_server's construction flags (``--ssl_config_file``,
``--grpc_channel_arguments``, ``--grpc_max_threads``, ``--rest_api_num_threads``). They change
how a connection is accepted and how many requests run at once, never what a request means,
so they live apart from the request path in rest.py / grpc.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import ssl
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from tfpilot.errors import ServeError

__all__ = [
    "TlsConfig",
    "parse_ssl_config",
    "load_ssl_config_file",
    "parse_grpc_channel_arguments",
    "ConcurrencyLimit",
    "limit_handler",
    "grpc_limit_interceptor",
]

ChannelArgument = tuple[str, int | str]


@dataclasses.dataclass(frozen=True)
class TlsConfig:
    """TF Serving's tensorflow.serving.SSLConfig: PEM text, not file names."""

    server_key: str
    server_cert: str
    custom_ca: str = ""
    client_verify: bool = False

    def __repr__(self) -> str:  # never print the private key in a log or a traceback
        return f"TlsConfig(server_cert=<{len(self.server_cert)} chars>, custom_ca={bool(self.custom_ca)}, client_verify={self.client_verify})"

    def grpc_credentials(self) -> Any:
        """What TF Serving's BuildServerCredentials builds from the same four fields."""
        import grpc

        return grpc.ssl_server_credentials(
            [(self.server_key.encode("utf-8"), self.server_cert.encode("utf-8"))],
            root_certificates=self.custom_ca.encode("utf-8") if self.custom_ca else None,
            require_client_auth=self.client_verify,
        )

    def ssl_context(self) -> ssl.SSLContext:
        """The same certificate on the REST port (TF Serving's REST server has no TLS; tfpilot's does)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        # load_cert_chain reads only files: the PEM text goes through a private temporary
        # directory that is removed as soon as the context holds the key.
        with _pem_files(self.server_cert, self.server_key) as (cert_file, key_file):
            try:
                context.load_cert_chain(cert_file, key_file)
            except ssl.SSLError as error:
                raise ServeError(
                    f"--ssl_config_file: server_key and server_cert are not a matching PEM key and certificate ({error.reason})"
                ) from None
        if self.custom_ca:
            try:
                context.load_verify_locations(cadata=self.custom_ca)
            except ssl.SSLError as error:
                raise ServeError(f"--ssl_config_file: custom_ca is not a PEM certificate ({error.reason})") from None
        if self.client_verify:
            context.verify_mode = ssl.CERT_REQUIRED
        return context


@contextlib.contextmanager
def _pem_files(cert: str, key: str) -> Iterator[tuple[str, str]]:
    with tempfile.TemporaryDirectory(prefix="tfpilot-tls-") as directory:
        os.chmod(directory, 0o700)
        cert_file, key_file = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
        for path, text in ((cert_file, cert), (key_file, key)):
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(text)
        yield cert_file, key_file


def parse_ssl_config(text: str, *, source: str = "<ssl config>") -> TlsConfig:
    """``server_key: "-----BEGIN ..."  server_cert: "..."  custom_ca: "..."  client_verify: true``."""
    from google.protobuf import text_format

    from tfpilot.serve.proto_subset import message_classes

    classes = message_classes(
        "tfpilot/ssl_config_subset.proto",
        "tensorflow.serving",
        [
            (
                "SSLConfig",
                [
                    ("server_key", 1, "string", False, ""),
                    ("server_cert", 2, "string", False, ""),
                    ("custom_ca", 3, "string", False, ""),
                    ("client_verify", 4, "bool", False, ""),
                ],
            )
        ],
    )
    message = classes["SSLConfig"]()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as error:
        raise ServeError(
            f"{source}: Error parsing text-format tensorflow.serving.SSLConfig: {error} "
            '(expected `server_key: "-----BEGIN PRIVATE KEY-----\\n..." server_cert: "..."`)'
        ) from None
    missing = [name for name in ("server_key", "server_cert") if not getattr(message, name).strip()]
    if missing:
        raise ServeError(f"{source}: SSLConfig needs {' and '.join(missing)} (PEM text, not a file name)")
    for name in ("server_key", "server_cert", "custom_ca"):
        value = getattr(message, name)
        if value and "-----BEGIN" not in value:
            raise ServeError(
                f"{source}: SSLConfig.{name} must hold the PEM text itself (`-----BEGIN ...`), got {value[:40]!r}"
            )
    config = TlsConfig(message.server_key, message.server_cert, message.custom_ca, message.client_verify)
    config.ssl_context()  # a key that does not match its certificate fails here, at start, in one line
    return config


def load_ssl_config_file(path: str | Path) -> TlsConfig:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ServeError(f"cannot read --ssl_config_file {path}: {error}") from None
    return parse_ssl_config(text, source=str(path))


def parse_grpc_channel_arguments(text: str) -> tuple[ChannelArgument, ...]:
    """``grpc.max_connection_age_ms=2000,grpc.lb_policy_name=grpclb`` -> gRPC server options.

    As in TF Serving, a value that parses as a 32-bit integer is passed as one and anything
    else as a string; gRPC ignores keys it does not know.
    """
    arguments: list[ChannelArgument] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ServeError(
                f"--grpc_channel_arguments: `{item}` is not key=value; "
                "expected a comma-separated list such as grpc.max_connection_age_ms=2000,grpc.keepalive_time_ms=60000"
            )
        try:
            number = int(value)
        except ValueError:
            arguments.append((key, value))
            continue
        arguments.append((key, number) if -(2**31) <= number < 2**31 else (key, value))
    return tuple(arguments)


_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")


class ConcurrencyLimit:
    """At most ``limit`` requests run at once; the rest wait their turn (they are not refused).

    TF Serving bounds its REST server by its number of HTTP threads (--rest_api_num_threads)
    and its gRPC server by a thread quota (--grpc_max_threads). tfpilot's servers run on one
    event loop, so the same bound is a semaphore. ``waiting``, ``running`` and ``peak`` are
    observable so tests and metrics can see the bound hold.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a concurrency limit must be >= 1, got {limit}")
        self.limit = limit
        self.running = 0
        self.waiting = 0
        self.peak = 0  # most requests seen running at once
        self._semaphore: asyncio.Semaphore | None = None

    @contextlib.asynccontextmanager
    async def slot(self) -> Any:
        if self._semaphore is None:  # created on the serving loop, where it is awaited
            self._semaphore = asyncio.Semaphore(self.limit)
        self.waiting += 1
        try:
            await self._semaphore.acquire()
        finally:
            self.waiting -= 1
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            yield
        finally:
            self.running -= 1
            self._semaphore.release()


def limit_handler(
    handler: Callable[_Params, Awaitable[_Result]], limit: ConcurrencyLimit | None
) -> Callable[_Params, Awaitable[_Result]]:
    """A request handler (aiohttp's, or the lean REST front's) that runs inside ``limit``
    (unchanged when there is no limit)."""
    if limit is None:
        return handler

    async def limited(*args: _Params.args, **kwargs: _Params.kwargs) -> _Result:
        async with limit.slot():
            return await handler(*args, **kwargs)

    return limited


def grpc_limit_interceptor(limit: ConcurrencyLimit) -> Any:
    """A grpc.aio server interceptor that runs every unary call inside ``limit``."""
    import grpc

    class _Limit(grpc.aio.ServerInterceptor):
        async def intercept_service(self, continuation: Any, handler_call_details: Any) -> Any:
            handler = await continuation(handler_call_details)
            if handler is None or handler.unary_unary is None or not asyncio.iscoroutinefunction(handler.unary_unary):
                return handler
            inner = handler.unary_unary

            async def limited(request: Any, context: Any) -> Any:
                async with limit.slot():
                    return await inner(request, context)

            return grpc.unary_unary_rpc_method_handler(
                limited,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )

    return _Limit()
