"""TF1 SavedModels that TF2's loader refuses are still served, as TF Serving serves them.

The model is written here with TF1's own builder (graph mode, a reference variable, signatures
whose declared dtype and shape disagree with the graph's tensors), the kinds of SavedModel found
in TF Serving's test data and in models exported years ago. Served over real gRPC and REST.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import pytest

from tfpilot.serve import ModelServer, ServedModel, ServerOptions


def write_tf1_model(version_dir: Path) -> None:
    """A counter on a reference variable, and y = 0.5 x + 3 behind mismatched declarations."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default(), v1.Session(graph=graph) as session:
        counter = v1.Variable(0.0, name="counter", use_resource=False)  # dtype float32_ref
        delta = v1.placeholder(tf.float32, shape=[], name="delta")
        increment = v1.assign_add(counter, delta)
        x = v1.placeholder(tf.float32, shape=[None, 1], name="x")
        y = tf.add(tf.multiply(x, 0.5), 3.0, name="y")
        serialized = v1.placeholder(tf.string, shape=[None], name="tf_example")
        parsed = v1.parse_example(serialized, {"x": v1.FixedLenFeature([1], tf.float32)})
        regressed = tf.add(tf.multiply(parsed["x"], 0.5), 3.0, name="regressed")
        session.run(v1.global_variables_initializer())

        def info(tensor, *, dtype=None, shape=None):  # type: ignore[no-untyped-def]
            proto = v1.saved_model.utils.build_tensor_info(tensor)
            if dtype is not None:
                proto.dtype = dtype.as_datatype_enum
            if shape is not None:
                proto.tensor_shape.CopyFrom(tf.TensorShape(shape).as_proto())
            return proto

        build = v1.saved_model.signature_def_utils.build_signature_def
        predict = "tensorflow/serving/predict"
        signatures = {
            # Declared as a scalar; the placeholder is [None, 1] (half_plus_three's mismatch).
            "serving_default": build({"x": info(x, shape=[])}, {"y": info(y)}, predict),
            "incr_counter_by": build({"delta": info(delta)}, {"output": info(increment)}, predict),
            # Declared DT_FLOAT; the graph's tensor holds serialized tf.Examples.
            "regress_x": build(
                {"inputs": info(serialized, dtype=tf.float32, shape=[])},
                {"outputs": info(regressed)},
                "tensorflow/serving/regress",
            ),
        }
        builder = v1.saved_model.Builder(str(version_dir))
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map=signatures)
        builder.save()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("tf1")
    write_tf1_model(root / "legacy" / "1")
    options = ServerOptions(
        models=[ServedModel(name="legacy", base_path=root / "legacy")],
        rest_port=0,
        grpc_port=0,
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as running:
        yield running


def rest(server, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(f"{server.rest_url}{path}", data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_tf2_loader_refuses_this_model(tmp_path):
    """The premise: without the session path this model could not be served at all."""
    import tensorflow as tf

    write_tf1_model(tmp_path / "1")
    with pytest.raises(Exception):  # noqa: B017 - any loader error is the premise
        tf.saved_model.load(str(tmp_path / "1"))


def test_graph_decides_shapes_not_the_declaration(server):
    status, body = rest(server, "/v1/models/legacy:predict", {"instances": [[1.0], [4.0]]})
    assert status == 200, body
    assert body == {"predictions": [[3.5], [5.0]]}


def test_reference_variable_keeps_state_across_requests(server):
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    with grpc.insecure_channel(server.grpc_target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        request = predict_pb2.PredictRequest()
        request.model_spec.name = "legacy"
        request.model_spec.signature_name = "incr_counter_by"
        request.inputs["delta"].CopyFrom(tf.make_tensor_proto(2.5, dtype=tf.float32))
        values = [float(tf.make_ndarray(stub.Predict(request, timeout=30).outputs["output"])) for _ in range(3)]
    assert [v - values[0] for v in values] == [0.0, 2.5, 5.0]


def test_regress_feeds_examples_to_the_graph_tensor(server):
    from tensorflow.core.example import example_pb2
    from tensorflow_serving.apis import prediction_service_pb2_grpc, regression_pb2

    request = regression_pb2.RegressionRequest()
    request.model_spec.name = "legacy"
    request.model_spec.signature_name = "regress_x"
    for value in (2.0, 10.0):
        example = example_pb2.Example()
        example.features.feature["x"].float_list.value.append(value)
        request.input.example_list.examples.append(example)
    with grpc.insecure_channel(server.grpc_target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        response = stub.Regress(request, timeout=30)
    assert [r.value for r in response.result.regressions] == [pytest.approx(4.0), pytest.approx(8.0)]


def test_op_errors_are_invalid_argument_without_a_traceback(server):
    # A [2] update to a scalar variable: the kernel refuses it (InvalidArgument, not a crash).
    status, body = rest(
        server, "/v1/models/legacy:predict", {"signature_name": "incr_counter_by", "inputs": {"delta": [1.0, 2.0]}}
    )
    assert status == 400, body
    assert body["error"] == "Parameters and update must be the same size"  # the op's words, no traceback
    status, body = rest(server, "/v1/models/legacy:predict", {"instances": [[1.0]]})
    assert status == 200  # the server keeps serving after a bad request
