"""Every SavedModel of the zoo (serve_zoo.py), served over REST and gRPC, answers as TF Serving would.

One server serves the whole zoo, built once per session. For each model: REST predict in row
form (string inputs as {"b64": ...}) and columnar form (strings as text), gRPC Predict, Classify
and Regress where a signature takes tf.Examples, GetModelMetadata over both APIs, and one bad
request. Answers are compared with the same SavedModel called in-process, and each JSON value is
checked for the type TF Serving writes for its dtype (util/json_tensor.cc): floats as numbers,
integers as integers, booleans as true/false, strings as text, and outputs named *_bytes (or
bytes that are not UTF-8) as {"b64": ...}.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from serve_zoo import BUILDERS, EXAMPLE_MODELS, ExampleQuery, Query, ZooModel, build_zoo, serialized_examples

from tfpilot.serve import ModelServer, ServedModel, ServerOptions

ZOO = list(BUILDERS)
# TF Serving's HTTP status for each canonical code (http_rest_api_handler / ToHTTPStatusCode).
HTTP_STATUS = {"INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "NOT_FOUND": 404}
FLOAT_TOLERANCE = {"rtol": 1e-6, "atol": 1e-6}  # the same graph on the same inputs; room for oneDNN's order


@pytest.fixture(scope="session")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, ZooModel]]:
    root = tmp_path_factory.mktemp("zoo")
    return root, build_zoo(root)


@pytest.fixture(scope="module")
def server(zoo: tuple[Path, dict[str, ZooModel]]) -> Any:
    root, _ = zoo
    options = ServerOptions(
        models=[ServedModel(name=name, base_path=root / name) for name in ZOO],
        rest_port=0,
        grpc_port=0,
        file_system_poll_wait_seconds=0,
    )
    with ModelServer(options) as running:
        yield running


@pytest.fixture(scope="module")
def channel(server: Any) -> Any:
    with grpc.insecure_channel(server.grpc_target) as opened:
        yield opened


@pytest.fixture(scope="module")
def loaded(zoo: tuple[Path, dict[str, ZooModel]]) -> dict[str, Any]:
    """Each model loaded in this process with tf.saved_model.load: the reference answers."""
    import tensorflow as tf

    root, models = zoo
    return {name: tf.saved_model.load(str(root / name / "1"), tags=list(models[name].tags)) for name in ZOO}


def in_process(model: Any, signature: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import tensorflow as tf

    function = model.signatures[signature or "serving_default"]
    return {name: value.numpy() for name, value in function(**{k: tf.constant(v) for k, v in inputs.items()}).items()}


# ----------------------------------------------------------------------------- JSON


def http(server: Any, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{server.rest_url}{path}", data=data, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def json_value(item: Any, *, as_b64: bool) -> Any:
    """One tensor element as a client writes it: bytes as text, or {"b64"} when asked or not UTF-8."""
    if isinstance(item, bytes):
        if not as_b64:
            try:
                return item.decode("utf-8")
            except UnicodeDecodeError:
                pass
        return {"b64": base64.b64encode(item).decode("ascii")}
    return item


def json_tensor(array: np.ndarray, *, as_b64: bool = False) -> Any:
    return (
        np.vectorize(lambda item: json_value(item, as_b64=as_b64), otypes=[object])(array).tolist()
        if array.dtype == object
        else array.tolist()
    )


def leaves(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [leaf for item in value for leaf in leaves(item)]
    return [value]


def assert_json_tensor(value: Any, expected: np.ndarray, *, name: str) -> None:
    """`value` (from the server's JSON) holds `expected` with the JSON types TF Serving writes."""
    if expected.dtype == object:
        assert value == json_tensor(expected, as_b64=name.endswith("_bytes")), name
        return
    found = leaves(value)
    if expected.dtype == bool:
        assert all(isinstance(v, bool) for v in found), f"{name}: booleans must be true/false, got {value}"
        assert value == expected.tolist(), name
    elif np.issubdtype(expected.dtype, np.integer):
        assert all(isinstance(v, int) and not isinstance(v, bool) for v in found), f"{name}: integers, got {value}"
        assert value == expected.tolist(), name
    else:
        assert all(isinstance(v, int | float) and not isinstance(v, bool) for v in found), (
            f"{name}: numbers, got {value}"
        )
        np.testing.assert_allclose(np.asarray(value, dtype=np.float64), expected, **FLOAT_TOLERANCE, err_msg=name)
        assert np.asarray(value).shape == expected.shape, name


def rest_predict_path(name: str) -> str:
    return f"/v1/models/{name}:predict"


def _with_signature(query: Query | ExampleQuery, body: dict[str, Any]) -> dict[str, Any]:
    return {"signature_name": query.signature, **body} if query.signature else body


# ----------------------------------------------------------------------------- REST predict


@pytest.mark.parametrize("name", ZOO)
def test_rest_predict_row_and_columnar_equal_the_model_in_process(
    name: str, zoo: Any, server: Any, loaded: Any
) -> None:
    model = zoo[1][name]
    for query in model.queries:
        expected = in_process(loaded[name], query.signature, query.inputs)
        # Columnar: one input may be sent bare, several as an object; strings as text where they are UTF-8.
        if len(query.inputs) == 1:
            (only,) = query.inputs.values()
            columns: Any = json_tensor(only)
        else:
            columns = {key: json_tensor(value) for key, value in query.inputs.items()}
        status, answer = http(server, rest_predict_path(name), _with_signature(query, {"inputs": columns}))
        assert status == 200, (query.signature, answer)
        if len(expected) == 1:
            (output,) = expected
            assert_json_tensor(answer["outputs"], expected[output], name=output)
        else:
            assert set(answer["outputs"]) == set(expected)
            for output, value in expected.items():
                assert_json_tensor(answer["outputs"][output], value, name=output)
        if not query.rows:
            continue
        # Row: one entry per example; every string as {"b64": ...}, TF Serving's binary form.
        count = len(next(iter(query.inputs.values())))
        if len(query.inputs) == 1:
            (only,) = query.inputs.values()
            instances: list[Any] = [json_tensor(only[i : i + 1], as_b64=True)[0] for i in range(count)]
        else:
            instances = [
                {key: json_tensor(value[i : i + 1], as_b64=True)[0] for key, value in query.inputs.items()}
                for i in range(count)
            ]
        status, answer = http(server, rest_predict_path(name), _with_signature(query, {"instances": instances}))
        assert status == 200, (query.signature, answer)
        predictions = answer["predictions"]
        assert len(predictions) == count
        if len(expected) == 1:
            (output,) = expected
            assert_json_tensor(predictions, expected[output], name=output)
        else:
            for output, value in expected.items():
                assert_json_tensor([row[output] for row in predictions], value, name=output)


def test_a_scalar_output_has_no_row_form(server: Any) -> None:
    """Columnar form carries a scalar output; row form cannot split it into rows, and TF Serving
    refuses it (util/json_tensor.cc MakeRowFormatJsonFromTensors: `Tensor name: mean has no shape
    information`, INVALID_ARGUMENT)."""
    body: dict[str, Any] = {"signature_name": "stats", "inputs": [1.0, 2.0, 6.0]}
    status, answer = http(server, rest_predict_path("module_signatures"), body)
    assert status == 200 and answer["outputs"] == {"mean": 3.0, "centered": [-2.0, -1.0, 3.0]}
    body = {"signature_name": "stats", "instances": [1.0, 2.0, 6.0]}
    status, answer = http(server, rest_predict_path("module_signatures"), body)
    assert status == 400, answer
    assert answer["error"].startswith("Tensor name: mean has no shape information")


# ----------------------------------------------------------------------------- gRPC predict


def predict_request(name: str, signature: str, inputs: dict[str, np.ndarray]) -> Any:
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = name
    request.model_spec.signature_name = signature
    for key, value in inputs.items():
        request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
    return request


@pytest.mark.parametrize("name", ZOO)
def test_grpc_predict_equals_the_model_in_process(name: str, zoo: Any, channel: Any, loaded: Any) -> None:
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    for query in zoo[1][name].queries:
        expected = in_process(loaded[name], query.signature, query.inputs)
        response = stub.Predict(predict_request(name, query.signature, query.inputs), timeout=60)
        # predict_util.cc fills the answering model spec, the default signature by its name.
        assert response.model_spec.name == name
        assert response.model_spec.version.value == 1
        assert response.model_spec.signature_name == (query.signature or "serving_default")
        assert set(response.outputs) == set(expected)
        for output, want in expected.items():
            got = tf.make_ndarray(response.outputs[output])
            assert got.dtype == want.dtype and got.shape == want.shape, output
            if want.dtype.kind == "f":
                np.testing.assert_allclose(got, want, **FLOAT_TOLERANCE, err_msg=output)
            else:
                np.testing.assert_array_equal(got, want, err_msg=output)


# ----------------------------------------------------------------------------- classify / regress


def _example_list(rows: list[dict[str, Any]]) -> Any:
    import tensorflow as tf
    from tensorflow_serving.apis import input_pb2

    examples = [tf.train.Example.FromString(raw) for raw in serialized_examples(rows)]
    return input_pb2.Input(example_list=input_pb2.ExampleList(examples=examples))


def test_classify_and_regress_are_asked_of_every_model_with_an_examples_signature(zoo: Any) -> None:
    asked = {name: {query.method for query in zoo[1][name].example_queries} for name in ZOO}
    assert {name for name, methods in asked.items() if methods} == set(EXAMPLE_MODELS)
    assert set().union(*asked.values()) == {"classify", "regress"}


@pytest.mark.parametrize("name", EXAMPLE_MODELS)
def test_classify_and_regress_over_rest_and_grpc_equal_the_model_in_process(
    name: str, zoo: Any, server: Any, channel: Any, loaded: Any
) -> None:
    from tensorflow_serving.apis import classification_pb2, prediction_service_pb2_grpc, regression_pb2

    queries = zoo[1][name].example_queries
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    for query in queries:
        signature = loaded[name].signatures[query.signature or "serving_default"]
        (input_key,) = signature.structured_input_signature[1]
        expected = in_process(loaded[name], query.signature, {input_key: serialized_examples(query.examples)})
        status, answer = http(
            server, f"/v1/models/{name}:{query.method}", _with_signature(query, {"examples": query.examples})
        )
        assert status == 200, answer
        if query.method == "classify":
            classes = [[label.decode() for label in row] for row in expected["classes"]]
            # classifier.cc / json: one [label, score] pair per class and example.
            assert [[pair[0] for pair in result] for result in answer["results"]] == classes
            assert all(isinstance(pair[1], float | int) for result in answer["results"] for pair in result)
            scores = np.array([[pair[1] for pair in result] for result in answer["results"]])
            np.testing.assert_allclose(scores, expected["scores"], **FLOAT_TOLERANCE)
            request = classification_pb2.ClassificationRequest(input=_example_list(query.examples))
            request.model_spec.name = name
            request.model_spec.signature_name = query.signature
            response = stub.Classify(request, timeout=60)
            assert response.model_spec.signature_name == (query.signature or "serving_default")
            got_classes = [[c.label for c in row.classes] for row in response.result.classifications]
            got_scores = [[c.score for c in row.classes] for row in response.result.classifications]
            assert got_classes == classes
            np.testing.assert_allclose(got_scores, expected["scores"], **FLOAT_TOLERANCE)
        else:
            values = expected["outputs"].reshape(-1)
            assert all(isinstance(v, float | int) for v in answer["results"])
            np.testing.assert_allclose(answer["results"], values, **FLOAT_TOLERANCE)
            request = regression_pb2.RegressionRequest(input=_example_list(query.examples))
            request.model_spec.name = name
            request.model_spec.signature_name = query.signature
            response = stub.Regress(request, timeout=60)
            assert response.model_spec.signature_name == query.signature
            np.testing.assert_allclose([r.value for r in response.result.regressions], values, **FLOAT_TOLERANCE)


# ----------------------------------------------------------------------------- metadata


@pytest.mark.parametrize("name", ZOO)
def test_metadata_lists_the_serving_meta_graphs_signatures(name: str, zoo: Any, server: Any, channel: Any) -> None:
    from tensorflow_serving.apis import get_model_metadata_pb2, prediction_service_pb2_grpc

    from tfpilot.savedmodel import read_signature_defs

    stored = read_signature_defs(zoo[0] / name / "1")
    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
    request.model_spec.name = name
    response = prediction_service_pb2_grpc.PredictionServiceStub(channel).GetModelMetadata(request, timeout=60)
    definitions = get_model_metadata_pb2.SignatureDefMap()
    response.metadata["signature_def"].Unpack(definitions)
    # The SignatureDefs exactly as stored in the `serve` MetaGraph (never another MetaGraph's).
    assert dict(definitions.signature_def) == stored
    assert response.model_spec.version.value == 1

    status, answer = http(server, f"/v1/models/{name}/metadata")
    assert status == 200, answer
    assert answer["model_spec"] == {"name": name, "signature_name": "", "version": "1"}
    rest_definitions = answer["metadata"]["signature_def"]["signature_def"]
    assert set(rest_definitions) == set(stored)
    for key, definition in stored.items():
        assert rest_definitions[key]["method_name"] == definition.method_name
        for alias, info in definition.inputs.items():
            # `name` is one member of TensorInfo's `encoding` oneof; a sparse input (coo_sparse)
            # or a composite one prints that member instead, as the JSON printer skips unset oneofs.
            encoding = info.WhichOneof("encoding")
            assert encoding in rest_definitions[key]["inputs"][alias], (key, alias)
            if encoding == "name":
                assert rest_definitions[key]["inputs"][alias]["name"] == info.name
            assert rest_definitions[key]["inputs"][alias]["dtype"] == _dtype_name(info.dtype)


def _dtype_name(dtype: int) -> str:
    from tensorflow.core.framework import types_pb2

    return types_pb2.DataType.Name(dtype)


# ----------------------------------------------------------------------------- bad requests


@pytest.mark.parametrize("name", ZOO)
def test_a_bad_request_gets_tf_servings_code_over_rest_and_grpc(name: str, zoo: Any, server: Any, channel: Any) -> None:
    from tensorflow_serving.apis import classification_pb2, prediction_service_pb2_grpc

    bad = zoo[1][name].bad
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    if bad.method == "predict":
        assert bad.inputs is not None
        body: dict[str, Any] = {"inputs": {key: json_tensor(value, as_b64=True) for key, value in bad.inputs.items()}}
        call = stub.Predict
        request: Any = predict_request(name, bad.signature, bad.inputs)
    else:
        assert bad.examples is not None
        body = {"examples": bad.examples}
        call = stub.Classify
        request = classification_pb2.ClassificationRequest(input=_example_list(bad.examples))
        request.model_spec.name = name
        request.model_spec.signature_name = bad.signature
    if bad.signature:
        body["signature_name"] = bad.signature
    status, answer = http(server, f"/v1/models/{name}:{bad.method}", body)
    assert status == HTTP_STATUS[bad.code], (bad.why, answer)
    rest_fragment = bad.fragment if bad.rest_fragment is None else bad.rest_fragment
    assert rest_fragment in answer["error"], (bad.why, answer)
    with pytest.raises(grpc.RpcError) as raised:
        call(request, timeout=60)
    assert raised.value.code().name == bad.code, (bad.why, raised.value.details())
    assert bad.fragment in raised.value.details()


@pytest.mark.parametrize("name", EXAMPLE_MODELS)
def test_multi_inference_runs_classify_and_regress_on_the_same_examples(
    name: str, zoo: Any, channel: Any, loaded: Any
) -> None:
    """MultiInference (multi_inference.cc): one request, a task per signature, results in task order."""
    from tensorflow_serving.apis import inference_pb2, prediction_service_pb2_grpc

    queries = {query.method: query for query in zoo[1][name].example_queries}
    request = inference_pb2.MultiInferenceRequest(input=_example_list(queries["classify"].examples))
    for method in ("classify", "regress"):
        task = request.tasks.add()
        task.model_spec.name = name
        task.model_spec.signature_name = queries[method].signature or "serving_default"
        task.method_name = f"tensorflow/serving/{method}"
    response = prediction_service_pb2_grpc.PredictionServiceStub(channel).MultiInference(request, timeout=60)
    serialized = serialized_examples(queries["classify"].examples)
    classified = in_process(loaded[name], queries["classify"].signature, {"inputs": serialized})
    regressed = in_process(loaded[name], queries["regress"].signature, {"inputs": serialized})
    first, second = response.results
    got_scores = [[c.score for c in row.classes] for row in first.classification_result.classifications]
    np.testing.assert_allclose(got_scores, classified["scores"], **FLOAT_TOLERANCE)
    assert [[c.label for c in row.classes] for row in first.classification_result.classifications] == [
        [label.decode() for label in row] for row in classified["classes"]
    ]
    np.testing.assert_allclose(
        [r.value for r in second.regression_result.regressions], regressed["outputs"].reshape(-1), **FLOAT_TOLERANCE
    )


# ----------------------------------------------------------------------------- producers' own checks


def test_the_hub_module_answers_as_hub_load_calls_it(zoo: Any, server: Any, channel: Any) -> None:
    """What a TF Hub consumer gets from `hub.load(path)(sentences)` (the restored `__call__`) is what
    the server answers for serving_default, over REST and gRPC; the reusable-SavedModel attributes
    hub.KerasLayer reads (variables, trainable_variables, regularization_losses) survive the save."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    root, models = zoo
    restored = tf.saved_model.load(str(root / "hub_module" / "1"))
    assert [v.name for v in restored.variables] == [v.name for v in restored.trainable_variables] == ["embeddings:0"]
    assert len(restored.regularization_losses) == 1 and float(restored.regularization_losses[0]()) > 0.0
    (query,) = models["hub_module"].queries
    sentences = query.inputs["sentences"]
    expected = restored(tf.constant(sentences)).numpy()  # training=False, the default
    assert restored(tf.constant(sentences), training=True).shape == expected.shape  # hub.KerasLayer's trainable path
    status, answer = http(server, rest_predict_path("hub_module"), {"inputs": json_tensor(sentences)})
    assert status == 200, answer
    assert_json_tensor(answer["outputs"], expected, name="output_0")
    response = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(
        predict_request("hub_module", "", query.inputs), timeout=60
    )
    np.testing.assert_allclose(tf.make_ndarray(response.outputs["output_0"]), expected, **FLOAT_TOLERANCE)


def test_a_composite_output_is_fetched_only_when_output_filter_leaves_it_out(channel: Any, loaded: Any) -> None:
    """A ragged output's TensorInfo is a composite_tensor without a name. TF Serving's RunPredict
    (servables/tensorflow/predict_util.cc) fetches the name of every output the request asks
    for (all of them without output_filter), and TensorFlow's Session refuses the empty one
    (common_runtime/graph_execution_state.cc ValidateFeedAndFetchDevices: INVALID_ARGUMENT
    `Tensor :0, specified in either feed_devices or fetch_devices was not found in the Graph`);
    an output_filter naming only dense outputs runs."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    x = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    request = predict_request("ragged_sparse", "ragged_output", {"x": x})
    request.output_filter.append("total")
    response = stub.Predict(request, timeout=60)
    assert set(response.outputs) == {"total"}
    expected = in_process(loaded["ragged_sparse"], "ragged_output", {"x": x})["total"]
    np.testing.assert_allclose(tf.make_ndarray(response.outputs["total"]), expected)
    request.output_filter.append("pieces")
    with pytest.raises(grpc.RpcError) as raised:
        stub.Predict(request, timeout=60)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.details().startswith(
        "Tensor :0, specified in either feed_devices or fetch_devices was not found in the Graph"
    )


def test_a_ragged_input_is_sent_as_its_components_never_as_a_nested_list(server: Any) -> None:
    """TF Serving has no ragged tensor in its API: the SignatureDef lists the components and the
    REST decoder (util/json_tensor.cc) refuses a list whose rows differ in length, INVALID_ARGUMENT."""
    body = {"inputs": {"tokens": [[1.0, 2.0], [3.0]], "tokens_1": [0, 2, 3]}}
    status, answer = http(server, rest_predict_path("ragged_sparse"), body)
    assert status == 400, answer
    assert "Encountered list at unexpected size" in answer["error"]


def test_the_tfx_examples_signature_is_not_a_regression_signature(zoo: Any, server: Any, channel: Any) -> None:
    """TFX's serving_default has one input and one output named `outputs`, but its input is keyed
    `examples`: TF Serving's regressor.cc PreProcessRegression (method names unchecked, the
    default) refuses it with INVALID_ARGUMENT `No regression inputs found in SignatureDef: `;
    the same examples sent to Predict as `examples` are answered (the zoo's predict tests)."""
    from tensorflow_serving.apis import prediction_service_pb2_grpc, regression_pb2

    rows = [{"trip_miles": 3.2, "payment_type": "Cash", "trip_seconds": 420}]
    status, answer = http(server, "/v1/models/tfx_trainer:regress", {"examples": rows})
    assert status == 400 and answer["error"].startswith("No regression inputs found in SignatureDef: "), answer
    request = regression_pb2.RegressionRequest(input=_example_list(rows))
    request.model_spec.name = "tfx_trainer"
    with pytest.raises(grpc.RpcError) as raised:
        prediction_service_pb2_grpc.PredictionServiceStub(channel).Regress(request, timeout=60)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.details().startswith("No regression inputs found in SignatureDef: ")


def test_a_frozen_tf1_graph_with_sparse_tensors_loads_and_runs_its_dense_parts(tmp_path: Path) -> None:
    """TF Serving loads a SavedModel whatever its SignatureDefs name (a coo_sparse TensorInfo has
    no tensor name) and only requests that feed or fetch such a tensor fail, at Session::Run. A
    frozen graph (no variables/) is run in tfpilot's own Session: it must load too, answer the
    dense outputs, and refuse a feed of the sparse input with the Session's words."""
    import shutil

    import tensorflow as tf

    from tfpilot.serve.servable import load_servable
    from tfpilot.serve.status import RequestError

    v1 = tf.compat.v1
    version = tmp_path / "1"
    graph = tf.Graph()
    with graph.as_default(), v1.Session(graph=graph) as session:
        ids = v1.sparse_placeholder(tf.float32, [None, 4], name="ids")
        x = v1.placeholder(tf.float32, [None], name="x")
        info = v1.saved_model.utils.build_tensor_info
        build = v1.saved_model.signature_def_utils.build_signature_def
        builder = v1.saved_model.Builder(str(version))
        builder.add_meta_graph_and_variables(
            session,
            ["serve"],
            signature_def_map={
                "serving_default": build(
                    {"ids": info(ids)}, {"y": info(tf.sparse.reduce_sum(ids, axis=1))}, "tensorflow/serving/predict"
                ),
                "dense": build(
                    {"x": info(x)},
                    {"doubled": info(x * 2.0), "as_sparse": info(tf.sparse.from_dense(x[:, None]))},
                    "tensorflow/serving/predict",
                ),
            },
        )
        builder.save()
    shutil.rmtree(version / "variables", ignore_errors=True)
    servable = load_servable(name="frozen_sparse", version=1, path=version)
    assert servable.graph_decides and set(servable.signatures) == {"serving_default", "dense"}
    assert servable.signatures["dense"].outputs["as_sparse"].tensor_name == ""
    answer = servable.run("dense", {"x": np.array([1.0, 2.5], dtype=np.float32)})
    assert set(answer) == {"doubled"} and answer["doubled"].tolist() == [2.0, 5.0]
    with pytest.raises(RequestError) as refused:
        servable.run("serving_default", {"ids": np.zeros((1, 4), dtype=np.float32)})
    assert str(refused.value).startswith("Tensor :0, specified in either feed_devices or fetch_devices")


@pytest.mark.parametrize(
    ("method", "name", "signature", "start"),
    [
        ("classify", "keras_archive", "", "Expected one input Tensor. "),
        ("classify", "module_signatures", "typed", "Expected one or two output Tensors, found 3. "),
        ("classify", "tf1_estimator", "predict", "No classification inputs found in SignatureDef: "),
        ("regress", "module_signatures", "stats", "Expected one output Tensor. "),
        ("regress", "tf1_estimator", "", "Expected one output Tensor. "),
        ("regress", "hub_module", "", "No regression inputs found in SignatureDef: "),
    ],
    ids=["one-input", "two-outputs", "inputs-key", "one-output", "regress-one-output", "regress-inputs-key"],
)
def test_classify_and_regress_refuse_a_signature_in_tf_servings_order_and_words(
    method: str, name: str, signature: str, start: str, server: Any, channel: Any
) -> None:
    """Without --enable_signature_method_name_check (TF Serving's default) any signature may be
    asked to classify or regress; TF Serving's classifier.cc PreProcessClassification and
    regressor.cc PreProcessRegression then check, in this order: one input; one or two outputs
    (classify) or one (regress); the input keyed `inputs`; `classes`/`scores` or `outputs`. Each
    refusal is INVALID_ARGUMENT and starts with their words."""
    from tensorflow_serving.apis import classification_pb2, prediction_service_pb2_grpc, regression_pb2

    rows: list[dict[str, Any]] = [{"x": [1.0]}]
    body: dict[str, Any] = {"examples": rows, **({"signature_name": signature} if signature else {})}
    status, answer = http(server, f"/v1/models/{name}:{method}", body)
    assert status == 400 and answer["error"].startswith(start), answer
    request: Any = (
        classification_pb2.ClassificationRequest if method == "classify" else regression_pb2.RegressionRequest
    )(input=_example_list(rows))
    request.model_spec.name = name
    request.model_spec.signature_name = signature
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    with pytest.raises(grpc.RpcError) as raised:
        (stub.Classify if method == "classify" else stub.Regress)(request, timeout=60)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.details().startswith(start)
