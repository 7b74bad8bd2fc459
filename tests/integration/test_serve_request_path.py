"""REST and gRPC share one request path: the same failure gets the same status code and
message on both, and every request is counted once in the metrics, whatever its outcome."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request

import grpc
import numpy as np
import pytest

from tfpilot.serve import BatchingParameters, ModelServer, ServedModel, ServerOptions, demo_models


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    demo_models.write_half_plus_two(root / "half", 1)
    demo_models.write_string_model(root / "strings", 1)
    options = ServerOptions(
        models=[
            ServedModel(name="half", base_path=root / "half"),
            ServedModel(name="strings", base_path=root / "strings"),
        ],
        rest_port=0,
        grpc_port=0,
        batching=BatchingParameters(max_batch_size=8),
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as running:
        yield running


def rest(server, model: str, document: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{server.rest_url}/v1/models/{model}:predict", data=json.dumps(document).encode(), method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def grpc_predict(server, model: str, inputs: dict, signature: str = "") -> tuple[grpc.StatusCode, str]:
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    request.model_spec.signature_name = signature
    for key, value in inputs.items():
        request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
    with grpc.insecure_channel(server.grpc_target) as channel:
        try:
            prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout=30)
        except grpc.RpcError as error:
            return error.code(), error.details()
    return grpc.StatusCode.OK, ""


NOT_A_PNG = b"these bytes are not a PNG"

CASES = [
    # (REST model, REST document, gRPC model, gRPC inputs, gRPC signature, gRPC code, HTTP status, fragment)
    pytest.param(
        "nothing",
        {"instances": [1.0]},
        "nothing",
        {"x": np.array([1.0], np.float32)},
        "",
        grpc.StatusCode.NOT_FOUND,
        404,
        "Servable not found",
        id="unknown-model",
    ),
    pytest.param(
        "half",
        {"signature_name": "nope", "instances": [1.0]},
        "half",
        {"x": np.array([1.0], np.float32)},
        "nope",
        # TF Serving's RunPredict (servables/tensorflow/predict_util.cc): FAILED_PRECONDITION, HTTP 400.
        grpc.StatusCode.FAILED_PRECONDITION,
        400,
        'Serving signature key "nope" not found.',
        id="unknown-signature",
    ),
    pytest.param(
        # A TF op error raised inside the graph (decode_png), mapped by the one wrapper.
        "strings",
        {"signature_name": "image", "instances": [{"b64": base64.b64encode(NOT_A_PNG).decode()}]},
        "strings",
        {"image_bytes": np.array([NOT_A_PNG], dtype=object)},
        "image",
        grpc.StatusCode.INVALID_ARGUMENT,
        400,
        "Unknown image file format",
        id="op-error",
    ),
]


@pytest.mark.parametrize(
    ("rest_model", "document", "grpc_model", "inputs", "signature", "code", "status", "fragment"), CASES
)
def test_the_same_failure_answers_the_same_on_rest_and_grpc(
    server, rest_model, document, grpc_model, inputs, signature, code, status, fragment
):
    http_status, body = rest(server, rest_model, document)
    grpc_code, details = grpc_predict(server, grpc_model, inputs, signature)
    assert (http_status, grpc_code) == (status, code)
    assert set(body) == {"error"}
    assert body["error"] == details  # one message, whichever protocol carried the request
    assert fragment in details
    # The op's own words, without eager TF's preamble or the server's file paths.
    assert "Traceback" not in details and "  File " not in details and "Graph execution error" not in details


def _counts(server, model: str, protocol: str, status: str) -> tuple[float, float]:
    metrics = server.server_metrics
    requests = metrics.requests.value(model=model, api="predict", protocol=protocol, status=status)
    latency = metrics.latency.count(model=model, api="predict", protocol=protocol)
    return requests, latency


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_each_request_is_counted_once_with_its_status(server, protocol):
    def send(ok: bool) -> None:
        if protocol == "rest":
            status, _ = rest(server, "half", {"instances": [1.0]} if ok else {"instances": ["text"]})
            assert (status == 200) is ok
        else:
            value = np.array([1.0], np.float32) if ok else np.array(["text"], dtype=object)
            assert (grpc_predict(server, "half", {"x": value})[0] == grpc.StatusCode.OK) is ok

    for ok, status in ((True, "OK"), (False, "INVALID_ARGUMENT")):
        requests_before, latency_before = _counts(server, "half", protocol, status)
        ok_before, all_latency_before = _counts(server, "half", protocol, "OK")
        send(ok)
        requests_after, latency_after = _counts(server, "half", protocol, status)
        assert requests_after - requests_before == 1
        # The latency histogram is by model/API/protocol only: one observation per request.
        assert latency_after - all_latency_before == 1
        if not ok:
            assert _counts(server, "half", protocol, "OK")[0] == ok_before
