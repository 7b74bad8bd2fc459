"""Live gRPC server with tensorflow-serving-api's own stubs (the standard Python client)."""

from __future__ import annotations

import grpc
import numpy as np
import pytest

from tfpilot.serve import BatchingParameters, ModelServer, ServedModel, ServerOptions, VersionPolicy, demo_models


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    demo_models.write_half_plus_two(root / "half", 1)
    demo_models.write_half_plus_two(root / "half", 2, offset=3.0)
    demo_models.write_classifier_model(root / "classifier", 1)
    demo_models.write_string_model(root / "strings", 1)
    options = ServerOptions(
        models=[
            ServedModel(
                name="half", base_path=root / "half", version_policy=VersionPolicy("all"), version_labels={"stable": 1}
            ),
            ServedModel(name="classifier", base_path=root / "classifier"),
            ServedModel(name="strings", base_path=root / "strings"),
        ],
        rest_port=None,
        grpc_port=0,
        batching=BatchingParameters(max_batch_size=16),
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as running:
        yield running


@pytest.fixture(scope="module")
def channel(server):
    with grpc.insecure_channel(server.grpc_target) as opened:
        yield opened


def predict_request(name: str, values, *, version: int | None = None, label: str = "", signature: str = ""):
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = name
    request.model_spec.signature_name = signature
    if version is not None:
        request.model_spec.version.value = version
    if label:
        request.model_spec.version_label = label
    for key, value in values.items():
        request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
    return request


def test_predict_with_versions_labels_and_output_filter(channel):
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    x = {"x": np.array([1.0, 2.0, 5.0], np.float32)}
    response = stub.Predict(predict_request("half", x), timeout=10)
    assert response.model_spec.name == "half" and response.model_spec.version.value == 2
    assert response.model_spec.signature_name == "serving_default"
    np.testing.assert_allclose(tf.make_ndarray(response.outputs["y"]), [3.5, 4.0, 5.5])
    for spec in ({"version": 1}, {"label": "stable"}):
        response = stub.Predict(predict_request("half", x, **spec), timeout=10)
        np.testing.assert_allclose(tf.make_ndarray(response.outputs["y"]), [2.5, 3.0, 4.5])
    request = predict_request("strings", {"text": np.array([b"abc", b"\x00"], dtype=object)})
    request.output_filter.append("length")
    response = stub.Predict(request, timeout=10)
    assert list(response.outputs) == ["length"]
    assert tf.make_ndarray(response.outputs["length"]).tolist() == [3, 1]


@pytest.mark.parametrize(
    ("name", "values", "kwargs", "code", "fragment"),
    [
        (
            "nope",
            {"x": np.ones(1, np.float32)},
            {},
            grpc.StatusCode.NOT_FOUND,
            "Servable not found for request: Latest(nope)",
        ),
        ("half", {"x": np.ones(1, np.float32)}, {"version": 9}, grpc.StatusCode.NOT_FOUND, "Specific(half, 9)"),
        ("", {"x": np.ones(1, np.float32)}, {}, grpc.StatusCode.INVALID_ARGUMENT, "Missing ModelSpec"),
        (
            "half",
            {"x": np.ones(1, np.float32)},
            {"label": "beta"},
            grpc.StatusCode.INVALID_ARGUMENT,
            "Unrecognized servable version label: beta",
        ),
        (
            "half",
            {"x": np.ones(1, np.float64)},
            {},
            grpc.StatusCode.INVALID_ARGUMENT,
            "input `x` expects float32 [-1], got float64",
        ),
        (
            "half",
            {"z": np.ones(1, np.float32)},
            {},
            # TensorFlow's cc/saved_model/util.cc GetInputValues, which TF Serving's RunPredict calls.
            grpc.StatusCode.INVALID_ARGUMENT,
            "Signature input alias: x(feed name: serving_default_x:0) not found in request and no default value provided. "
            "Inputs expected to be in the request {z}, or default input alias set: ;",
        ),
        (
            "half",
            {"x": np.ones(1, np.float32), "z": np.ones(1, np.float32)},
            {},
            # TF Serving's predict_util.cc VerifyRequestInputsSize.
            grpc.StatusCode.INVALID_ARGUMENT,
            "input size does not match signature: 2!=1 len({x,z}) != len({x}). Sent extra: {z}. "
            "Missing but required: {}.",
        ),
        (
            "half",
            {"x": np.ones(1, np.float32)},
            {"signature": "nope"},
            # TF Serving's RunPredict (servables/tensorflow/predict_util.cc).
            grpc.StatusCode.FAILED_PRECONDITION,
            'Serving signature key "nope" not found.',
        ),
    ],
)
def test_predict_errors_map_to_grpc_status_codes(channel, name, values, kwargs, code, fragment):
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    with pytest.raises(grpc.RpcError) as caught:
        stub.Predict(predict_request(name, values, **kwargs), timeout=10)
    assert caught.value.code() == code
    assert fragment in caught.value.details()


def test_classify_and_regress(channel):
    from tensorflow.core.example import example_pb2
    from tensorflow_serving.apis import classification_pb2, prediction_service_pb2_grpc, regression_pb2

    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

    def example(x: float):
        proto = example_pb2.Example()
        proto.features.feature["x"].float_list.value.append(x)
        return proto

    request = classification_pb2.ClassificationRequest()
    request.model_spec.name = "classifier"
    request.input.example_list.examples.extend([example(2.0), example(-1.0)])
    response = stub.Classify(request, timeout=10)
    first, second = response.result.classifications
    assert [c.label for c in first.classes] == ["neg", "pos"]
    assert first.classes[1].score == pytest.approx(np.exp(2) / (np.exp(2) + np.exp(-2)), rel=1e-6)
    assert second.classes[0].score > second.classes[1].score
    request = regression_pb2.RegressionRequest()
    request.model_spec.name = "half"
    request.model_spec.signature_name = "regress_x_to_y"
    context = request.input.example_list_with_context
    context.context.features.feature["x"].float_list.value.append(4.0)
    context.examples.add()
    response = stub.Regress(request, timeout=10)
    assert [r.value for r in response.result.regressions] == [pytest.approx(5.0)]  # version 2: 0.5 * 4 + 3
    request = regression_pb2.RegressionRequest()
    request.model_spec.name = "half"
    request.input.example_list.examples.add()
    with pytest.raises(grpc.RpcError) as caught:
        stub.Regress(request, timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details().startswith("No regression inputs found in SignatureDef: ")


def test_model_status_and_metadata(channel):
    from tensorflow_serving.apis import (
        get_model_metadata_pb2,
        get_model_status_pb2,
        model_service_pb2_grpc,
        prediction_service_pb2_grpc,
    )

    status_stub = model_service_pb2_grpc.ModelServiceStub(channel)
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = "half"
    response = status_stub.GetModelStatus(request, timeout=10)
    assert [(s.version, s.state) for s in response.model_version_status] == [
        (2, get_model_status_pb2.ModelVersionStatus.AVAILABLE),
        (1, get_model_status_pb2.ModelVersionStatus.AVAILABLE),
    ]
    assert response.model_version_status[0].status.error_code == 0
    request.model_spec.name = "missing"
    with pytest.raises(grpc.RpcError) as caught:
        status_stub.GetModelStatus(request, timeout=10)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    metadata_request = get_model_metadata_pb2.GetModelMetadataRequest()
    metadata_request.model_spec.name = "half"
    metadata_request.metadata_field.append("signature_def")
    response = stub.GetModelMetadata(metadata_request, timeout=10)
    assert response.model_spec.version.value == 2
    signatures = get_model_metadata_pb2.SignatureDefMap()
    response.metadata["signature_def"].Unpack(signatures)
    assert signatures.signature_def["classify_x_to_y"].method_name == "tensorflow/serving/classify"
    assert signatures.signature_def["serving_default"].inputs["x"].name == "serving_default_x:0"


def test_deadlines_and_unsupported_methods(server, tmp_path):
    from tensorflow_serving.apis import (
        model_management_pb2,
        model_service_pb2_grpc,
        prediction_service_pb2_grpc,
    )

    demo_models.write_sleep_model(tmp_path / "sleepy", 1)
    options = ServerOptions(
        models=[ServedModel(name="sleepy", base_path=tmp_path / "sleepy")], rest_port=None, grpc_port=0
    )
    with ModelServer(options) as slow_server, grpc.insecure_channel(slow_server.grpc_target) as slow_channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(slow_channel)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Predict(predict_request("sleepy", {"x": np.array([1500.0], np.float32)}), timeout=0.3)
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        with pytest.raises(grpc.RpcError) as caught:
            model_service_pb2_grpc.ModelServiceStub(slow_channel).HandleReloadConfigRequest(
                model_management_pb2.ReloadConfigRequest(), timeout=5
            )
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert "--model_config_file" in caught.value.details()


def multi_inference_request(tasks, *, x: float = 2.0):
    from tensorflow_serving.apis import inference_pb2

    request = inference_pb2.MultiInferenceRequest()
    for model, signature, method in tasks:
        task = request.tasks.add()
        task.model_spec.name = model
        task.model_spec.signature_name = signature
        task.method_name = method
    request.input.example_list.examples.add().features.feature["x"].float_list.value.append(x)
    return request


def test_multi_inference_runs_each_task_on_the_same_examples(channel):
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    request = multi_inference_request(
        [
            ("classifier", "regress", "tensorflow/serving/regress"),
            ("classifier", "", "tensorflow/serving/classify"),
        ]
    )
    response = stub.MultiInference(request, timeout=10)
    regression, classification = response.results
    assert regression.regression_result.regressions[0].value == pytest.approx(6.0)  # 3x
    classes = classification.classification_result.classifications[0].classes
    assert [c.label for c in classes] == ["neg", "pos"]
    assert classes[1].score == pytest.approx(np.exp(2) / (np.exp(2) + np.exp(-2)), rel=1e-6)
    assert [r.model_spec.signature_name for r in response.results] == ["regress", "serving_default"]
    assert {r.model_spec.name for r in response.results} == {"classifier"}
    assert {r.model_spec.version.value for r in response.results} == {1}


@pytest.mark.parametrize(
    "tasks, fragment",
    [
        ([], "must specify at least one task"),
        (
            [
                ("classifier", "regress", "tensorflow/serving/regress"),
                ("half", "regress_x_to_y", "tensorflow/serving/regress"),
            ],
            "must access the same model name",
        ),
        (
            [
                ("classifier", "regress", "tensorflow/serving/regress"),
                ("classifier", "regress", "tensorflow/serving/regress"),
            ],
            "Duplicate evaluation of signature: regress",
        ),
        ([("classifier", "regress", "tensorflow/serving/predict")], "Unsupported signature method_name"),
    ],
)
def test_multi_inference_refuses_what_tf_serving_refuses(channel, tasks, fragment):
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    with pytest.raises(grpc.RpcError) as caught:
        stub.MultiInference(multi_inference_request(tasks), timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert fragment in caught.value.details()


def write_predict_method_regressor(version_dir) -> None:
    """A TF2 SavedModel whose Example-parsing signature carries the predict method name
    (tf.saved_model.save marks every signature predict), as most exported TF2 models do."""
    import tensorflow as tf

    class Regressor(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def regress(self, inputs):
            parsed = tf.io.parse_example(inputs, {"x": tf.io.FixedLenFeature([1], tf.float32)})
            return {"outputs": parsed["x"] * 3.0}

    module = Regressor()
    tf.saved_model.save(module, str(version_dir), signatures={"serving_default": module.regress})


@pytest.mark.parametrize("check", [False, True])
def test_signature_method_name_check_flag(tmp_path, check):
    from tensorflow.core.example import example_pb2
    from tensorflow_serving.apis import prediction_service_pb2_grpc, regression_pb2

    write_predict_method_regressor(tmp_path / "r" / "1")
    options = ServerOptions(
        models=[ServedModel(name="r", base_path=tmp_path / "r")],
        rest_port=None,
        grpc_port=0,
        enable_signature_method_name_check=check,
    )
    request = regression_pb2.RegressionRequest()
    request.model_spec.name = "r"
    example = example_pb2.Example()
    example.features.feature["x"].float_list.value.append(2.0)
    request.input.example_list.examples.append(example)
    with ModelServer(options) as running, grpc.insecure_channel(running.grpc_target) as opened:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(opened)
        if not check:  # TF Serving's default: the inputs and outputs decide, not the method name
            response = stub.Regress(request, timeout=30)
            assert [r.value for r in response.result.regressions] == [pytest.approx(6.0)]
        else:
            with pytest.raises(grpc.RpcError) as caught:
                stub.Regress(request, timeout=30)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert (
                "Expected regression signature method_name to be tensorflow/serving/regress" in caught.value.details()
            )
