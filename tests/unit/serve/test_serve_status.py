"""as_request_error: the one mapping from any exception to the status a client sees."""

from __future__ import annotations

import pytest

from tfpilot.serve.status import Code, RequestError, as_request_error


def test_request_errors_keep_their_code_and_http_status():
    error = RequestError(Code.RESOURCE_EXHAUSTED, "too big", http_status=413)
    assert as_request_error(error) is error
    assert (error.http_status, error.rest_body()) == (413, {"error": "too big"})
    assert RequestError.not_found("gone").http_status == 404


def test_tf_op_errors_keep_their_canonical_code_without_the_eager_preamble():
    import tensorflow as tf

    @tf.function
    def decode(data):
        return tf.io.decode_png(data)

    with pytest.raises(tf.errors.OpError) as raised:
        decode(tf.constant(b"not a png"))
    mapped = as_request_error(raised.value)
    assert mapped.code is Code.INVALID_ARGUMENT and mapped.http_status == 400
    assert mapped.message.startswith("Unknown image file format")  # the op's words, nothing before them

    with pytest.raises(tf.errors.OpError) as raised:
        tf.debugging.assert_equal(tf.constant(1), tf.constant(2), message="values differ")
    assert as_request_error(raised.value).message.startswith("values differ")


def test_any_other_exception_is_internal_and_names_its_type():
    mapped = as_request_error(KeyError("k"))
    assert mapped.code is Code.INTERNAL and mapped.http_status == 500
    assert mapped.message == "Internal error: KeyError: 'k'"
