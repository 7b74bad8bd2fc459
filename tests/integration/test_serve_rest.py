"""Live REST server on 127.0.0.1 with real HTTP clients: TF Serving's documented behaviour."""

from __future__ import annotations

import base64
import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from tfpilot.serve import BatchingParameters, ModelServer, ServedModel, ServerOptions, demo_models


def call(url: str, method: str = "GET", body: object = None, raw: bytes | None = None) -> tuple[int, dict, str]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
            return response.status, json.loads(text) if text.startswith("{") else {}, response.headers["Content-Type"]
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        return error.code, json.loads(text), error.headers["Content-Type"]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("models")
    demo_models.write_half_plus_two(root / "half_plus_two", 1)
    shutil.copytree(root / "half_plus_two" / "1", root / "half_plus_two" / "2")
    demo_models.write_multi_io_model(root / "multi", 1)
    demo_models.write_string_model(root / "strings", 1)
    demo_models.write_classifier_model(root / "classifier", 1)
    demo_models.write_sleep_model(root / "sleepy", 1)
    return root


@pytest.fixture(scope="module")
def server(models):
    from tfpilot.serve import VersionPolicy

    options = ServerOptions(
        models=[
            ServedModel(
                name="half_plus_two",
                base_path=models / "half_plus_two",
                version_policy=VersionPolicy("all"),
                version_labels={"stable": 1, "canary": 2},
            ),
            ServedModel(name="multi", base_path=models / "multi"),
            ServedModel(name="strings", base_path=models / "strings"),
            ServedModel(name="classifier", base_path=models / "classifier"),
        ],
        rest_port=0,
        grpc_port=None,
        batching=BatchingParameters(max_batch_size=32, num_batch_threads=2),
        max_request_bytes=64 * 1024,
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as running:
        yield running


def test_half_plus_two_answers_the_documented_example(server):
    for path in ("", "/versions/1", "/labels/stable", "/labels/canary"):
        status, body, content_type = call(
            f"{server.rest_url}/v1/models/half_plus_two{path}:predict", "POST", {"instances": [1.0, 2.0, 5.0]}
        )
        assert (status, body) == (200, {"predictions": [2.5, 3.0, 4.5]})
        assert content_type == "application/json"
    status, body, _ = call(f"{server.rest_url}/v1/models/half_plus_two:predict", "POST", {"inputs": [1.0, 2.0, 5.0]})
    assert (status, body) == (200, {"outputs": [2.5, 3.0, 4.5]})


def test_status_and_metadata_have_tf_serving_shapes(server):
    ok = {"error_code": "OK", "error_message": ""}
    status, body, _ = call(f"{server.rest_url}/v1/models/half_plus_two")
    assert status == 200
    assert body == {
        "model_version_status": [
            {"version": "2", "state": "AVAILABLE", "status": ok},
            {"version": "1", "state": "AVAILABLE", "status": ok},
        ]
    }
    status, body, _ = call(f"{server.rest_url}/V1/Models/half_plus_two/versions/1")  # paths are case-insensitive
    assert body == {"model_version_status": [{"version": "1", "state": "AVAILABLE", "status": ok}]}
    status, body, _ = call(f"{server.rest_url}/v1/models/half_plus_two/labels/canary/metadata")
    assert status == 200
    assert body["model_spec"] == {"name": "half_plus_two", "signature_name": "", "version": "2"}
    signatures = body["metadata"]["signature_def"]["signature_def"]
    assert signatures["serving_default"]["inputs"]["x"]["dtype"] == "DT_FLOAT"
    assert signatures["serving_default"]["outputs"]["y"]["tensor_shape"]["dim"] == [{"size": "-1", "name": ""}]
    assert signatures["classify_x_to_y"]["method_name"] == "tensorflow/serving/classify"
    status, body, _ = call(f"{server.rest_url}/v1/models/half_plus_two/versions/7")
    assert (status, body) == (404, {"error": "Could not find version 7 of model half_plus_two"})
    status, body, _ = call(f"{server.rest_url}/v1/models")
    assert status == 200
    assert [m["name"] for m in body["models"]] == ["classifier", "half_plus_two", "multi", "strings"]
    assert body["models"][1]["version_labels"] == {"canary": "2", "stable": "1"}


def test_named_multi_input_multi_output_in_both_formats(server):
    url = f"{server.rest_url}/v1/models/multi:predict"
    status, body, _ = call(url, "POST", {"instances": [{"a": [1, 2], "b": 3}, {"a": [0.5, 0.25], "b": -1}]})
    assert status == 200
    assert body == {"predictions": [{"scaled": [3.0, 6.0], "total": 6.0}, {"scaled": [1.5, 0.75], "total": -0.25}]}
    status, body, _ = call(url, "POST", {"inputs": {"a": [[1, 2]], "b": [3]}})
    assert (status, body) == (200, {"outputs": {"scaled": [[3.0, 6.0]], "total": [6.0]}})
    # As in TF Serving, the request tensor is fed and the graph decides: the elementwise graph takes
    # three values where the signature declares two.
    status, body, _ = call(url, "POST", {"instances": [{"a": [1, 2, 3], "b": 3}]})
    assert (status, body) == (200, {"predictions": [{"scaled": [3.0, 6.0, 9.0], "total": 9.0}]}), body
    status, body, _ = call(url, "POST", {"instances": [{"a": [1, 2], "b": 1.5}]})
    assert status == 400 and "input `b` expects int64 [-1]" in body["error"]


def test_b64_images_and_bytes_outputs(server):
    import tensorflow as tf

    pixels = np.array([[[10], [20]], [[30], [40]], [[50], [60]]], np.uint8)
    png = tf.io.encode_png(pixels).numpy()
    status, body, _ = call(
        f"{server.rest_url}/v1/models/strings:predict",
        "POST",
        {"signature_name": "image", "instances": [{"b64": base64.b64encode(png).decode()}]},
    )
    assert status == 200
    assert body == {"predictions": [{"height": 3, "mean": 35.0}]}
    status, body, _ = call(
        f"{server.rest_url}/v1/models/strings:predict", "POST", {"instances": ["tf", {"b64": "AP8="}]}
    )
    assert status == 200
    assert body["predictions"] == [
        {"echo_bytes": {"b64": "dGY="}, "length": 2},
        {"echo_bytes": {"b64": "AP8="}, "length": 2},
    ]


def test_classify_and_regress(server):
    status, body, _ = call(
        f"{server.rest_url}/v1/models/half_plus_two:regress",
        "POST",
        {"signature_name": "regress_x_to_y", "examples": [{"x": 1.0}, {"x": 5.0}]},
    )
    assert (status, body) == (200, {"results": [2.5, 4.5]})
    status, body, _ = call(
        f"{server.rest_url}/v1/models/classifier:classify", "POST", {"context": {"x": 2.0}, "examples": [{}, {}]}
    )
    assert status == 200
    assert [[label for label, _ in row] for row in body["results"]] == [["neg", "pos"], ["neg", "pos"]]
    scores = np.array([[score for _, score in row] for row in body["results"]])
    expected = np.exp([-2.0, 2.0]) / np.exp([-2.0, 2.0]).sum()
    np.testing.assert_allclose(scores, [expected, expected], rtol=1e-6)
    status, body, _ = call(
        f"{server.rest_url}/v1/models/classifier:regress",
        "POST",
        {"signature_name": "regress", "examples": [{"x": 2.0}]},
    )
    assert (status, body) == (200, {"results": [6.0]})
    status, body, _ = call(f"{server.rest_url}/v1/models/half_plus_two:classify", "POST", {"examples": [{"x": 1.0}]})
    assert status == 400
    # Without --enable_signature_method_name_check (TF Serving's default) the method name is not
    # checked; the predict signature is refused for what it lacks: a serialized-Example input,
    # in classifier.cc's words (PreProcessClassification).
    assert body["error"].startswith("No classification inputs found in SignatureDef: ")


@pytest.mark.parametrize(
    ("method", "path", "body", "expected_status", "fragment"),
    [
        ("POST", "/v1/models/half_plus_two:predict", b"{not json", 400, "JSON Parse error"),
        (
            "POST",
            "/v1/models/half_plus_two:predict",
            b'{"instances": ["a"]}',
            400,
            "input `x` expects float32 [-1], got string",
        ),
        ("POST", "/v1/models/half_plus_two:predict", b'{"instances": [[1], [2, 3]]}', 400, "ragged"),
        (
            "POST",
            "/v1/models/nope:predict",
            b'{"instances": [1.0]}',
            404,
            "Servable not found for request: Latest(nope)",
        ),
        (
            "POST",
            "/v1/models/half_plus_two/versions/9:predict",
            b'{"instances": [1.0]}',
            404,
            "Specific(half_plus_two, 9)",
        ),
        (
            "POST",
            "/v1/models/half_plus_two/labels/beta:predict",
            b'{"instances": [1.0]}',
            400,
            "Unrecognized servable version label: beta",
        ),
        (
            "POST",
            "/v1/models/half_plus_two:predict",
            b'{"signature_name": "nope", "instances": [1.0]}',
            400,
            # TF Serving's RunPredict (servables/tensorflow/predict_util.cc): FAILED_PRECONDITION.
            'Serving signature key "nope" not found.',
        ),
        (
            "GET",
            "/v1/models/half_plus_two:predict",
            None,
            400,
            "Malformed request: GET /v1/models/half_plus_two:predict",
        ),
        ("POST", "/v1/models/half_plus_two:explain", b"{}", 400, "Malformed request"),
        ("GET", "/v1/models/half_plus_two/versions/99999999999999999999", None, 400, "Failed to convert version"),
        ("GET", "/nothing/here", None, 404, "Not found"),
    ],
)
def test_errors_are_json_with_tf_serving_status_codes(server, method, path, body, expected_status, fragment):
    status, document, content_type = call(server.rest_url + path, method, raw=body)
    assert status == expected_status
    assert content_type == "application/json"
    assert fragment in document["error"]


def test_request_body_limit_answers_413(server):
    payload = json.dumps({"instances": [1.0] * 20000}).encode()
    assert len(payload) > 64 * 1024
    status, body, _ = call(f"{server.rest_url}/v1/models/half_plus_two:predict", "POST", raw=payload)
    assert status == 413 and "--max_request_bytes" in body["error"]
    status, body, _ = call(f"{server.rest_url}/v1/models/half_plus_two:predict", "POST", {"instances": [1.0]})
    assert status == 200


def test_health_readiness_and_prometheus_metrics(server, models, tmp_path):
    assert call(f"{server.rest_url}/healthz")[:2] == (200, {"status": "ok"})
    status, body, _ = call(f"{server.rest_url}/readyz")
    assert status == 200 and body["ready"] is True
    call(f"{server.rest_url}/v1/models/half_plus_two:predict", "POST", {"instances": [1.0]})
    with urllib.request.urlopen(f"{server.rest_url}/monitoring/prometheus/metrics", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    assert 'tfpilot_serve_requests_total{model="half_plus_two",api="predict",protocol="rest",status="OK"}' in text
    assert (
        'tfpilot_serve_request_errors_total{model="_unknown",api="predict",protocol="rest",status="NOT_FOUND"}' in text
    )
    assert 'tfpilot_serve_batch_size_count{model="half_plus_two"}' in text
    assert (
        'tfpilot_serve_request_latency_seconds_bucket{model="half_plus_two",api="predict",protocol="rest",le="+Inf"}'
        in text
    )
    assert 'tfpilot_serve_queue_depth{model="half_plus_two"} 0' in text
    assert 'tfpilot_serve_model_versions{model="half_plus_two",state="AVAILABLE"} 2' in text
    # TF Serving's own names, for dashboards written against it
    assert ':tensorflow:serving:request_count{model_name="half_plus_two",status="OK"}' in text
    assert (
        ':tensorflow:serving:request_latency_count{model_name="half_plus_two",API="Predict",entrypoint="REST"}' in text
    )
    version_one = models / "half_plus_two" / "1"
    assert f':tensorflow:cc:saved_model:load_attempt_count{{model_path="{version_one}",status="success"}} 1' in text
    empty = tmp_path / "empty"
    empty.mkdir()
    options = ServerOptions(models=[ServedModel(name="later", base_path=empty)], rest_port=0, grpc_port=None)
    with ModelServer(options) as not_ready:
        status, body, _ = call(f"{not_ready.rest_url}/readyz")
        assert (status, body) == (503, {"ready": False, "models": {"later": False}})
        status, body, _ = call(f"{not_ready.rest_url}/v1/models/later:predict", "POST", {"instances": [1.0]})
        # TF Serving (ServerCore::GetServableHandle): NOT_FOUND, HTTP 404, its own words.
        assert (status, body) == (404, {"error": "Servable not found for request: Latest(later)"})


def test_cors_support_answers_preflight_and_marks_responses(server, models):
    options = ServerOptions(
        models=[ServedModel(name="h", base_path=models / "half_plus_two")], rest_port=0, grpc_port=None, cors=True
    )
    with ModelServer(options) as running:
        preflight = urllib.request.Request(f"{running.rest_url}/v1/models/h:predict", method="OPTIONS")
        with urllib.request.urlopen(preflight, timeout=30) as response:
            assert response.status == 204
            assert response.headers["Access-Control-Allow-Origin"] == "*"
            assert "POST" in response.headers["Access-Control-Allow-Methods"]
        status, body, _ = call(f"{running.rest_url}/v1/models/h:predict", "POST", {"instances": [1.0]})
        assert status == 200
        with urllib.request.urlopen(f"{running.rest_url}/v1/models/h", timeout=30) as response:
            assert response.headers["Access-Control-Allow-Origin"] == "*"
    with urllib.request.urlopen(f"{server.rest_url}/v1/models/half_plus_two", timeout=30) as response:
        assert "Access-Control-Allow-Origin" not in response.headers  # off by default, as in TF Serving


def test_metrics_path_follows_the_monitoring_config(models):
    base = models / "half_plus_two"
    for path, absent in (("/metrics", "/monitoring/prometheus/metrics"), (None, "/monitoring/prometheus/metrics")):
        options = ServerOptions(
            models=[ServedModel(name="h", base_path=base)], rest_port=0, grpc_port=None, metrics_path=path
        )
        with ModelServer(options) as running:
            assert call(f"{running.rest_url}{absent}")[0] == 404
            if path is not None:
                status, _, _ = call(f"{running.rest_url}{path}")
                assert status == 200


def test_full_queue_answers_429_and_slow_requests_504(models):
    import concurrent.futures

    options = ServerOptions(
        models=[ServedModel(name="sleepy", base_path=models / "sleepy")],
        rest_port=0,
        grpc_port=None,
        batching=BatchingParameters(max_batch_size=1, max_enqueued_batches=2, num_batch_threads=1),
        rest_api_timeout_in_ms=1500,
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as server:
        url = f"{server.rest_url}/v1/models/sleepy:predict"
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            # Each request sleeps 400 ms in the graph; one runs, two may wait, the rest are refused.
            answers = list(pool.map(lambda _: call(url, "POST", {"instances": [400.0]}), range(8)))
        codes = sorted(status for status, _, _ in answers)
        assert codes.count(200) >= 1 and codes.count(429) >= 4, codes
        assert all("queue" in body["error"] for status, body, _ in answers if status == 429)
        status, body, _ = call(url, "POST", {"instances": [2000.0]})
        assert status == 504 and "Deadline exceeded" in body["error"]
        # The abandoned call still finishes in its thread (TF cannot be interrupted); then the
        # server answers normally again.
        assert call(url, "POST", {"instances": [1.0]})[:2] == (200, {"predictions": [1.0]})
