"""Which request heads the lean REST front answers itself (rest_fast.parse_head); every other
head goes to aiohttp, so a wrong "yes" here would change what a client gets."""

from __future__ import annotations

import pytest

from tfpilot.serve.rest_fast import parse_head

LIMIT = 1000


def head(target: str = "/v1/models/m:predict", *headers: str, line: str | None = None) -> bytes:
    first = line if line is not None else f"POST {target} HTTP/1.1"
    return "\r\n".join([first, "Host: x", *headers]).encode("latin-1")


@pytest.mark.parametrize(
    "target",
    [
        "/v1/models/m:predict",
        "/v1/models/my_model-2.b/versions/12:classify",
        "/v1/models/m/labels/stable:regress",
        "/v1/models/m:PREDICT",
    ],
)
def test_plain_inference_posts_are_answered_here(target):
    assert parse_head(head(target, "Content-Length: 12", "Content-Type: application/json"), LIMIT) == (
        target.encode(),
        12,
    )


def test_keep_alive_and_ordinary_headers_stay_here():
    parsed = parse_head(
        head("/v1/models/m:predict", "content-length: 3", "Connection: keep-alive", "Accept: */*", "User-Agent: t"),
        LIMIT,
    )
    assert parsed == (b"/v1/models/m:predict", 3)


@pytest.mark.parametrize(
    "raw",
    [
        head("/v1/models/m:predict"),  # no Content-Length (chunked or none): aiohttp's
        head("/v1/models/m:predict", "Content-Length: 3", "Content-Length: 3"),
        head("/v1/models/m:predict", "Content-Length: +3"),
        head("/v1/models/m:predict", f"Content-Length: {LIMIT + 1}"),  # aiohttp answers 413
        head("/v1/models/m:predict", "Content-Length: 3", "Transfer-Encoding: chunked"),
        head("/v1/models/m:predict", "Content-Length: 3", "Expect: 100-continue"),
        head("/v1/models/m:predict", "Content-Length: 3", "Connection: close"),
        head("/v1/models/m:predict", "Content-Length: 3", "Content-Encoding: gzip"),
        head("/v1/models/m:predict", "Content-Length: 3", "Host: y"),  # a second Host
        head("/v1/models/m:predict", "Content-Length: 3", "X-Bad\x01: 1"),
        head("/v1/models/m:predict", "Content-Length: 3", " folded"),
        head("/v1/models/m:predict", "Content-Length: 3", "X-Other: 1"),
        head(line="POST /v1/models/m:predict HTTP/1.0") + b"\r\nContent-Length: 3",
        head(line="GET /v1/models/m:predict HTTP/1.1") + b"\r\nContent-Length: 3",
        head("/v1/models/m:predict?x=1", "Content-Length: 3"),
        head("/v1/models/a%2Fb:predict", "Content-Length: 3"),
        head("/v1/models/../versions/1:predict", "Content-Length: 3"),
        head("/v1/models/m/versions/1/labels/a:predict", "Content-Length: 3"),
        head("/v1/models/m", "Content-Length: 3"),
        head("/v1/models/m:predict", "Content-Length: 3", "X-Pad: " + "a" * 9000),
    ],
)
def test_everything_else_goes_to_aiohttp(raw):
    assert parse_head(raw, LIMIT) is None
