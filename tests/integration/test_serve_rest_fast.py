"""The lean REST front (rest_fast.py) on a live server: it answers plain inference POSTs with the
bytes aiohttp would send (Date aside), keeps answers in order on a connection, and hands every
other request - with the bytes after it - to aiohttp."""

from __future__ import annotations

import socket

import pytest

from conftest import half_plus_two_server_options
from tfpilot.serve import ModelServer

BODY = b'{"instances": [1.0, 2.0]}'


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "cors"])
def server(request, tmp_path_factory):
    options = half_plus_two_server_options(
        tmp_path_factory.mktemp("models"), grpc_port=None, cors=request.param, max_request_bytes=4096
    )
    with ModelServer(options) as running:
        yield running


def post(path: str, body: bytes, *extra: str) -> bytes:
    headers = [f"POST {path} HTTP/1.1", "Host: t", "Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join([*headers, *extra]) + "\r\n\r\n").encode() + body


def read_answers(sock: socket.socket, count: int) -> list[tuple[bytes, dict[bytes, bytes], bytes]]:
    """``count`` HTTP/1.1 answers with Content-Length bodies: (status line, headers, body)."""
    data, answers = b"", []
    while len(answers) < count:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            lines = data[:end].split(b"\r\n")
            headers = dict(line.split(b": ", 1) for line in lines[1:])
            length = int(headers[b"Content-Length"])
            if len(data) >= end + 4 + length:
                answers.append((lines[0], headers, data[end + 4 : end + 4 + length]))
                data = data[end + 4 + length :]
                continue
        chunk = sock.recv(65536)
        assert chunk, f"connection closed after {len(answers)} answers"
        data += chunk
    return answers


def exchange(server: ModelServer, raw: bytes, count: int = 1) -> list[tuple[bytes, dict[bytes, bytes], bytes]]:
    with socket.create_connection(("127.0.0.1", server.rest_port), timeout=60) as sock:
        sock.sendall(raw)
        return read_answers(sock, count)


def without_date(answer):
    status, headers, body = answer
    return status, {k: v for k, v in headers.items() if k != b"Date"}, body


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/v1/models/half:predict", BODY, b"HTTP/1.1 200 OK"),
        ("/v1/models/half:predict", b'{"instances": [1.0, "x"]}', b"HTTP/1.1 400 Bad Request"),
        ("/v1/models/half:predict", b"{not json", b"HTTP/1.1 400 Bad Request"),
        ("/v1/models/missing:predict", BODY, b"HTTP/1.1 404 Not Found"),
        ("/v1/models/half/versions/7:predict", BODY, b"HTTP/1.1 404 Not Found"),
        ("/v1/models/half:regress", b'{"examples": [{"x": 1.0}]}', None),
    ],
)
def test_fast_answers_equal_aiohttp_answers(server, path, body, status):
    fast_before, handed_before = server.fast_rest.fast_requests, server.fast_rest.handed_off
    fast = exchange(server, post(path, body))[0]
    assert server.fast_rest.fast_requests == fast_before + 1
    # An extra header the fast front does not know sends the same request through aiohttp.
    slow = exchange(server, post(path, body, "X-Through: aiohttp"))[0]
    assert server.fast_rest.handed_off == handed_before + 1
    assert without_date(fast) == without_date(slow)
    assert b"Date" in fast[1] and b"Server" in fast[1]
    if status is not None:
        assert fast[0] == status
    assert (b"Access-Control-Allow-Origin" in fast[1]) == server.options.cors


def test_pipelined_requests_are_answered_in_order_across_the_hand_off(server):
    raw = (
        post("/v1/models/half:predict", BODY)
        + b"GET /v1/models/half HTTP/1.1\r\nHost: t\r\n\r\n"
        + post("/v1/models/half:predict", b'{"instances": [3.0]}')
    )
    handed_before = server.fast_rest.handed_off
    answers = exchange(server, raw, 3)
    assert [a[2] for a in answers[::2]] == [b'{"predictions":[2.5,3.0]}', b'{"predictions":[3.5]}']
    assert b"model_version_status" in answers[1][2]
    assert server.fast_rest.handed_off == handed_before + 1  # once handed off, aiohttp keeps it


def test_a_body_in_several_packets_and_several_requests_on_one_connection(server):
    fast_before = server.fast_rest.fast_requests
    with socket.create_connection(("127.0.0.1", server.rest_port), timeout=60) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        raw = post("/v1/models/half:predict", BODY)
        for _ in range(3):
            sock.sendall(raw[:20])
            sock.sendall(raw[20:-5])
            sock.sendall(raw[-5:])
            assert read_answers(sock, 1)[0][2] == b'{"predictions":[2.5,3.0]}'
    assert server.fast_rest.fast_requests == fast_before + 3


def test_an_oversized_body_gets_aiohttps_413(server):
    body = b'{"instances": [' + b"1.0, " * 1000 + b"1.0]}"
    answer = exchange(server, post("/v1/models/half:predict", body))[0]
    assert answer[0] == b"HTTP/1.1 413 Request Entity Too Large"
    assert b"max_request_bytes" in answer[2]


def test_stop_closes_idle_fast_connections(tmp_path):
    options = half_plus_two_server_options(tmp_path, grpc_port=None)
    server = ModelServer(options).start()
    with socket.create_connection(("127.0.0.1", server.rest_port), timeout=60) as sock:
        sock.sendall(post("/v1/models/half:predict", BODY))
        assert read_answers(sock, 1)[0][0] == b"HTTP/1.1 200 OK"
        server.stop()
        assert sock.recv(1) == b""  # closed by the server, not left open
