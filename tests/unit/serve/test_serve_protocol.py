"""TF Serving JSON codec: request decoding, response encoding, classify/regress examples."""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfpilot.serve.protocol import (
    COLUMNAR,
    ROW,
    decode_examples,
    decode_predict_request,
    dumps,
    encode_predict_body,
    encode_predict_response,
    parse_json_body,
    signature_name_of,
)
from tfpilot.serve.servable import SignatureInfo, TensorSpecInfo
from tfpilot.serve.status import Code, RequestError


def signature(**inputs: tuple[str, tuple[int, ...] | None]) -> SignatureInfo:
    specs = {name: TensorSpecInfo(key=name, dtype=dtype, shape=shape) for name, (dtype, shape) in inputs.items()}
    return SignatureInfo(name="serving_default", method_name="tensorflow/serving/predict", inputs=specs, outputs={})


SINGLE = signature(x=("float32", (-1,)))
IMAGE = signature(image=("uint8", (-1, 2, 2, 1)))
MULTI = signature(a=("float32", (-1, 2)), b=("int64", (-1,)))
TEXT = signature(text=("string", (-1,)))
FLAGS = signature(flag=("bool", (-1,)))


def decode(document: dict, sig: SignatureInfo, **kwargs):
    return decode_predict_request(document, sig, **kwargs)


def test_row_format_single_input_stacks_instances():
    for booleans in (True, False):
        inputs, request_format = decode({"instances": [1.0, 2, 5.0]}, SINGLE, may_contain_booleans=booleans)
        assert request_format == ROW
        assert inputs["x"].dtype == np.float32
        np.testing.assert_array_equal(inputs["x"], [1.0, 2.0, 5.0])


def test_columnar_multi_input_and_row_named_objects_agree():
    rows, _ = decode({"instances": [{"a": [1, 2], "b": 3}, {"a": [0.5, 0.5], "b": 4}]}, MULTI)
    columns, request_format = decode({"inputs": {"a": [[1, 2], [0.5, 0.5]], "b": [3, 4]}}, MULTI)
    assert request_format == COLUMNAR
    for name in ("a", "b"):
        np.testing.assert_array_equal(rows[name], columns[name])
    assert rows["a"].dtype == np.float32 and rows["b"].dtype == np.int64


def test_b64_and_text_strings_become_bytes():
    payload = bytes(range(256))
    inputs, _ = decode({"instances": [{"b64": base64.b64encode(payload).decode()}, "héllo"]}, TEXT)
    assert inputs["text"].dtype == object
    assert inputs["text"][0] == payload and inputs["text"][1] == "héllo".encode()


def test_nan_and_infinity_tokens_round_trip():
    document = parse_json_body(b'{"instances": [NaN, Infinity, -Infinity, 1.5]}')
    inputs, _ = decode(document, SINGLE)
    assert math.isnan(inputs["x"][0]) and inputs["x"][1] == np.inf and inputs["x"][2] == -np.inf
    body = dumps(encode_predict_response({"y": inputs["x"]}, ROW))
    assert body == b'{"predictions": [NaN, Infinity, -Infinity, 1.5]}'


@pytest.mark.parametrize(
    ("document", "sig", "fragment"),
    [
        ({"instances": ["a"]}, SINGLE, 'input `x` expects float32 [-1], got string: JSON Value: "a"'),
        ({"instances": ["s"]}, IMAGE, "input `image` expects uint8 [-1,2,2,1], got string"),
        ({"instances": [[1.0], [2.0, 3.0]]}, signature(x=("float32", (-1, 1))), "ragged list"),
        ({"instances": [True, 1.0]}, SINGLE, "got true"),
        ({"instances": [1, 2]}, FLAGS, "is not of expected type: bool"),
        ({"instances": [300]}, signature(x=("uint8", (-1,))), "out of range for uint8"),
        ({"instances": [1.5]}, signature(x=("int32", (-1,))), "is not of expected type: int32"),
        ({"instances": [1e39]}, SINGLE, "without loss of precision"),
        ({"instances": [16777217]}, SINGLE, "without loss of precision"),
        ({"instances": [None]}, SINGLE, "got null"),
        ({"instances": [{"b64": "!!"}]}, TEXT, "Unable to base64 decode"),
        ({"instances": [{"x": 1}]}, TEXT, "keys must be equal to: text"),
        ({"instances": [1.0], "inputs": [1.0]}, SINGLE, "only one of 'inputs' or 'instances'"),
        ({"instances": []}, SINGLE, "No values in 'instances'"),
        ({"instances": 3}, SINGLE, "to be an list/array"),
        ({"instances": [[1.0, 2.0]]}, MULTI, "expecting list of objects"),
        ({"inputs": [1.0]}, MULTI, "expecting an object"),
        ({"inputs": {"a": [[1, 2]]}}, MULTI, "Missing named input: b"),
        (
            {"signature": 1},
            SINGLE,
            "Missing 'inputs' or 'instances' key; signature `serving_default` expects `x` float32 [-1]",
        ),
    ],
)
def test_malformed_requests_name_the_input_and_expectation(document, sig, fragment):
    with pytest.raises(RequestError) as caught:
        decode(document, sig)
    assert caught.value.code == Code.INVALID_ARGUMENT
    assert fragment in caught.value.message


def test_body_level_errors():
    for body, fragment in [
        (b"", "document is empty"),
        (b"{", "JSON Parse error"),
        (b"[1, 2]", "Is not object"),
        (b"\xff\xfe\x00", "JSON Parse error"),
        (b"[" * 100000, "JSON Parse error"),
    ]:
        with pytest.raises(RequestError) as caught:
            parse_json_body(body)
        assert fragment in caught.value.message
    with pytest.raises(RequestError, match="'signature_name' key must be a string"):
        signature_name_of({"signature_name": 3})
    assert signature_name_of({}) == "serving_default"


def test_row_and_columnar_responses_follow_tf_serving_shapes():
    outputs = {"scores": np.array([[0.1, 0.9], [0.5, 0.5]], np.float32), "label": np.array([1, 0], np.int64)}
    row = encode_predict_response(outputs, ROW)
    assert row == {"predictions": [{"label": 1, "scores": [0.1, 0.9]}, {"label": 0, "scores": [0.5, 0.5]}]}
    columnar = encode_predict_response(outputs, COLUMNAR)
    assert columnar == {"outputs": {"label": [1, 0], "scores": [[0.1, 0.9], [0.5, 0.5]]}}
    assert encode_predict_response({"y": np.array([2.5, 3.0], np.float32)}, COLUMNAR) == {"outputs": [2.5, 3.0]}


@pytest.mark.parametrize(
    "array",
    [
        np.array([[0.1, 1 / 3, 1e-8, 3.4e38, -0.0, 5e-45]], np.float32),
        np.random.default_rng(0).standard_normal((4, 10)).astype(np.float32),
        np.random.default_rng(1).standard_normal((3, 2)),
        np.array([[1, -2], [3, 4]], np.int32),
        np.array([2**64 - 1], np.uint64),
        np.arange(20000, dtype=np.float32) / 7,  # beyond the shortest-float limit: exact values
        np.zeros((2, 0), np.float32),
        np.array([1.0, np.nan, np.inf, -np.inf], np.float32),  # TF Serving's tokens: general encoder
        np.array([1.1, 2.5], np.float16),
        np.array([True, False]),
        np.array([b"a", b"\xff"], dtype=object),
        np.array(2.5, np.float32),
        np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
    ],
)
@pytest.mark.parametrize("request_format", [ROW, COLUMNAR])
def test_the_serialized_body_is_the_encoded_response(array, request_format):
    def document(body: bytes) -> str:  # NaN != NaN: compare the canonical text of the documents
        return json.dumps(json.loads(body), sort_keys=True)

    outputs = {"y": array}
    try:
        expected = document(dumps(encode_predict_response(outputs, request_format)))
    except RequestError as error:
        with pytest.raises(RequestError, match=re.escape(error.message)):
            encode_predict_body(outputs, request_format)
        return
    assert document(encode_predict_body(outputs, request_format)) == expected
    two = {"a": np.array([[1.5], [2.0]], np.float32), "b": np.array([1, 2], np.int64)}
    assert json.loads(encode_predict_body(two, request_format)) == encode_predict_response(two, request_format)


def test_bytes_outputs_are_b64_and_text_outputs_are_strings():
    outputs = {"echo_bytes": np.array([b"\x00\x01"], dtype=object), "word": np.array([b"caf\xc3\xa9"], dtype=object)}
    response = encode_predict_response(outputs, ROW)
    assert response == {"predictions": [{"echo_bytes": {"b64": "AAE="}, "word": "café"}]}
    not_text = encode_predict_response({"word": np.array([b"\xff"], dtype=object)}, ROW)
    assert not_text == {"predictions": [{"b64": "/w=="}]}


def test_row_response_rejects_inconsistent_batch_sizes():
    with pytest.raises(RequestError, match="inconsistent batch size"):
        encode_predict_response({"a": np.zeros(2), "b": np.zeros(3)}, ROW)
    with pytest.raises(RequestError, match="no shape information"):
        encode_predict_response({"a": np.float32(1.0)}, ROW)


def test_examples_merge_context_and_keep_feature_kinds():
    from tensorflow.core.example import example_pb2

    serialized = decode_examples(
        {"context": {"country": "fr"}, "examples": [{"x": 1.5, "n": [1, 2], "raw": {"b64": "AAE="}}, {"x": [2.0]}]},
        method="classify",
    )
    first = example_pb2.Example.FromString(serialized[0]).features.feature
    assert list(first["x"].float_list.value) == [1.5]
    assert list(first["n"].int64_list.value) == [1, 2]
    assert list(first["raw"].bytes_list.value) == [b"\x00\x01"]
    assert list(first["country"].bytes_list.value) == [b"fr"]
    second = example_pb2.Example.FromString(serialized[1]).features.feature
    assert list(second["country"].bytes_list.value) == [b"fr"]


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        ({}, "key 'examples' is expected"),
        ({"examples": {}}, "to be an list/array"),
        ({"examples": []}, "empty array"),
        ({"examples": [3]}, "Example must be JSON object"),
        ({"examples": [{"x": [1, 2.5]}]}, "Unexpected element type in feature: x"),
        ({"examples": [{"x": None}]}, "unexpected JSON type: Null"),
        ({"examples": [{"x": [[1]]}]}, "unexpected JSON type: Array"),
        ({"context": {"x": 1}, "examples": [{"x": 2}]}, "appear in both 'context' and 'examples'"),
    ],
)
def test_malformed_examples(document, fragment):
    with pytest.raises(RequestError) as caught:
        decode_examples(document, method="classify")
    assert fragment in caught.value.message


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    document=st.dictionaries(st.sampled_from(["instances", "inputs", "signature_name", "x"]), json_values, max_size=3)
)
def test_fuzzed_documents_decode_or_raise_invalid_argument(document):
    body = json.dumps(document).encode()
    for sig in (SINGLE, MULTI, TEXT, FLAGS, IMAGE):
        try:
            inputs, _ = decode(parse_json_body(body), sig, may_contain_booleans=b"true" in body or b"false" in body)
        except RequestError as error:
            assert error.code == Code.INVALID_ARGUMENT
            continue
        for name, array in inputs.items():
            spec = sig.inputs[name]
            # Only the dtype is the decoder's to guarantee; the shape is fed as sent and the graph decides.
            assert array.dtype == spec.numpy_dtype


@settings(max_examples=100, deadline=None)
@given(document=st.dictionaries(st.text(max_size=5), json_values, max_size=4))
def test_body_parsing_matches_the_standard_library(document):
    # With or without the optional fast parser, parsing must equal json.loads exactly.
    body = json.dumps(document).encode()
    parsed = parse_json_body(body)
    assert json.dumps(parsed, sort_keys=True) == json.dumps(json.loads(body), sort_keys=True)


ALIASED = SignatureInfo(
    name="serving_default",
    method_name="tensorflow/serving/predict",
    inputs={"sepal_length_cm": TensorSpecInfo(key="sepal_length_cm", dtype="float32", shape=(-1,))},
    outputs={},
    aliases={"sepal length (cm)": "sepal_length_cm"},
)


def test_header_names_are_aliases_of_signature_keys_in_both_formats():
    rows, _ = decode({"instances": [{"sepal length (cm)": 5.1}, {"sepal_length_cm": 6.0}]}, ALIASED)
    columns, _ = decode({"inputs": {"sepal length (cm)": [5.1, 6.0]}}, ALIASED)
    np.testing.assert_array_equal(rows["sepal_length_cm"], np.array([5.1, 6.0], np.float32))
    np.testing.assert_array_equal(columns["sepal_length_cm"], rows["sepal_length_cm"])
    with pytest.raises(RequestError, match="given twice"):
        decode({"inputs": {"sepal length (cm)": [5.1], "sepal_length_cm": [5.1]}}, ALIASED)


def test_key_mismatch_names_the_inputs_as_the_client_wrote_them():
    two = dataclasses.replace(
        ALIASED,
        inputs={**ALIASED.inputs, "petal_width": TensorSpecInfo(key="petal_width", dtype="float32", shape=(-1,))},
    )
    with pytest.raises(RequestError) as caught:
        decode({"instances": [{"sepal length (cm)": 5.1}]}, two)
    message = str(caught.value)
    assert "keys must be equal to: petal_width,sepal length (cm)" in message
    assert "sepal length (cm)" in message.split("JSON object:")[1] and "sepal_length_cm" not in message


def test_example_features_accept_signature_keys_for_header_names():
    from tensorflow.core.example import example_pb2

    renames = {"sepal_length_cm": "sepal length (cm)"}
    serialized = decode_examples({"examples": [{"sepal_length_cm": 5.1}]}, method="classify", feature_names=renames)
    example = example_pb2.Example.FromString(serialized[0])
    assert list(example.features.feature) == ["sepal length (cm)"]
    with pytest.raises(RequestError, match="given twice"):
        decode_examples(
            {"examples": [{"sepal_length_cm": 5.1, "sepal length (cm)": 5.1}]}, method="classify", feature_names=renames
        )


@pytest.mark.parametrize(
    "body, message",
    [
        # TF Serving's json_tensor.cc: "JSON Parse error: " + RapidJSON's GetParseError_En + " at offset: N".
        (b"", "JSON Parse error: The document is empty. at offset: 0"),
        (b"{not json", "JSON Parse error: Missing a name for object member. at offset: 1"),
        (b'{"a" 1}', "JSON Parse error: Missing a colon after a name of object member. at offset: 5"),
        (b'{"a": 1 "b": 2}', "JSON Parse error: Missing a comma or '}' after an object member. at offset: 8"),
        (b'{"a": [1, 2 3]}', "JSON Parse error: Missing a comma or ']' after an array element. at offset: 12"),
        (b'{"a": tru}', "JSON Parse error: Invalid value. at offset: 6"),
        (b'{"a": "x', "JSON Parse error: Missing a closing quotation mark in string. at offset: 8"),
        (b'{"a": 1} x', "JSON Parse error: The document root must not be followed by other values. at offset: 9"),
        (b'{"a": "\\q"}', "JSON Parse error: Invalid escape character in string. at offset: 7"),
        (b'{"a": "\\u12"}', "JSON Parse error: Incorrect hex digit after \\u escape in string. at offset: 8"),
    ],
)
def test_malformed_json_is_worded_as_tf_serving_words_it(body, message):
    with pytest.raises(RequestError) as caught:
        parse_json_body(body)
    assert caught.value.message == message
