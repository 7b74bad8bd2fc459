"""The numeric fast path of REST predict bodies: it answers exactly what the general JSON path
answers, or steps aside (None) and lets the general path decide."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfpilot.serve.protocol import (
    COLUMNAR,
    ROW,
    decode_predict_request,
    numeric_inputs,
    parse_json_body,
    parse_numeric_body,
    signature_name_of,
)
from tfpilot.serve.servable import SignatureInfo, TensorSpecInfo
from tfpilot.serve.status import RequestError


def signature(**inputs: str) -> SignatureInfo:
    specs = {name: TensorSpecInfo(key=name, dtype=dtype, shape=None) for name, dtype in inputs.items()}
    return SignatureInfo(name="serving_default", method_name="tensorflow/serving/predict", inputs=specs, outputs={})


SIGNATURES = [signature(x=dtype) for dtype in ("float32", "float64", "int32", "int64", "uint8", "float16", "string")]
SIGNATURES.append(signature(a="float32", b="float32"))


def general(body: bytes, sig: SignatureInfo):
    """What the REST handler answers without the fast path: (name, inputs, format) or the error."""
    try:
        document = parse_json_body(body)
        name = signature_name_of(document)
        booleans = b"true" in body or b"false" in body
        inputs, request_format = decode_predict_request(document, sig, may_contain_booleans=booleans)
    except RequestError as error:
        return error
    return name, inputs, request_format


def assert_agrees(body: bytes) -> bool:
    """Checks every signature; returns whether the fast path answered for any."""
    parsed = parse_numeric_body(body)
    if parsed is not None:
        # A body the fast path takes is valid JSON, and names the same signature.
        assert signature_name_of(parse_json_body(body)) == parsed.signature_name
    answered = False
    for sig in SIGNATURES:
        expected = general(body, sig)
        if parsed is None:
            continue
        fast = numeric_inputs(parsed, sig)
        if fast is None:
            continue
        answered = True
        assert not isinstance(expected, RequestError), (body, expected)
        name, inputs, request_format = expected
        assert (parsed.signature_name, parsed.request_format) == (name, request_format)
        assert fast.keys() == inputs.keys()
        for key, array in inputs.items():
            assert fast[key].dtype == array.dtype and fast[key].shape == array.shape
            np.testing.assert_array_equal(fast[key], array)
    return answered


def test_the_common_bodies_take_the_fast_path():
    example = [[[0.1, -2.5e-3, 3, 1e5]] * 2] * 3
    for document in (
        {"instances": [example]},
        {"signature_name": "serving_default", "instances": [example, example]},
        {"inputs": example, "signature_name": "other"},
        {"instances": [1.0, 2.0, 5.0]},
    ):
        for dumps in (json.dumps, lambda d: json.dumps(d, separators=(",", ":")), lambda d: json.dumps(d, indent=2)):
            body = dumps(document).encode()
            assert parse_numeric_body(body) is not None, body
            assert assert_agrees(body)
    parsed = parse_numeric_body(b'{"inputs": [[1, 2], [3, 4]], "signature_name": "other"}')
    assert parsed is not None and (parsed.signature_name, parsed.request_format, parsed.shape) == (
        "other",
        COLUMNAR,
        (2, 2),
    )
    assert parse_numeric_body(b'{"instances":[1]}').request_format == ROW


@pytest.mark.parametrize(
    "body",
    [
        b'{"instances": [[1, 2]3, [4, 5]]}',  # brackets removed naively would read 23
        b'{"instances": [1[], [2]]}',
        b'{"instances": [[1, 2], [3]]}',  # ragged
        b'{"instances": [[1, 2], 3]}',
        b'{"instances": []}',
        b'{"instances": [[]]}',
        b'{"instances": [[1, 2], [3, ]4]}',  # an empty slot and a number outside the slots
        b'{"instances": [[], [1]]}',
        b'{"instances": [[1], []]}',
        b'{"instances": [[], []]}',
        b'{"instances": [[1, 2], [, 3]4]}',
        b'{"instances": [1, 2,]}',
        b'{"instances": [, 1]}',
        b'{"instances": [1 2]}',
        b'{"instances": [+1]}',
        b'{"instances": [.5]}',
        b'{"instances": [5.]}',
        b'{"instances": [01]}',
        b'{"instances": [1e5e5]}',
        b'{"instances": [--1]}',
        b'{"instances": [NaN]}',
        b'{"instances": [Infinity]}',
        b'{"instances": [true]}',
        b'{"instances": ["1"]}',
        b'{"instances": [123456789012345678901234]}',
        b'{"instances": [1]}, "x": [2]}',
        b'{"instances": [1], "inputs": [2]}',
        b'{"signature_name": "a", "instances": [1], "signature_name": "b"}',
        b'{"instances": [1]\x0b}',
        b'{"instances": 1}',
        b'["instances", [1]]',
    ],
)
def test_anything_unusual_is_left_to_the_general_path(body):
    assert parse_numeric_body(body) is None
    assert_agrees(body)


def test_values_the_dtype_cannot_hold_exactly_are_left_to_the_general_path():
    float32, int32, uint8 = SIGNATURES[0], SIGNATURES[2], SIGNATURES[4]
    for body, sig in (
        (b'{"instances": [16777217]}', float32),  # 2**24 + 1: lossy in float32
        (b'{"instances": [1e39]}', float32),
        (b'{"instances": [2147483648]}', int32),
        (b'{"instances": [-1]}', uint8),
        (b'{"instances": [1.5]}', int32),
    ):
        parsed = parse_numeric_body(body)
        assert parsed is not None and numeric_inputs(parsed, sig) is None
        assert isinstance(general(body, sig), RequestError)


numbers = st.one_of(
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.floats(-1e3, 1e3, width=32),
)


@st.composite
def bodies(draw):
    shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
    flat = draw(st.lists(numbers, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    nested = np.array(flat, dtype=object).reshape(shape).tolist()
    if draw(st.booleans()):  # sometimes ragged
        target = nested
        while isinstance(target, list) and isinstance(target[0], list):
            target = target[0]
        target.append(draw(numbers)) if draw(st.booleans()) else target.pop()
    key = draw(st.sampled_from(["instances", "inputs"]))
    document = {key: nested}
    where = draw(st.sampled_from(["none", "before", "after"]))
    if where == "before":
        document = {"signature_name": draw(st.sampled_from(["", "serving_default", "other"])), key: nested}
    elif where == "after":
        document["signature_name"] = "other"
    separators = draw(st.sampled_from([(", ", ": "), (",", ":"), (" , ", " : ")]))
    body = json.dumps(document, separators=separators, indent=draw(st.sampled_from([None, 1]))).encode()
    # Mutate a character now and then: the fast path must still agree or step aside.
    for _ in range(draw(st.integers(0, 2))):
        position = draw(st.integers(0, len(body)))
        replacement = draw(st.sampled_from([b"", b"[", b"]", b",", b".", b"-", b"+", b"e", b"0", b" ", b"\n", b'"']))
        body = body[:position] + replacement + body[position + draw(st.integers(0, 1)) :]
    return body


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies())
def test_fast_path_equals_the_general_path(body):
    assert_agrees(body)


def test_a_shape_seen_before_is_parsed_the_same_way():
    # The second body has the first one's skeleton: its shape comes from the cache.
    first = parse_numeric_body(b'{"instances": [[1.5, 2], [3, 4]]}')
    second = parse_numeric_body(b'{"instances": [[5, 6.25], [7, -8e1]]}')
    assert first is not None and second is not None
    assert first.shape == second.shape == (2, 2)
    np.testing.assert_array_equal(second.values, [5, 6.25, 7, -80])
    assert second.values.dtype == np.float64
    # A skeleton seen as irregular stays irregular, and an empty slot is refused either way.
    for _ in range(2):
        assert parse_numeric_body(b'{"instances": [[1, 2], [3]]}') is None
        assert parse_numeric_body(b'{"instances": [[1, 2], [3, ]4]}') is None
    integers = parse_numeric_body(b'{"instances": [[1, 2], [3, 4]]}')
    assert integers is not None and integers.values.dtype == np.int64


def test_doubles_as_python_prints_them_take_the_fast_path():
    # repr of a double holds up to 17 significant digits, so 0.0012345678901234567 has a run of
    # 19 digits after the point: part of a float, which orjson and json round alike. Only an
    # integer (or exponent) that long must take the general path.
    values = np.random.default_rng(0).standard_normal((2, 8, 8, 4)) * np.logspace(-6, 3, 4)
    body = json.dumps({"instances": values.tolist()}).encode()
    assert b"0.00" in body
    parsed = parse_numeric_body(body)
    assert parsed is not None and parsed.shape == (2, 8, 8, 4)
    np.testing.assert_array_equal(parsed.values.reshape(parsed.shape), values)
    assert assert_agrees(body)
    for long_number in (b"1234567890123456789", b"-1234567890123456789", b"1e1234567890123456789"):
        body = b'{"instances": [0.0012345678901234567, ' + long_number + b"]}"
        assert parse_numeric_body(body) is None
        assert_agrees(body)
    assert parse_json_body(b'{"instances": [0.00123456789012345678901]}') == {"instances": [0.00123456789012345678901]}
