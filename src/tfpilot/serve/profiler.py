"""TensorFlow's ProfilerService on the model server's gRPC port, as TF Serving offers it.

``tf.profiler.experimental.client.trace("127.0.0.1:8500", logdir, 1000)`` (and TensorBoard's
"Capture profile" button) sends ``tensorflow.ProfilerService/Profile`` to the serving port. The
server profiles itself for the requested duration, while it keeps answering requests, and
writes ``<repository_root>/<session_id>/<host_name>.xplane.pb``, the layout TensorBoard's
profile plugin reads; with ``emit_xspace`` the XSpace also travels back in the response.

The Python packages ship no stubs for profiler_service.proto, so the two messages are declared
here with the field numbers of tsl/profiler/protobuf/profiler_service.proto. Nested messages the
server does not read or build itself (``opts``, ``xspace``) are declared as bytes: a message
field and a bytes field have the same wire encoding.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import grpc

from tfpilot.atomic import atomic_write_bytes

__all__ = ["PROFILER_SERVICE", "profiler_handler", "profile_request_type", "profile_response_type"]

_log = logging.getLogger("tfpilot.serve")
PROFILER_SERVICE = "tensorflow.ProfilerService"
# A session id or host name becomes one path component: nothing that could leave the root.
_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
_MAX_DURATION_MS = 10 * 60 * 1000
_active = threading.Lock()  # TensorFlow's profiler is one per process


def _message_types() -> dict[str, Any]:
    from tfpilot.serve.proto_subset import message_classes

    return message_classes(
        "tfpilot/profiler_service_subset.proto",
        "tfpilot.profiler",
        [
            ("ProfileToolData", [("name", 1, "string", False, ""), ("data", 2, "bytes", False, "")]),
            (
                "ProfileRequest",
                [
                    ("duration_ms", 1, "uint64", False, ""),
                    ("max_events", 2, "uint64", False, ""),
                    ("tools", 3, "string", True, ""),
                    ("opts", 4, "bytes", False, ""),
                    ("repository_root", 5, "string", False, ""),
                    ("session_id", 6, "string", False, ""),
                    ("host_name", 7, "string", False, ""),
                    ("emit_xspace", 9, "bool", False, ""),
                ],
            ),
            (
                "ProfileResponse",
                [
                    ("tool_data", 6, "message", True, "ProfileToolData"),
                    ("empty_trace", 7, "bool", False, ""),
                    ("xspace", 8, "bytes", False, ""),
                ],
            ),
        ],
    )


def profile_request_type() -> Any:
    return _message_types()["ProfileRequest"]


def profile_response_type() -> Any:
    return _message_types()["ProfileResponse"]


def _trace_once(duration_s: float) -> bytes:
    """Profile this process for ``duration_s``; the serialized XSpace ('' if nothing came)."""
    import time

    import tensorflow as tf

    scratch = tempfile.mkdtemp(prefix="tfpilot-profile-")
    try:
        tf.profiler.experimental.start(scratch)
        try:
            # This thread only waits; requests keep running on the server's other threads.
            time.sleep(duration_s)
        finally:
            tf.profiler.experimental.stop()
        found = sorted(Path(scratch).glob("plugins/profile/*/*.xplane.pb"))
        return found[-1].read_bytes() if found else b""
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def _profile(request: Any, context: grpc.aio.ServicerContext) -> Any:
    response = profile_response_type()()
    root, session, host = request.repository_root, request.session_id, request.host_name
    if not 0 < request.duration_ms <= _MAX_DURATION_MS:
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"duration_ms must be within 1..{_MAX_DURATION_MS}, got {request.duration_ms}",
        )
    writes = bool(root)
    if writes and (not os.path.isabs(root) or not _COMPONENT.fullmatch(session) or not _COMPONENT.fullmatch(host)):
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            "repository_root must be an absolute path, and session_id and host_name single path components",
        )
    if not _active.acquire(blocking=False):
        await context.abort(grpc.StatusCode.UNAVAILABLE, "a profiling session is already running; retry after it")
    try:
        xspace = await asyncio.get_running_loop().run_in_executor(None, _trace_once, request.duration_ms / 1000)
    except Exception as error:  # the profiler raises several TF error types
        _log.warning("profiling failed: %s", error)
        await context.abort(grpc.StatusCode.INTERNAL, f"profiling failed: {error}")
    finally:
        _active.release()
    response.empty_trace = not xspace
    if xspace and writes:
        target = Path(root) / session / f"{host}.xplane.pb"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(target, xspace)
        except OSError as error:
            await context.abort(grpc.StatusCode.INTERNAL, f"cannot write the trace to {target}: {error}")
        _log.info("profile written to %s", target)
    if xspace and request.emit_xspace:
        response.xspace = xspace
    return response


def profiler_handler() -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(
        PROFILER_SERVICE,
        {
            "Profile": grpc.unary_unary_rpc_method_handler(
                _profile,
                request_deserializer=profile_request_type().FromString,
                response_serializer=lambda message: message.SerializeToString(),
            )
        },
    )
