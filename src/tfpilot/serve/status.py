"""Request error kinds with TF Serving's HTTP and gRPC status mapping.

TF Serving reports every failure as a canonical status code; REST clients see the HTTP status
its handler derives from that code and gRPC clients see the code itself. One exception type
carries the code so the REST and gRPC front ends answer the same failure the same way.
"""

from __future__ import annotations

import enum

from tfpilot.errors import ServeError

__all__ = ["Code", "RequestError"]


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

    def __init__(self, code: Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @classmethod
    def invalid(cls, message: str) -> RequestError:
        return cls(Code.INVALID_ARGUMENT, message)

    @classmethod
    def not_found(cls, message: str) -> RequestError:
        return cls(Code.NOT_FOUND, message)
