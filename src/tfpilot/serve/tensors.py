"""TensorProto and tf.Example plumbing shared by the gRPC front end and warmup replay.

The input check itself is :meth:`SignatureInfo.check_inputs`, shared with REST.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfpilot.serve.status import RequestError

__all__ = ["tensor_proto_to_array", "array_to_tensor_proto", "serialized_examples"]


def tensor_proto_to_array(proto: Any, *, name: str) -> np.ndarray:
    import tensorflow as tf

    try:
        array: np.ndarray = tf.make_ndarray(proto)
        return array
    except Exception as error:  # malformed protos raise TypeError/ValueError from numpy
        raise RequestError.invalid(f"input `{name}` is not a valid TensorProto: {error}") from None


def array_to_tensor_proto(array: np.ndarray) -> Any:
    import tensorflow as tf

    return tf.make_tensor_proto(array)


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
