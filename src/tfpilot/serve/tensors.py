"""TensorProto and tf.Example plumbing shared by the gRPC front end and warmup replay."""

from __future__ import annotations

from typing import Any

import numpy as np

from tfpilot.serve.servable import SignatureInfo
from tfpilot.serve.status import RequestError

__all__ = ["tensor_proto_to_array", "array_to_tensor_proto", "serialized_examples", "check_inputs"]


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


def check_inputs(signature: SignatureInfo, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Exact key, dtype and shape checks for typed (gRPC) inputs; messages quote the signature."""
    missing = sorted(set(signature.inputs) - set(inputs))
    unknown = sorted(set(inputs) - set(signature.inputs))
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if unknown:
            parts.append(f"unknown {', '.join(unknown)}")
        raise RequestError.invalid(
            f"input mismatch ({'; '.join(parts)}); signature `{signature.name}` expects {signature.describe_inputs()}"
        )
    checked = {}
    for name, array in inputs.items():
        spec = signature.inputs[name]
        expected = spec.numpy_dtype
        got = array.dtype
        same = got == expected or (expected == np.dtype(object) and got.kind in "OSU")
        if not same:
            got_name = "string" if got.kind in "OSU" else got.name
            raise RequestError.invalid(f"input `{name}` expects {spec.describe()}, got {got_name}")
        if expected == np.dtype(object) and got.kind != "O":
            array = array.astype(object)
        # Shapes are not checked here: TF Serving feeds the request tensors and lets the graph decide
        # (its quick start sends [1.0, 2.0, 5.0] to an input declared [-1, 1]); Servable.run turns a
        # shape the signature refuses into INVALID_ARGUMENT.
        checked[name] = array
    return checked
