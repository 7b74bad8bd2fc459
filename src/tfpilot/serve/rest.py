"""TF Serving's REST API on aiohttp, plus the endpoints its users ask for.

    POST /v1/models/{name}[/versions/{v} | /labels/{l}]:(predict|classify|regress)
    GET  /v1/models/{name}[/versions/{v} | /labels/{l}][/metadata]
    GET  /v1/models                          (list; TF Serving answers 400 here)
    GET  /healthz   GET /readyz   GET /monitoring/prometheus/metrics

Every error is ``{"error": "..."}`` with TF Serving's status mapping (400, 404, 413, 429, 503,
504). The handler never runs the model itself: arrays go through the shared batcher, which
runs TF in worker threads, so the event loop keeps accepting requests.
"""

from __future__ import annotations

import asyncio
import re
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiohttp import web

from tfpilot.serve.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from tfpilot.serve.metrics import MetricsRegistry
from tfpilot.serve.protocol import (
    decode_examples,
    decode_predict_request,
    dumps,
    encode_predict_body,
    numeric_inputs,
    parse_json_body,
    parse_numeric_body,
    signature_name_of,
)
from tfpilot.serve.servable import Servable
from tfpilot.serve.service import InferenceService
from tfpilot.serve.status import Code, RequestError, as_request_error
from tfpilot.serve.transport import ConcurrencyLimit, limit_handler

__all__ = ["build_rest_server", "metadata_json", "PREDICT_PATH", "STATUS_PATH"]


# TF Serving's own patterns (http_rest_api_handler.cc), matched on the raw path.
PREDICT_PATH = re.compile(
    r"/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?:(classify|regress|predict)", re.IGNORECASE
)
STATUS_PATH = re.compile(r"/v1/models(?:/([^/:]+))?(?:/versions/(\d+)|/labels/([^/:]+))?(/metadata)?", re.IGNORECASE)
_MAX_INT64 = 2**63 - 1


def _json_response(document: Any, status: int = 200) -> web.Response:
    return web.Response(body=dumps(document), status=status, content_type="application/json")


def _json_body(body: bytes, status: int = 200) -> web.Response:
    return web.Response(body=body, status=status, content_type="application/json")


_Response = TypeVar("_Response", bound=web.StreamResponse)


def _with_cors(response: _Response) -> _Response:
    response.headers["Access-Control-Allow-Origin"] = "*"
    response.headers["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
    response.headers["Access-Control-Allow-Headers"] = "Content-Type"
    return response


def _error_response(error: RequestError) -> web.Response:
    return _json_response(error.rest_body(), status=error.http_status)


def _version(text: str | None) -> int | None:
    if not text:
        return None
    value = int(text)
    if value > _MAX_INT64:
        raise RequestError.invalid(f"Failed to convert version: {text} to numeric.")
    return value


def metadata_json(servable: Servable) -> dict[str, Any]:
    """GetModelMetadataResponse as TF Serving's REST handler prints it (snake_case, int64 as str)."""
    cached = servable.metadata_cache
    if cached is None:
        from google.protobuf import json_format

        cached = json_format.MessageToDict(
            servable.signature_defs, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        servable.metadata_cache = cached  # a version's signatures never change: convert once
    return {
        "model_spec": {"name": servable.name, "signature_name": "", "version": str(servable.version)},
        "metadata": {"signature_def": cached},
    }


class RestHandler:
    def __init__(
        self,
        service: InferenceService,
        *,
        metrics: MetricsRegistry,
        max_request_bytes: int,
        timeout_seconds: float,
        metrics_path: str | None = "/monitoring/prometheus/metrics",
        cors: bool = False,
    ) -> None:
        self.metrics_path = metrics_path
        self.cors = cors
        self.service = service
        self.registry = service.registry
        self.metrics = metrics
        self.max_request_bytes = max_request_bytes
        self.timeout = timeout_seconds

    async def dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        if not self.cors:
            return await self._dispatch(request)
        # --rest_api_enable_cors_support: browsers' preflight and the headers that let a page on
        # another origin read the answer, as TF Serving sends them.
        if request.method == "OPTIONS":
            response: web.StreamResponse = web.Response(status=204)
        else:
            response = await self._dispatch(request)
        return _with_cors(response)

    async def inference_body(self, path: bytes, body: bytes) -> web.Response:
        """What :meth:`dispatch` answers to ``POST path`` with this body, for a path matching
        PREDICT_PATH whose body was read elsewhere (rest_fast.py) - the same code from the match on."""
        text = path.decode("ascii")
        try:
            match = PREDICT_PATH.fullmatch(text)
            assert match is not None, text
            name, version, label, method = match.groups()
            response = await self._inference(body, urllib.parse.unquote(name), version, label, method.lower())
        except Exception as error:  # as _dispatch: a bug answers 500 JSON
            response = _error_response(as_request_error(error, where=f"POST {text}"))
        return _with_cors(response) if self.cors else response

    async def _dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.rel_url.raw_path
        lowered = path.lower()
        try:
            if lowered.startswith("/v1/"):
                return await self._api(request, path)
            if lowered == "/v1":
                raise RequestError.invalid(f"Malformed request: {request.method} {path}")
            if request.method == "GET" and path == "/healthz":
                return _json_response({"status": "ok"})
            if request.method == "GET" and path == "/readyz":
                readiness = self.registry.readiness()
                ready = bool(readiness) and all(readiness.values())
                return _json_response({"ready": ready, "models": readiness}, status=200 if ready else 503)
            if request.method == "GET" and self.metrics_path is not None and path == self.metrics_path:
                return web.Response(
                    body=self.metrics.render().encode("utf-8"), headers={"Content-Type": METRICS_CONTENT_TYPE}
                )
            raise RequestError.not_found(f"Not found: {request.method} {path}")
        except Exception as error:  # a bug must answer 500 JSON, not drop the connection
            return _error_response(as_request_error(error, where=f"{request.method} {path}"))

    async def _api(self, request: web.BaseRequest, path: str) -> web.StreamResponse:
        match = PREDICT_PATH.fullmatch(path)
        if request.method == "POST" and match:
            name, version, label, method = match.groups()
            return await self._inference(request, urllib.parse.unquote(name), version, label, method.lower())
        match = STATUS_PATH.fullmatch(path)
        if request.method == "GET" and match:
            name, version_text, label, metadata = match.groups()
            if name is None:
                if version_text or label or metadata:
                    raise RequestError.invalid(f"Malformed request: {request.method} {path}")
                return self._list_models()
            name = urllib.parse.unquote(name)
            label = urllib.parse.unquote(label) if label else None
            api = "metadata" if metadata else "status"
            async with self.service.call(api=api, protocol="rest", model=name) as call:
                version = _version(version_text)
                if metadata:
                    servable = self.registry.resolve(name, version=version, label=label)
                    return _json_response(metadata_json(servable))
                statuses = self.registry.status(name, version=version, label=label)
                return _json_response({"model_version_status": [s.to_json() for s in statuses]})
            assert call.error is not None
            return _error_response(call.error)
        raise RequestError.invalid(f"Malformed request: {request.method} {path}")

    def _list_models(self) -> web.Response:
        models = []
        for name, statuses in self.registry.all_status().items():
            models.append(
                {
                    "name": name,
                    "model_version_status": [s.to_json() for s in statuses],
                    "version_labels": {label: str(v) for label, v in sorted(self.registry.labels(name).items())},
                }
            )
        return _json_response({"models": models})

    def _too_large(self) -> RequestError:
        # 413 is what an HTTP client expects for an oversized body (TF Serving has no limit).
        return RequestError(
            Code.RESOURCE_EXHAUSTED,
            f"Request body exceeds --max_request_bytes {self.max_request_bytes}; send fewer instances per request",
            http_status=413,
        )

    async def _read_body(self, request: web.BaseRequest) -> bytes:
        if request.content_length is not None and request.content_length > self.max_request_bytes:
            raise self._too_large()
        try:
            return await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise self._too_large() from None

    async def _inference(
        self, request: web.BaseRequest | bytes, name: str, version_text: str | None, label: str | None, method: str
    ) -> web.Response:
        async with self.service.call(api=method, protocol="rest", model=name) as call:
            # bytes: the fast front (rest_fast.py) read the body and checked its size already.
            body = request if isinstance(request, bytes) else await self._read_body(request)
            version = _version(version_text)
            label = urllib.parse.unquote(label) if label else None
            # One numeric tensor (the common body) skips the general JSON decoding; the body is
            # valid JSON then, so errors come in the same order either way.
            numeric = parse_numeric_body(body) if method == "predict" else None
            if numeric is not None:
                servable = self.service.resolve(name, version=version, label=label)
                signature = servable.predict_signature(numeric.signature_name)
                fast_inputs = numeric_inputs(numeric, signature)
                if fast_inputs is not None:
                    outputs = await self.service.predict(servable, signature, fast_inputs, timeout=self.timeout)
                    return _json_body(encode_predict_body(outputs, numeric.request_format))
            document = parse_json_body(body)
            signature_name = signature_name_of(document)
            if numeric is None:
                servable = self.service.resolve(name, version=version, label=label)
            if method == "predict":
                signature = servable.predict_signature(signature_name)
                booleans = b"true" in body or b"false" in body
                inputs, request_format = decode_predict_request(document, signature, may_contain_booleans=booleans)
                outputs = await self.service.predict(servable, signature, inputs, timeout=self.timeout)
                return _json_body(encode_predict_body(outputs, request_format))
            examples = decode_examples(document, method=method, feature_names=servable.feature_names)
            if method == "classify":
                _, classes = await self.service.classify(servable, signature_name, examples, timeout=self.timeout)
                return _json_response({"results": [[[label_, score] for label_, score in row] for row in classes]})
            _, values = await self.service.regress(servable, signature_name, examples, timeout=self.timeout)
            return _json_response({"results": values})
        assert call.error is not None
        return _error_response(call.error)


def build_rest_server(
    service: InferenceService,
    *,
    metrics: MetricsRegistry,
    max_request_bytes: int,
    timeout_seconds: float,
    metrics_path: str | None = "/monitoring/prometheus/metrics",
    cors: bool = False,
    limit: ConcurrencyLimit | None = None,
) -> tuple[web.Server, Callable[[bytes, bytes], Awaitable[web.Response]]]:
    """aiohttp's low-level server (TF Serving's routes are matched by the handler's own regexes,
    which avoids the per-request cost of aiohttp's router), and the same handler's answer to an
    inference POST whose body was read by the fast front (rest_fast.py), within the same limit."""
    handler = RestHandler(
        service,
        metrics=metrics,
        max_request_bytes=max_request_bytes,
        timeout_seconds=timeout_seconds,
        metrics_path=metrics_path,
        cors=cors,
    )

    def request_factory(message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
        # aiohttp enforces client_max_size while reading a chunked body too; +1 so the explicit
        # Content-Length check in the handler answers for bodies of exactly the limit.
        return web.BaseRequest(
            message, payload, protocol, writer, task, asyncio.get_running_loop(), client_max_size=max_request_bytes + 1
        )

    # --rest_api_num_threads bounds fast-path requests too: one limit for the whole port.
    inference_body = limit_handler(handler.inference_body, limit)
    # --rest_api_num_threads: at most that many requests are handled at once, the rest wait.
    server = web.Server(limit_handler(handler.dispatch, limit), request_factory=request_factory, access_log=None)
    return server, inference_body
