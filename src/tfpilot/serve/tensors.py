"""TensorProto and tf.Example plumbing shared by the gRPC front end and warmup replay.

The input check itself is :meth:`SignatureInfo.check_inputs`, shared with REST.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from tfpilot.serve.status import RequestError

__all__ = ["tensor_proto_to_array", "array_to_tensor_proto", "serialized_examples"]


# DataType enum <-> numpy dtype for the types whose TensorProto carries raw bytes in
# tensor_content (what tf.make_tensor_proto writes for numeric arrays). Converting those by
# hand costs ~5 us where tf.make_tensor_proto / tf.make_ndarray cost 20-40 us per tensor, on
# the event loop, for every gRPC request.
_RAW_TYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_raw_by_enum: dict[int, tuple[np.dtype, np.dtype]] = {}  # enum -> (wire dtype, native dtype)
_enum_by_dtype: dict[np.dtype, int] = {}


def _raw_tables() -> None:
    import tensorflow as tf

    for name in _RAW_TYPES:
        dtype = np.dtype(name)
        enum = tf.dtypes.as_dtype(dtype).as_datatype_enum
        # tensor_content is little-endian
        _raw_by_enum[enum] = (dtype.newbyteorder("<"), dtype.newbyteorder("="))
        if dtype.isnative and name != "uint16":  # tf.make_tensor_proto writes uint16 as int_val
            _enum_by_dtype[dtype] = enum


def tensor_proto_to_array(proto: Any, *, name: str) -> np.ndarray:
    if not _raw_by_enum:
        _raw_tables()
    types = _raw_by_enum.get(proto.dtype)
    if types is not None:
        content = proto.tensor_content  # a upb message copies the bytes on every access: once
        tensor_shape = proto.tensor_shape
        if content and not tensor_shape.unknown_rank:
            wire, native = types
            shape = [dim.size for dim in tensor_shape.dim]
            if min(shape, default=0) >= 0 and len(content) == math.prod(shape) * wire.itemsize:
                return np.frombuffer(content, dtype=wire).astype(native, copy=True).reshape(shape)
    import tensorflow as tf

    try:
        array: np.ndarray = tf.make_ndarray(proto)
        return array
    except Exception as error:  # malformed protos raise TypeError/ValueError from numpy
        raise RequestError.invalid(f"input `{name}` is not a valid TensorProto: {error}") from None


def array_to_tensor_proto(array: np.ndarray, *, into: Any = None) -> Any:
    """``array`` as a TensorProto; ``into`` (a message field, say) is filled in place instead
    of building a proto that the caller would then have to copy."""
    if not _raw_by_enum:
        _raw_tables()
    enum = _enum_by_dtype.get(array.dtype)
    # As tf.make_tensor_proto: raw bytes only for more than one element (a scalar goes in *_val).
    if enum is not None and array.size > 1 and sys.byteorder == "little":
        if into is None:
            from tensorflow.core.framework import tensor_pb2

            into = tensor_pb2.TensorProto()
        into.dtype = enum
        into.tensor_content = array.tobytes()  # C order whatever the array's layout
        dims = into.tensor_shape.dim
        for size in array.shape:
            dims.add(size=size)
        return into
    import tensorflow as tf

    proto = tf.make_tensor_proto(array)
    if into is None:
        return proto
    into.CopyFrom(proto)
    return into


def serialized_examples(input_proto: Any) -> list[bytes]:
    """tensorflow.serving.Input -> serialized tf.Examples, context merged as TF Serving does.

    TF Serving concatenates the serialized context and example; protobuf's merge-on-parse
    then gives each example the context's features (the example's own win on a clash).
    """
    kind = input_proto.WhichOneof("kind")
    if kind == "example_list":
        examples = [example.SerializeToString() for example in input_proto.example_list.examples]
    elif kind == "example_list_with_context":
        context = input_proto.example_list_with_context.context.SerializeToString()
        examples = [context + example.SerializeToString() for example in input_proto.example_list_with_context.examples]
    else:
        raise RequestError.invalid("Input is empty: set example_list or example_list_with_context")
    if not examples:
        raise RequestError.invalid("Input is empty: it holds no examples")
    return examples
