"""Answers that must be TF Serving's own (issue 32), each with the TF Serving source that decides it.
A live `ModelServer` on 127.0.0.1 with tensorflow-serving-api's gRPC stubs and a plain HTTP client."""

from __future__ import annotations

import json
import shutil
import socket
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import numpy as np
import pytest

from tfpilot.serve import ModelServer, ServedModel, ServerOptions, demo_models


def _post(url: str, body: object) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read().decode())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read().decode())


def _write_models(root: Path) -> None:
    import tensorflow as tf

    class Doubler(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
        def double(self, x):
            return {"y": x * 2.0, "z": x + 1.0}

    # No variables at all, and the variables/ directory gone (a copy through git keeps none).
    frozen = Doubler()
    tf.saved_model.save(frozen, str(root / "frozen" / "1"), signatures={"serving_default": frozen.double})
    shutil.rmtree(root / "frozen" / "1" / "variables")
    # Only a signature that is not serving_default.
    other = Doubler()
    tf.saved_model.save(other, str(root / "other" / "1"), signatures={"double": other.double})

    class Counter(tf.Module):
        def __init__(self):
            self.count = tf.Variable(0.0)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
        def incr(self, x):
            return {"count": tf.fill(tf.shape(x), self.count.assign_add(1.0))}

    counter = Counter()
    tf.saved_model.save(counter, str(root / "counter" / "1"), signatures={"serving_default": counter.incr})
    demo_models.write_half_plus_two(root / "half", 1)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("parity")
    _write_models(root)
    socket_path = root / "grpc.sock"
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(socket_path))
    stale.close()  # a previous server's socket file, left behind
    options = ServerOptions(
        models=[ServedModel(name=name, base_path=root / name) for name in ("frozen", "other", "counter", "half")],
        rest_port=0,
        grpc_port=0,
        grpc_socket_path=socket_path,
        enable_signature_method_name_check=True,
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as running:
        running.socket_path = socket_path
        yield running


def _stub(target: str):
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    return prediction_service_pb2_grpc.PredictionServiceStub(grpc.insecure_channel(target))


def _predict(name: str, *, signature: str = "", output_filter=()):
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = name
    request.model_spec.signature_name = signature
    request.inputs["x"].CopyFrom(tf.make_tensor_proto(np.array([1.0, 2.0], np.float32)))
    request.output_filter.extend(output_filter)
    return request


def test_a_savedmodel_without_variables_is_served(server):
    # TF Serving's loader skips the restore when variables/variables.index is absent.
    status, body = _post(f"{server.rest_url}/v1/models/frozen:predict", {"instances": [1.0, 2.0]})
    assert status == 200
    assert body == {"predictions": [{"y": 2.0, "z": 2.0}, {"y": 4.0, "z": 3.0}]}


def test_predict_without_a_signature_name_on_a_model_without_serving_default(server):
    # predict_util.cc RunPredict: FAILED_PRECONDITION `Serving signature key "serving_default" not found.`
    with pytest.raises(grpc.RpcError) as caught:
        _stub(server.grpc_target).Predict(_predict("other"), timeout=30)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert caught.value.details() == 'Serving signature key "serving_default" not found.'
    named = _stub(server.grpc_target).Predict(_predict("other", signature="double"), timeout=30)
    assert sorted(named.outputs) == ["y", "z"]


def test_a_stateful_signature_is_not_called_before_the_first_request(server):
    # TF Serving runs only warmup records at load (saved_model_warmup.cc); its own
    # saved_model_counter test model answers 1, 2, ... from the first request.
    answers = [_post(f"{server.rest_url}/v1/models/counter:predict", {"instances": [0.0]})[1] for _ in range(3)]
    assert answers == [{"predictions": [1.0]}, {"predictions": [2.0]}, {"predictions": [3.0]}]


def test_a_duplicate_output_filter_entry_is_invalid(server):
    # predict_util.cc PreProcessPrediction: INVALID_ARGUMENT "duplicate output tensor alias: y".
    with pytest.raises(grpc.RpcError) as caught:
        _stub(server.grpc_target).Predict(_predict("frozen", output_filter=["y", "y"]), timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details() == "duplicate output tensor alias: y"


def test_classify_on_a_predict_signature_says_what_tf_serving_says(server):
    # classifier.cc (with --enable_signature_method_name_check): INVALID_ARGUMENT, its words.
    status, body = _post(f"{server.rest_url}/v1/models/half:classify", {"examples": [{"x": 1.0}]})
    assert status == 400
    assert body == {
        "error": "Expected classification signature method_name to be tensorflow/serving/classify. "
        "Was: tensorflow/serving/predict"
    }


def test_the_unix_socket_left_by_a_previous_server_is_taken_over(server):
    # gRPC unlinks a stale Unix socket before binding, as TF Serving's --grpc_socket_path relies on.
    import tensorflow as tf

    answer = _stub(f"unix:{server.socket_path}").Predict(_predict("frozen"), timeout=30)
    assert tf.make_ndarray(answer.outputs["y"]).tolist() == [2.0, 4.0]


def test_the_grpc_health_service_answers_as_probes_expect(tmp_path):
    """--enable_grpc_healthcheck_service: grpc.health.v1 with the official client stubs; SERVING
    only when every configured model has an available version."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    demo_models.write_half_plus_two(tmp_path / "half", 1)
    (tmp_path / "later").mkdir()
    models = [
        ServedModel(name="half", base_path=tmp_path / "half"),
        ServedModel(name="later", base_path=tmp_path / "later"),
    ]
    options = ServerOptions(
        models=models,
        rest_port=None,
        grpc_port=0,
        enable_grpc_healthcheck_service=True,
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as running, grpc.insecure_channel(running.grpc_target) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        serving, not_serving = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING
        assert health.Check(health_pb2.HealthCheckRequest(service=""), timeout=30).status == not_serving
        assert health.Check(health_pb2.HealthCheckRequest(service="half"), timeout=30).status == serving
        assert health.Check(health_pb2.HealthCheckRequest(service="later"), timeout=30).status == not_serving
        with pytest.raises(grpc.RpcError) as caught:
            health.Check(health_pb2.HealthCheckRequest(service="nope"), timeout=30)
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        watch = health.Watch(health_pb2.HealthCheckRequest(service="half"), timeout=30)
        assert next(iter(watch)).status == serving
        watch.cancel()
    # Without the flag the service is not there, as in TF Serving.
    options = ServerOptions(models=models[:1], rest_port=None, grpc_port=0, file_system_poll_wait_seconds=0)
    with ModelServer(options) as running, grpc.insecure_channel(running.grpc_target) as channel:
        with pytest.raises(grpc.RpcError) as caught:
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=30)
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
