"""TF Serving's REST JSON codec: requests to arrays and tf.Examples, results back to JSON.

Follows TF Serving's handler code (json_tensor.cc): row ("instances") and columnar ("inputs")
formats, {"b64": ...} binary strings, NaN/Infinity tokens, "results" for classify/regress,
outputs named ``*_bytes`` written as b64. Errors are INVALID_ARGUMENT RequestErrors whose
message names the input and quotes what the signature expects.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import math
import re
from typing import Any

import numpy as np

from tfpilot.serve.servable import SignatureInfo, TensorSpecInfo
from tfpilot.serve.status import RequestError

_orjson: Any
try:  # optional: parses numeric arrays ~5x faster than the standard library
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None

__all__ = [
    "ROW",
    "COLUMNAR",
    "parse_json_body",
    "signature_name_of",
    "decode_predict_request",
    "NumericBody",
    "parse_numeric_body",
    "numeric_inputs",
    "encode_predict_response",
    "encode_predict_body",
    "decode_examples",
    "encode_tensor",
    "dumps",
]

ROW = "row"
COLUMNAR = "columnar"

# TF's DataTypeString names, used in messages so they read like TF Serving's.
_TF_TYPE_NAME = {"float32": "float", "float64": "double", "float16": "half"}
_FLOAT_TYPES = {"float16", "float32", "float64", "bfloat16", "half"}
_INT_TYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
# Largest integer each float type holds exactly (TF Serving rejects lossy conversions).
_EXACT_INT = {"float32": 2**24, "float64": 2**53}
# float32 outputs are printed in their shortest round-trip form (as TF Serving does) up to this
# many elements; beyond it the exact double value is printed, which is lossless and 30x cheaper.
_SHORTEST_FLOAT_LIMIT = 16384


def dumps(document: Any) -> bytes:
    # allow_nan (the default) writes NaN / Infinity / -Infinity, TF Serving's tokens.
    return json.dumps(document, ensure_ascii=False).encode("utf-8")


def _json_type(value: Any) -> str:
    if value is None:
        return "Null"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, list):
        return "Array"
    if isinstance(value, str):
        return "String"
    return "Number"


def _quote(value: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_b64(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("b64"), str)


def _decode_b64(value: dict[str, str]) -> bytes:
    text = value["b64"]
    try:
        # URL-safe alphabet too: TF Serving's absl::Base64Unescape accepts both via WebSafe.
        if "-" in text or "_" in text:
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise RequestError.invalid(f"Unable to base64 decode: {_quote(value)}") from None


# --------------------------------------------------------------------------------- requests

# orjson reads integers beyond 64 bits as floats where json keeps them exact; bodies with such
# long integers take the standard parser so both paths give the same document. (translate +
# substring search is ~20x faster than a regex over a large body.) A run of 19+ digits right
# after a point or right before a point or an exponent is part of a float, which both parsers
# round the same way: a float64 printed by Python (0.0012345678901234567) has such runs, and
# 1024 random doubles almost always hold one.
_DIGITS_TO_ONE = bytes(1 if 48 <= byte <= 57 else 0 for byte in range(256))
_LONG_DIGIT_RUN = b"\x01" * 19
_FLOAT_AFTER = (b".", b"e", b"E")


def _has_long_number(body: bytes) -> bool:
    """Whether ``body`` holds a run of 19+ digits that is not the fraction or the integer part
    of a float (an integer, an exponent, or digits inside a string: the standard parser)."""
    digits = body.translate(_DIGITS_TO_ONE)
    start = digits.find(_LONG_DIGIT_RUN)
    while start >= 0:
        end = start + len(_LONG_DIGIT_RUN)
        while end < len(digits) and digits[end] == 1:
            end += 1
        if body[start - 1 : start] != b"." and body[end : end + 1] not in _FLOAT_AFTER:
            return True
        start = digits.find(_LONG_DIGIT_RUN, end)
    return False


# Python's json messages -> RapidJSON's GetParseError_En, which TF Serving's json_tensor.cc puts in
# "JSON Parse error: <message> at offset: <n>".
_RAPIDJSON_MESSAGES = {
    "Expecting value": "Invalid value.",
    "Expecting property name enclosed in double quotes": "Missing a name for object member.",
    "Expecting ':' delimiter": "Missing a colon after a name of object member.",
    "Unterminated string starting at": "Missing a closing quotation mark in string.",
    "Invalid \\escape": "Invalid escape character in string.",
    "Extra data": "The document root must not be followed by other values.",
}


def _innermost_container(text: str, end: int) -> str:
    """`{` or `[`: the container open at `end` (strings skipped), to word a missing comma as RapidJSON does."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text[:end]:
        if in_string:
            escaped = not escaped and char == "\\"
            in_string = escaped or char != '"'
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append(char)
        elif char in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else "{"


def _json_error(error: json.JSONDecodeError) -> str:
    if error.msg.startswith("Invalid \\u"):  # a \u escape without four hex digits
        message = "Incorrect hex digit after \\u escape in string."
    elif error.msg == "Expecting ',' delimiter":
        message = (
            "Missing a comma or ']' after an array element."
            if _innermost_container(error.doc, error.pos) == "["
            else "Missing a comma or '}' after an object member."
        )
    else:
        message = _RAPIDJSON_MESSAGES.get(error.msg, error.msg)
    offset = len(error.doc) if error.msg.startswith("Unterminated string") else error.pos
    return f"JSON Parse error: {message} at offset: {offset}"


def parse_json_body(body: bytes) -> dict[str, Any]:
    if not body or not body.strip():
        raise RequestError.invalid("JSON Parse error: The document is empty. at offset: 0")
    if _orjson is not None and not _has_long_number(body):
        try:
            document = _orjson.loads(body)
        except _orjson.JSONDecodeError:
            document = None  # NaN/Infinity tokens, huge numbers, or invalid: the standard parser decides
        if isinstance(document, dict):
            return document
    try:
        document = json.loads(body)
    except json.JSONDecodeError as error:
        raise RequestError.invalid(_json_error(error)) from None
    except (UnicodeDecodeError, ValueError) as error:
        raise RequestError.invalid(f"JSON Parse error: {error}") from None
    except RecursionError:
        raise RequestError.invalid("JSON Parse error: document nested too deeply") from None
    if not isinstance(document, dict):
        raise RequestError.invalid(f"JSON Value: {_quote(document)} Is not object")
    return document


# ------------------------------------------------------------------ numeric fast path
#
# Most predict bodies are one numeric tensor: {"instances": [[0.1, ...], ...]}, optionally with a
# signature_name. Parsing them into nested Python lists and converting those with numpy costs
# more than everything else the server does per request; this path instead checks the bracket
# structure with bytes operations and parses the numbers as one flat JSON array. It only answers
# when the body is valid JSON whose decoding is certain to equal the general path's; anything else
# (other keys, strings, booleans, NaN tokens, ragged or empty lists, pretty-printing inside
# numbers, out-of-range values) returns None and takes the general path, which has the words for
# every error.

_WS = rb"[ \t\n\r]*"  # JSON's whitespace (regex \s would also accept \v and \f)
_SIGNATURE = rb'"signature_name"' + _WS + rb":" + _WS + rb'"([A-Za-z0-9_\-./]*)"'
_FAST_HEAD = re.compile(
    _WS
    + rb"\{"
    + _WS
    + rb"(?:"
    + _SIGNATURE
    + _WS
    + rb","
    + _WS
    + rb')?"(instances|inputs)"'
    + _WS
    + rb":"
    + _WS
    + rb"(?=\[)"
)
_FAST_TAIL = re.compile(rb"\]" + _WS + rb"(?:," + _WS + _SIGNATURE + _WS + rb")?\}" + _WS + rb"\Z")
_NUMBER_AND_SPACE = b"0123456789.eE+- \t\n\r"
# Number characters -> "n", brackets and commas kept, whitespace deleted: the token classes.
_CLASSES = bytes(
    ord("n") if chr(byte) in "0123456789.eE+-" else byte if chr(byte) in "[]," else 0 for byte in range(256)
)
_BRACKETS_TO_SPACE = bytes(32 if chr(byte) in "[]" else byte for byte in range(256))


@dataclasses.dataclass(frozen=True)
class NumericBody:
    """A body holding one regular numeric tensor under "instances" (ROW) or "inputs" (COLUMNAR)."""

    signature_name: str
    request_format: str
    values: np.ndarray  # flat: int64 when every number is an integer, else float64
    shape: tuple[int, ...]


def _regular_shape(skeleton: bytes) -> tuple[int, ...] | None:
    """The shape of a nested list whose brackets and commas are ``skeleton``, if it is regular."""
    rank = len(skeleton) - len(skeleton.lstrip(b"["))
    dims: list[int] = []
    inner = 0  # length of the first element's skeleton one level down (numbers have none)
    for level in range(rank, 0, -1):
        close = skeleton.find(b"]" * (rank - level + 1))
        if close < 0:
            return None
        length = close + (rank - level) - (level - 1) + 1
        size, remainder = divmod(length - 1, inner + 1)
        if remainder or size < 1:
            return None
        dims.append(size)
        inner = length
    dims.reverse()
    expected = b""
    for size in reversed(dims):
        expected = b"[" + b",".join([expected] * size) + b"]"
    return tuple(dims) if expected == skeleton else None


# Skeletons (brackets and commas, numbers removed) already seen -> their shape (None: irregular).
# A server sees few distinct request shapes; checking one costs more than parsing its numbers.
_SHAPES: dict[bytes, tuple[int, ...] | None] = {}
_SHAPES_LIMIT = 256
_SHAPE_SKELETON_LIMIT = 1 << 16  # longer skeletons are checked every time rather than kept
_STRUCTURE = b"[],"
_FLOAT_MARKS = (b".", b"e", b"E")
_NUMBER_RUN = b"n" * 19  # as long as _LONG_DIGIT_RUN: only such a body needs the digit check


def _skeleton_shape(skeleton: bytes) -> tuple[int, ...] | None:
    """The shape of a regular skeleton; None if it is irregular or holds other characters."""
    shape = _SHAPES.get(skeleton, ())
    if shape != ():
        return shape
    shape = None if skeleton.translate(None, _STRUCTURE) else _regular_shape(skeleton)
    if len(skeleton) <= _SHAPE_SKELETON_LIMIT:
        if len(_SHAPES) >= _SHAPES_LIMIT:
            _SHAPES.clear()  # many shapes: start over rather than grow without bound
        _SHAPES[skeleton] = shape
    return shape


# "n[" and "]n" as little-endian byte pairs.
_NUMBER_OPEN = ord("n") | ord("[") << 8
_CLOSE_NUMBER = ord("]") | ord("n") << 8


def _misplaced_number(classes: bytes) -> bool:
    """Whether ``classes`` holds "n[" or "]n". A substring search costs ~4 ns per byte here,
    where long runs of "n" (a float64 is ~19 of them) defeat its skips (70 us for 1024
    random doubles); comparing the byte pairs at even and odd offsets costs a fraction."""
    pairs = [np.frombuffer(classes, np.uint16, len(classes) // 2)]
    if len(classes) > 2:
        pairs.append(np.frombuffer(classes, np.uint16, (len(classes) - 1) // 2, 1))
    return any(bool((view == _NUMBER_OPEN).any() or (view == _CLOSE_NUMBER).any()) for view in pairs)


def parse_numeric_body(body: bytes) -> NumericBody | None:
    """The body as one numeric tensor, or None when the general parser must decide."""
    head = _FAST_HEAD.match(body)
    if head is None:
        return None
    tail_start = max(head.end(), len(body) - 256)
    tail = _FAST_TAIL.search(body, tail_start)
    if tail is None or (head.group(1) is not None and tail.group(1) is not None):
        return None
    middle = body[head.end() : tail.start() + 1]
    # Strings, booleans, objects, NaN tokens leave characters other than brackets and commas.
    shape = _skeleton_shape(middle.translate(None, _NUMBER_AND_SPACE))
    if shape is None:
        return None
    classes = middle.translate(_CLASSES, b" \t\n\r")
    # A number right before "[" or after "]" sits outside the skeleton's slots. (An empty list
    # leaves a slot empty: then either the count below differs, or some number sits outside.)
    if _misplaced_number(classes):
        return None
    if _NUMBER_RUN in classes and _has_long_number(middle):
        return None  # integers orjson would round
    # Brackets become spaces (never deleted: "[1,2]3" must not read as 23), so the numbers parse
    # as one flat JSON array, whose parser enforces JSON's number syntax; the outer pair stays.
    flat_text = bytearray(middle.translate(_BRACKETS_TO_SPACE))
    flat_text[0], flat_text[-1] = 0x5B, 0x5D  # "[" ... "]"
    count = math.prod(shape)
    try:
        flat = _orjson.loads(flat_text) if _orjson is not None else json.loads(flat_text)
        if len(flat) != count:
            return None
        # A number with a point or an exponent is a float; without any, every value is an int.
        floats = any(mark in middle for mark in _FLOAT_MARKS)
        values = np.fromiter(flat, np.float64 if floats else np.int64, count)
    except (ValueError, TypeError, OverflowError):
        return None
    signature_name = (head.group(1) or tail.group(1) or b"").decode("ascii") or "serving_default"
    request_format = ROW if head.group(2) == b"instances" else COLUMNAR
    return NumericBody(signature_name, request_format, values, shape)


def numeric_inputs(parsed: NumericBody, signature: SignatureInfo) -> dict[str, np.ndarray] | None:
    """The signature's inputs from a numeric body, when it has exactly one numeric input and every
    value converts exactly (as the general path decides); None sends the body the general way."""
    if len(signature.inputs) != 1:
        return None
    ((name, spec),) = signature.inputs.items()
    values = parsed.values
    if spec.dtype in ("float32", "float64"):
        if values.size and (values.dtype.kind == "i" or spec.dtype == "float32"):
            # Integers beyond the exact range, or floats beyond float32's: the general path's words.
            if float(np.abs(values).max()) > _EXACT_INT[spec.dtype]:
                return None
    elif spec.dtype in _INT_TYPES:
        info = np.iinfo(spec.numpy_dtype)
        if values.dtype.kind != "i" or (values.size and (values.min() < info.min or values.max() > info.max)):
            return None
    else:
        return None
    return {name: values.astype(spec.numpy_dtype, copy=False).reshape(parsed.shape)}


def signature_name_of(document: dict[str, Any]) -> str:
    name = document.get("signature_name", "")
    if not isinstance(name, str):
        raise RequestError.invalid(
            f"JSON Value: {_quote(name)} not formatted correctly. 'signature_name' key must be a string value."
        )
    return name or "serving_default"


def decode_predict_request(
    document: dict[str, Any], signature: SignatureInfo, *, may_contain_booleans: bool = True
) -> tuple[dict[str, np.ndarray], str]:
    """Arrays for each signature input, and the request format (ROW or COLUMNAR).

    ``may_contain_booleans`` False lets numeric inputs skip the per-value check (numpy would
    otherwise silently read ``true`` as 1); the REST handler derives it from the raw body.
    """
    if not signature.inputs:
        raise RequestError.invalid(f"Failed to get input map for signature: {signature.name}")
    has_instances, has_inputs = "instances" in document, "inputs" in document
    if has_instances and has_inputs:
        raise RequestError.invalid(
            "Not formatted correctly expecting only one of 'inputs' or 'instances' keys to exist"
        )
    if has_instances:
        return _decode_rows(document["instances"], signature, may_contain_booleans), ROW
    if has_inputs:
        return _decode_columns(document["inputs"], signature, may_contain_booleans), COLUMNAR
    raise RequestError.invalid(
        f"Missing 'inputs' or 'instances' key; signature `{signature.name}` expects {signature.describe_inputs()}"
    )


def _decode_rows(instances: Any, signature: SignatureInfo, booleans: bool) -> dict[str, np.ndarray]:
    if not isinstance(instances, list):
        raise RequestError.invalid("Excepting 'instances' to be an list/array")
    if not instances:
        raise RequestError.invalid("No values in 'instances' array")
    names = sorted(signature.inputs)
    named = isinstance(instances[0], dict) and not _is_b64(instances[0])
    if not named and len(names) > 1:
        raise RequestError.invalid(
            "instances is a plain list, but expecting list of objects as multiple input tensors required as per "
            f"tensorinfo_map; signature `{signature.name}` expects {signature.describe_inputs()}"
        )
    if named:
        columns: dict[str, list[Any]] = {name: [] for name in names}
        for index, item in enumerate(instances):
            if not isinstance(item, dict) or _is_b64(item):
                raise RequestError.invalid(f"Expecting object but got list at item {index} of input list")
            sent, item = item, signature.canonical(item)
            if set(item) != set(names):
                # Quote the object as sent and the keys as the client knows them (CSV header spelling).
                expected = sorted(signature.written_name(name) for name in names)
                raise RequestError.invalid(
                    f"Failed to process element: {index} of 'instances' list. JSON object: {_quote(sent)} keys "
                    f"must be equal to: {','.join(expected)}"
                )
            for name in names:
                columns[name].append(item[name])
    else:
        for index, item in enumerate(instances):
            if isinstance(item, dict) and not _is_b64(item):
                raise RequestError.invalid(f"Expecting value/list but got object at item {index} of input list")
        columns = {names[0]: instances}
    return {name: to_array(column, signature.inputs[name], booleans) for name, column in columns.items()}


def _decode_columns(value: Any, signature: SignatureInfo, booleans: bool) -> dict[str, np.ndarray]:
    names = sorted(signature.inputs)
    if not isinstance(value, dict) or _is_b64(value):
        if len(names) > 1:
            raise RequestError.invalid(
                "inputs is a plain value/list, but expecting an object as multiple input tensors required as per "
                f"tensorinfo_map; signature `{signature.name}` expects {signature.describe_inputs()}"
            )
        return {names[0]: to_array(value, signature.inputs[names[0]], booleans)}
    value = signature.canonical(value)
    arrays = {}
    for name in names:
        if name not in value:
            raise RequestError.invalid(
                f"Missing named input: {name} in 'inputs' object; signature `{signature.name}` expects "
                f"{signature.describe_inputs()}"
            )
        arrays[name] = to_array(value[name], signature.inputs[name], booleans)
    return arrays


def _expects(spec: TensorSpecInfo) -> str:
    return f"input `{spec.key}` expects {spec.describe()}"


def to_array(value: Any, spec: TensorSpecInfo, may_contain_booleans: bool = True) -> np.ndarray:
    """Convert one JSON tensor (scalar or nested lists) to an array of the spec's dtype."""
    array = None
    if spec.dtype in _FLOAT_TYPES or spec.dtype in _INT_TYPES:
        array = _numeric_fast_path(value, spec, may_contain_booleans)
    elif spec.dtype == "bool" and not isinstance(value, dict):
        try:
            candidate = np.asarray(value)
        except (ValueError, TypeError, OverflowError):
            candidate = None
        if candidate is not None and candidate.dtype.kind == "b":
            array = candidate
    if array is None:
        array = _slow_path(value, spec)
    # The shape is the graph's to judge, as in TF Serving (see SignatureInfo.check_inputs).
    return array


def _numeric_fast_path(value: Any, spec: TensorSpecInfo, may_contain_booleans: bool) -> np.ndarray | None:
    if may_contain_booleans or isinstance(value, dict):
        return None
    try:
        candidate = np.asarray(value)
    except (ValueError, TypeError, OverflowError):
        return None  # ragged or mixed: the slow path names the offending value
    kind = candidate.dtype.kind
    if spec.dtype in _FLOAT_TYPES:
        if kind not in "fiu":
            return None
        if kind in "iu" and spec.dtype in _EXACT_INT and candidate.size:
            if np.abs(candidate).max() > _EXACT_INT[spec.dtype]:
                return None
        if kind == "f" and spec.dtype == "float32" and candidate.size:
            finite = candidate[np.isfinite(candidate)]
            if finite.size and np.abs(finite).max() > np.finfo(np.float32).max:
                return None
        return candidate.astype(spec.numpy_dtype, copy=False)
    if kind not in "iu":
        return None
    info = np.iinfo(spec.numpy_dtype)
    if candidate.size and (candidate.min() < info.min or candidate.max() > info.max):
        return None
    return candidate.astype(spec.numpy_dtype, copy=False)


def _infer_shape(value: Any) -> list[int]:
    # As TF Serving: the shape follows the first element at every level; the fill pass then
    # rejects any list whose length differs.
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def _slow_path(value: Any, spec: TensorSpecInfo) -> np.ndarray:
    shape = _infer_shape(value)
    flat: list[Any] = []
    convert = _leaf_converter(spec)
    _fill(value, 0, shape, flat, convert, spec)
    if spec.dtype == "string":
        array = np.empty(len(flat), dtype=object)
        array[:] = flat
        return array.reshape(shape)
    return np.asarray(flat, dtype=spec.numpy_dtype).reshape(shape)


def _fill(value: Any, level: int, shape: list[int], flat: list[Any], convert: Any, spec: TensorSpecInfo) -> None:
    rank = len(shape)
    if not isinstance(value, list):
        if level != rank:
            raise RequestError.invalid(
                f"{_expects(spec)}, got a ragged list: JSON Value: {_quote(value)} found at incorrect level: "
                f"{level + 1} in the JSON DOM. Expected at level: {rank}"
            )
        flat.append(convert(value))
        return
    if level >= rank:
        raise RequestError.invalid(
            f"{_expects(spec)}, got a ragged list: Encountered list at unexpected level: {level} expected < {rank}"
        )
    if len(value) != shape[level]:
        raise RequestError.invalid(
            f"{_expects(spec)}, got a ragged list: Encountered list at unexpected size: {len(value)} at level: "
            f"{level} expected size: {shape[level]}"
        )
    for item in value:
        _fill(item, level + 1, shape, flat, convert, spec)


def _leaf_converter(spec: TensorSpecInfo) -> Any:
    dtype = spec.dtype
    type_name = _TF_TYPE_NAME.get(dtype, dtype)

    def type_error(value: Any) -> RequestError:
        return RequestError.invalid(
            f"{_expects(spec)}, got {_json_type(value).lower()}: JSON Value: {_quote(value)} Type: "
            f"{_json_type(value)} is not of expected type: {type_name}"
        )

    if dtype == "string":

        def convert_string(value: Any) -> bytes:
            if isinstance(value, str):
                return value.encode("utf-8")
            if _is_b64(value):
                return _decode_b64(value)
            if isinstance(value, dict):
                raise RequestError.invalid(
                    f"{_expects(spec)}: JSON Value: {_quote(value)} not formatted correctly for base64 data"
                )
            raise type_error(value)

        return convert_string
    if dtype == "bool":

        def convert_bool(value: Any) -> bool:
            if isinstance(value, bool):
                return value
            raise type_error(value)

        return convert_bool
    if dtype in _INT_TYPES:
        info = np.iinfo(np.dtype(dtype))

        def convert_int(value: Any) -> int:
            if not isinstance(value, int) or isinstance(value, bool):
                raise type_error(value)
            if not info.min <= value <= info.max:
                raise RequestError.invalid(f"{_expects(spec)}, got {value}, which is out of range for {type_name}")
            return value

        return convert_int
    if dtype in _FLOAT_TYPES:
        exact = _EXACT_INT.get(dtype)
        largest = float(np.finfo(np.float32).max) if dtype == "float32" else None

        def convert_float(value: Any) -> float:
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise type_error(value)
            lossy = (isinstance(value, int) and exact is not None and abs(value) > exact) or (
                isinstance(value, float) and largest is not None and np.isfinite(value) and abs(value) > largest
            )
            if lossy:
                raise RequestError.invalid(
                    f"{_expects(spec)}: Cannot convert JSON value: {_quote(value)} to {type_name} without loss of precision."
                )
            return float(value)

        return convert_float

    def unsupported(value: Any) -> Any:
        raise RequestError.invalid(f"{_expects(spec)}: conversion of JSON values to {dtype} is not supported")

    return unsupported


# -------------------------------------------------------------------------------- responses


def encode_tensor(array: np.ndarray, *, as_bytes: bool = False) -> Any:
    """A JSON-able value for one tensor (nested lists; bytes as text or {"b64": ...})."""
    kind = array.dtype.kind
    if kind == "f" or array.dtype.name == "bfloat16":
        if array.dtype.itemsize < 8 and array.size <= _SHORTEST_FLOAT_LIMIT:
            # str() of a float32 is its shortest round-trip text; read back as a double, it
            # prints the same way (0.1 rather than 0.10000000149011612).
            return array.astype(str).astype(np.float64).tolist()
        return array.astype(np.float64, copy=False).tolist()
    if kind in "iub":
        return array.tolist()
    if kind in "OSU":
        flat = [_encode_bytes(item, as_bytes) for item in array.reshape(-1).tolist()]
        if array.ndim == 0:
            return flat[0]
        holder = np.empty(len(flat), dtype=object)
        holder[:] = flat
        return holder.reshape(array.shape).tolist()
    return array.tolist()


def _encode_bytes(item: Any, as_bytes: bool) -> Any:
    if isinstance(item, str):
        item = item.encode("utf-8")
    if not as_bytes:
        try:
            return item.decode("utf-8")
        except UnicodeDecodeError:
            pass  # not text: fall back to b64 so the response stays valid JSON
    return {"b64": base64.b64encode(item).decode("ascii")}


def encode_predict_response(outputs: dict[str, np.ndarray], request_format: str) -> dict[str, Any]:
    if not outputs:
        raise RequestError.invalid("Cannot convert empty tensor map to JSON")
    names = sorted(outputs)
    if request_format == COLUMNAR:
        encoded = {name: encode_tensor(outputs[name], as_bytes=name.endswith("_bytes")) for name in names}
        return {"outputs": encoded[names[0]] if len(names) == 1 else encoded}
    batch_size = None
    for name in names:
        array = outputs[name]
        if array.ndim == 0:
            raise RequestError.invalid(f"Tensor name: {name} has no shape information ")
        if batch_size is not None and array.shape[0] != batch_size:
            raise RequestError.invalid(
                f"Tensor name: {name} has inconsistent batch size: {array.shape[0]} expecting: {batch_size}"
            )
        batch_size = array.shape[0]
    encoded = {name: encode_tensor(outputs[name], as_bytes=name.endswith("_bytes")) for name in names}
    if len(names) == 1:
        return {"predictions": encoded[names[0]]}
    return {"predictions": [{name: encoded[name][index] for name in names} for index in range(batch_size or 0)]}


# Output dtypes orjson writes as TF Serving's JSON does: float32 in its shortest round-trip form
# (str(np.float32) spelling), float64 as repr, integers exactly. float16 and bfloat16 are not here
# (orjson prints float16's exact value) nor are strings and booleans.
_ORJSON_DTYPES = frozenset(np.dtype(name) for name in ("float32", "float64", *_INT_TYPES))


def _orjson_ready(array: Any) -> bool:
    if not isinstance(array, np.ndarray) or array.dtype not in _ORJSON_DTYPES or not array.flags.c_contiguous:
        return False
    # orjson writes NaN and infinities as null; TF Serving's tokens come from the general encoder.
    return array.dtype.kind != "f" or bool(np.isfinite(array).all())


def encode_predict_body(outputs: dict[str, np.ndarray], request_format: str) -> bytes:
    """The JSON body of a predict response: :func:`encode_predict_response`, serialized.

    One numeric output (the common case) is written by orjson straight from the array, which
    costs a fraction of building nested Python lists; the document is the same JSON.
    """
    if _orjson is not None and len(outputs) == 1:
        ((name, array),) = outputs.items()
        if array.ndim > 0 and _orjson_ready(array):
            if array.dtype.kind == "f" and array.dtype.itemsize < 8 and array.size > _SHORTEST_FLOAT_LIMIT:
                array = array.astype(np.float64)  # as encode_tensor: the exact value beyond the limit
            key = "outputs" if request_format == COLUMNAR else "predictions"
            body: bytes = _orjson.dumps({key: array}, option=_orjson.OPT_SERIALIZE_NUMPY)
            return body
    return dumps(encode_predict_response(outputs, request_format))


# --------------------------------------------------------------------- classify / regress


def decode_examples(
    document: dict[str, Any], *, method: str, feature_names: dict[str, str] | None = None
) -> list[bytes]:
    """Serialized tf.Examples from {"context"?, "examples": [...]}, context merged into each.

    ``feature_names`` maps another name a client may use (a signature key such as
    `mean_radius`) to the feature name the model parses (the CSV header `mean radius`): without
    it, such a feature would be absent from the Example and silently imputed.
    """
    from tensorflow.core.example import example_pb2

    renames = feature_names or {}
    context = None
    if "context" in document:
        context = _make_example(document["context"], example_pb2, renames)
    if "examples" not in document:
        raise RequestError.invalid(f"When method is {method}, key 'examples' is expected and was not found")
    examples = document["examples"]
    if not isinstance(examples, list):
        raise RequestError.invalid("Expecting 'examples' value to be an list/array")
    if not examples:
        raise RequestError.invalid("'examples' value is an empty array")
    serialized = []
    for item in examples:
        example = _make_example(item, example_pb2, renames)
        if context is not None:
            shared = set(context.features.feature) & set(example.features.feature)
            if shared:
                raise RequestError.invalid(
                    f"feature(s) {', '.join(sorted(shared))} appear in both 'context' and 'examples'; keep each in one"
                )
            for name, feature in context.features.feature.items():
                example.features.feature[name].CopyFrom(feature)
        serialized.append(example.SerializeToString())
    return serialized


def _make_example(value: Any, example_pb2: Any, renames: dict[str, str] | None = None) -> Any:
    if not isinstance(value, dict):
        raise RequestError.invalid(f"Example must be JSON object but got JSON {_json_type(value)}")
    example = example_pb2.Example()
    for given, content in value.items():
        name = str(renames.get(given, given) if renames else given)
        if name != given and name in value:
            raise RequestError.invalid(
                f"feature `{name}` is given twice (also as `{given}`); send each feature under one name"
            )
        items = content if isinstance(content, list) else [content]
        kind = None
        values: list[Any] = []
        for item in items:
            item_kind, converted = _feature_value(name, item)
            if kind is not None and item_kind != kind:
                raise RequestError.invalid(f"Unexpected element type in feature: {name} expecting type: {kind}")
            kind = item_kind
            values.append(converted)
        feature = example.features.feature[name]
        if kind == "float":
            feature.float_list.value.extend(values)
        elif kind == "int64":
            feature.int64_list.value.extend(values)
        elif kind == "bytes":
            feature.bytes_list.value.extend(values)
    return example


def _feature_value(name: str, item: Any) -> tuple[str, Any]:
    if isinstance(item, bool):
        return "int64", int(item)
    if isinstance(item, int):
        if not -(2**63) <= item < 2**63:
            raise RequestError.invalid(f"Feature: {name} has an element out of int64 range: {item}")
        return "int64", item
    if isinstance(item, float):
        if np.isfinite(item) and abs(item) > float(np.finfo(np.float32).max):
            raise RequestError.invalid(f"Cannot convert JSON value: {item} to float without loss of precision.")
        return "float", item
    if isinstance(item, str):
        return "bytes", item.encode("utf-8")
    if _is_b64(item):
        return "bytes", _decode_b64(item)
    raise RequestError.invalid(f"Feature: {name} has element with unexpected JSON type: {_json_type(item)}")
