"""Request error kinds with TF Serving's HTTP and gRPC status mapping.

TF Serving reports every failure as a canonical status code; REST clients see the HTTP status
its handler derives from that code and gRPC clients see the code itself. One exception type
carries the code so the REST and gRPC front ends answer the same failure the same way, and
:func:`as_request_error` is the one place any other exception (a TF op error, a bug) becomes one.
"""

from __future__ import annotations

import enum
import logging
import sys
from typing import Any

from tfpilot.errors import ServeError

__all__ = ["Code", "RequestError", "as_request_error", "op_error_message"]

_log = logging.getLogger("tfpilot.serve")


class Code(enum.Enum):
    """Canonical status codes (tensorflow.error.Code); value = (number, HTTP status)."""

    OK = (0, 200)
    CANCELLED = (1, 499)
    UNKNOWN = (2, 500)
    INVALID_ARGUMENT = (3, 400)
    DEADLINE_EXCEEDED = (4, 504)
    NOT_FOUND = (5, 404)
    ALREADY_EXISTS = (6, 409)
    PERMISSION_DENIED = (7, 403)
    RESOURCE_EXHAUSTED = (8, 429)
    FAILED_PRECONDITION = (9, 400)
    ABORTED = (10, 409)
    OUT_OF_RANGE = (11, 400)
    UNIMPLEMENTED = (12, 501)
    INTERNAL = (13, 500)
    UNAVAILABLE = (14, 503)
    DATA_LOSS = (15, 500)
    UNAUTHENTICATED = (16, 401)

    @property
    def number(self) -> int:
        return self.value[0]

    @property
    def http_status(self) -> int:
        return self.value[1]


class RequestError(ServeError):
    """A request failed with a canonical status code; ``str(error)`` is the client's message."""

    def __init__(self, code: Code, message: str, *, http_status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # Only where HTTP has a more precise answer than the code's (413 for an oversized body,
        # which TF Serving, having no such limit, never sends).
        self._http_status = http_status

    @property
    def http_status(self) -> int:
        return self._http_status if self._http_status is not None else self.code.http_status

    def rest_body(self) -> dict[str, str]:
        """TF Serving's REST error document."""
        return {"error": self.message}

    @classmethod
    def invalid(cls, message: str) -> RequestError:
        return cls(Code.INVALID_ARGUMENT, message)

    @classmethod
    def not_found(cls, message: str) -> RequestError:
        return cls(Code.NOT_FOUND, message)


def op_error_message(error: Any) -> str:
    """A TF op error's own message, as TF Serving returns it: without eager TF's "Graph execution
    error" preamble and its Python traceback (which would leak the server's file paths) and
    without the trailing node reference. An op inside a loop body (map_fn, while_loop) has no
    Python traceback to show, and TensorFlow says so in a line of its own that goes too."""
    message = str(error.message).split("\n\t [[")[0]
    lines = message.splitlines()
    preamble = ("Graph execution error", "Detected at node", "  File ", "Node: '", "<stack traces unavailable>")
    last = max((i for i, line in enumerate(lines) if line.startswith(preamble)), default=-1)
    lines = lines[last + 1 :]
    return "\n".join(line for line in lines if line.strip()).strip() or message.strip()


def as_request_error(error: Exception, *, where: str = "request") -> RequestError:
    """The status a client sees for ``error``: its own for a RequestError, the op's canonical
    code for a TF op error, INTERNAL (logged with its traceback) for anything else."""
    if isinstance(error, RequestError):
        return error
    tf = sys.modules.get("tensorflow")  # an op error implies TF is loaded; never import it here
    if tf is not None and isinstance(error, tf.errors.OpError):
        code = next((c for c in Code if c.number == error.error_code), Code.UNKNOWN)
        return RequestError(code, op_error_message(error))
    _log.error("unexpected error in %s", where, exc_info=error)
    return RequestError(Code.INTERNAL, f"Internal error: {type(error).__name__}: {error}")
