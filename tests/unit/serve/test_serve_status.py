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


def test_an_op_error_from_a_reloaded_loop_body_drops_tensorflows_no_traces_line(tmp_path):
    import tensorflow as tf

    class Images(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def decode_each(self, data):
            return tf.map_fn(tf.io.decode_png, data, fn_output_signature=tf.TensorSpec([None, None, None], tf.uint8))

    tf.saved_model.save(Images(), str(tmp_path))
    reloaded = tf.saved_model.load(str(tmp_path))
    with pytest.raises(tf.errors.OpError) as raised:
        reloaded.decode_each(tf.constant([b"not a png"]))
    # A reloaded function has no Python source to point at; TensorFlow writes this line instead.
    assert "<stack traces unavailable>" in str(raised.value)
    assert as_request_error(raised.value).message.startswith("Unknown image file format")


def test_any_other_exception_is_internal_and_names_its_type():
    mapped = as_request_error(KeyError("k"))
    assert mapped.code is Code.INTERNAL and mapped.http_status == 500
    assert mapped.message == "Internal error: KeyError: 'k'"
