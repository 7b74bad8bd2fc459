"""A lean HTTP/1.1 front for the REST port: plain inference POSTs skip aiohttp's request machinery.

aiohttp's parser, request and response objects, payload stream and writer cost about a third of
the event loop's CPU per small predict request. This protocol reads the common request itself -
``POST /v1/models/...:(predict|classify|regress) HTTP/1.1`` with a Content-Length body and only
ordinary headers - hands the body to the same handler code aiohttp's route uses
(:meth:`RestHandler.inference_body`) and writes the same status line and headers aiohttp would.

Anything else on a connection (another method or path, chunked bodies, ``Expect``,
``Connection: close``, ``Content-Encoding``, unusual headers or header bytes, HTTP/1.0, bodies
over ``--max_request_bytes``) hands the whole connection, with every byte not yet answered, to
aiohttp's own protocol, which then serves it as it would have from the start. The hand-off only
happens between requests (answers stay in order) and is one-way.
"""

from __future__ import annotations

import asyncio
import http
import inspect
import re
from collections.abc import Awaitable, Callable
from typing import cast

from aiohttp import web
from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http import SERVER_SOFTWARE
from aiohttp.web_protocol import RequestHandler

__all__ = ["FastRestServer"]

# Inference paths that aiohttp's URL handling leaves exactly as sent: no percent-escapes, no
# "." / ".." segments, no query or fragment. Others (still valid) go through aiohttp.
_FAST_TARGET = re.compile(
    rb"/v1/models/[A-Za-z0-9_\-][A-Za-z0-9_\-.]*(?:/versions/[0-9]+|/labels/[A-Za-z0-9_\-][A-Za-z0-9_\-.]*)?"
    rb":(?:predict|classify|regress)",
    re.IGNORECASE,
)
_REQUEST_LINE = re.compile(rb"POST (\S+) HTTP/1\.1")
# A header line of visible ASCII only (no obs-fold, no control bytes), name a plain token.
_HEADER = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*([\x20-\x7e]*?)[ \t]*")
# Headers that change nothing about how aiohttp reads the request or writes the answer here.
_ORDINARY = frozenset({b"host", b"content-type", b"accept", b"accept-encoding", b"user-agent"})
_MAX_HEAD = 8190  # aiohttp's max_line_size / max_field_size: longer heads are its to refuse
# aiohttp closes a connection idle this long; the same here.
_KEEPALIVE_SECONDS = float(inspect.signature(RequestHandler.__init__).parameters["keepalive_timeout"].default)
_PAUSE_BUFFER = 1 << 20  # pipelined bytes waiting beyond this: stop reading until answered
_REASONS = {status.value: status.phrase for status in http.HTTPStatus}

Handle = Callable[[bytes, bytes], Awaitable[web.Response]]


def parse_head(head: bytes, max_body: int) -> tuple[bytes, int] | None:
    """(path, Content-Length) of a request head this front answers itself, else None."""
    if len(head) > _MAX_HEAD:
        return None
    lines = head.split(b"\r\n")
    line = _REQUEST_LINE.fullmatch(lines[0])
    if line is None or _FAST_TARGET.fullmatch(line.group(1)) is None:
        return None
    length = None
    seen: set[bytes] = set()
    for header in lines[1:]:
        match = _HEADER.fullmatch(header)
        if match is None:
            return None
        name = match.group(1).lower()
        if name in seen:
            return None  # a repeated header (Host, say) is aiohttp's to judge
        seen.add(name)
        if name == b"content-length":
            value = match.group(2)
            if length is not None or not value.isdigit() or len(value) > 18:
                return None  # repeated or odd lengths: aiohttp's words
            length = int(value)
        elif name == b"connection":
            if match.group(2).lower() != b"keep-alive":
                return None
        elif name not in _ORDINARY:
            return None
    if length is None or length > max_body:
        return None
    return line.group(1), length


def response_bytes(response: web.Response) -> bytes:
    """The response as aiohttp writes a web.Response with a bytes body on HTTP/1.1 keep-alive."""
    body = response.body
    assert isinstance(body, bytes)
    head = [f"HTTP/1.1 {response.status} {_REASONS.get(response.status, '')}"]
    headers = response.headers
    head.append(f"Content-Type: {headers.get('Content-Type', 'application/octet-stream')}")
    head.append(f"Content-Length: {len(body)}")
    head.append(f"Date: {rfc822_formatted_time()}")
    head.append(f"Server: {SERVER_SOFTWARE}")
    for name, value in headers.items():
        if name not in ("Content-Type", "Content-Length"):
            head.append(f"{name}: {value}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


class _Connection(asyncio.Protocol):
    def __init__(self, server: FastRestServer) -> None:
        self._server = server
        self._loop = server.loop
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._busy = False  # a request is being answered: later bytes wait (answers stay in order)
        self._write_paused = False
        self._read_paused = False
        self._idle: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's are not its subclasses
        self._server.connections.add(self)
        self._arm_idle()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._server.connections.discard(self)
        self._transport = None
        if self._idle is not None:
            self._idle.cancel()

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._next()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if self._busy and len(self._buffer) > _PAUSE_BUFFER and self._transport is not None:
            self._read_paused = True
            self._transport.pause_reading()
        self._next()

    def eof_received(self) -> bool | None:
        return None  # the transport closes itself, as aiohttp's protocol lets it on a client's EOF

    @property
    def idle(self) -> bool:
        return not self._busy

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def _arm_idle(self) -> None:
        if _KEEPALIVE_SECONDS > 0:
            self._idle = self._loop.call_later(_KEEPALIVE_SECONDS, self.close)

    def _next(self) -> None:
        """Answer the next buffered request, or hand the connection to aiohttp."""
        if self._busy or self._write_paused or self._transport is None:
            return
        if not self._buffer:
            if self._idle is None:
                self._arm_idle()
            return
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > _MAX_HEAD:
                self._hand_off()
            return
        parsed = parse_head(bytes(self._buffer[:end]), self._server.max_body)
        if parsed is None:
            self._hand_off()
            return
        path, length = parsed
        start = end + 4
        if len(self._buffer) < start + length:
            return  # the rest of the body is still on its way
        body = bytes(self._buffer[start : start + length])
        del self._buffer[: start + length]
        self._busy = True
        self._server.fast_requests += 1
        self._loop.create_task(self._answer(path, body))

    async def _answer(self, path: bytes, body: bytes) -> None:
        try:
            response = await self._server.handle(path, body)
            if self._transport is not None:
                self._transport.write(response_bytes(response))
        except BaseException:
            # handle() answers every Exception itself; this is cancellation at shutdown (or a
            # bug): no answer will come, so the connection must not wait for one.
            self.close()
            raise
        finally:
            self._busy = False
            if self._read_paused and self._transport is not None:
                self._read_paused = False
                self._transport.resume_reading()
            self._next()

    def _hand_off(self) -> None:
        transport = self._transport
        if transport is None:
            return
        self._server.connections.discard(self)
        self._server.handed_off += 1
        self._transport = None
        if self._read_paused:
            transport.resume_reading()
        protocol = self._server.aiohttp_server()
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        if self._buffer:
            protocol.data_received(bytes(self._buffer))
        self._buffer.clear()


class FastRestServer:
    """Protocol factory for the REST listening socket (see the module docstring).

    ``handle(path, body)`` answers one inference POST as aiohttp's route would;
    ``aiohttp_server`` is the aiohttp ``web.Server`` that takes over other connections.
    ``fast_requests`` / ``handed_off`` count what this front answered and passed on.
    """

    def __init__(self, handle: Handle, aiohttp_server: web.Server, *, max_body: int) -> None:
        self.handle = handle
        self.aiohttp_server = aiohttp_server
        self.max_body = max_body
        self.loop = asyncio.get_running_loop()
        self.connections: set[_Connection] = set()
        self.fast_requests = 0
        self.handed_off = 0

    def __call__(self) -> asyncio.Protocol:
        return _Connection(self)

    async def shutdown(self, timeout: float) -> None:
        """Close idle connections now and the others once their answer is written (or at timeout)."""
        deadline = self.loop.time() + timeout
        while True:
            for connection in [c for c in self.connections if c.idle]:
                connection.close()
            if not self.connections or self.loop.time() >= deadline:
                break
            await asyncio.sleep(0.01)
        for connection in list(self.connections):
            connection.close()
