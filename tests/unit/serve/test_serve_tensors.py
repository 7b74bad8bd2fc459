"""TensorProto conversions of the gRPC front end equal TensorFlow's own, for every dtype and shape."""

from __future__ import annotations

import numpy as np
import pytest

from tfpilot.serve.status import RequestError
from tfpilot.serve.tensors import array_to_tensor_proto, tensor_proto_to_array

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
SHAPES = [(), (1,), (3,), (2, 3), (1, 4, 4, 2), (0,), (2, 0, 3)]


@pytest.mark.parametrize("dtype", [*DTYPES, "bool", "complex64", "object"])
@pytest.mark.parametrize("shape", SHAPES)
def test_round_trips_equal_tensorflows_conversions(dtype, shape):
    import tensorflow as tf

    rng = np.random.default_rng(0)
    if dtype == "object":
        array = np.array([b"ab", b""] * 32, dtype=object)[: int(np.prod(shape))].reshape(shape)
    else:
        array = (rng.standard_normal(shape) * 100).astype(dtype)
    proto = array_to_tensor_proto(array)
    assert proto == tf.make_tensor_proto(array)
    back = tensor_proto_to_array(proto, name="x")
    expected = tf.make_ndarray(tf.make_tensor_proto(array))
    assert back.dtype == expected.dtype and back.shape == expected.shape
    np.testing.assert_array_equal(back, expected)
    if back.size:
        back.flat[0] = back.flat[-1]  # a writable copy, not a view of the request's bytes


def test_protos_written_with_repeated_fields_and_bad_sizes():
    import tensorflow as tf
    from tensorflow.core.framework import tensor_pb2, types_pb2

    # Clients may use float_val instead of tensor_content (and a single value to fill the shape).
    filled = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[1.5])
    filled.tensor_shape.dim.add(size=3)
    np.testing.assert_array_equal(tensor_proto_to_array(filled, name="x"), np.full(3, 1.5, np.float32))
    # tensor_content shorter than the shape says: TensorFlow's own error, as INVALID_ARGUMENT.
    short = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, tensor_content=b"\0" * 8)
    short.tensor_shape.dim.add(size=3)
    with pytest.raises(RequestError, match="input `x` is not a valid TensorProto"):
        tensor_proto_to_array(short, name="x")
    with pytest.raises(ValueError):
        tf.make_ndarray(short)


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint16", "bool", "object"])
@pytest.mark.parametrize("shape", [(), (1,), (2, 3)])
def test_filling_a_response_field_in_place_equals_a_copied_proto(dtype, shape):
    from tensorflow_serving.apis import predict_pb2

    values = np.arange(int(np.prod(shape))).reshape(shape)
    array = values.astype(bytes).astype(object) if dtype == "object" else values.astype(dtype)
    response = predict_pb2.PredictResponse()
    filled = array_to_tensor_proto(array, into=response.outputs["y"])
    assert filled is response.outputs["y"]
    assert response.outputs["y"] == array_to_tensor_proto(array)
    # Fortran order is written as C order, as tf.make_tensor_proto writes it.
    fortran = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(tensor_proto_to_array(array_to_tensor_proto(fortran), name="y"), fortran)
