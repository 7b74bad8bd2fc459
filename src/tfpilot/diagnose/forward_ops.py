"""Map a NaN born in a gradient op (``SqrtGrad`` from sqrt at 0) to its forward op and the user's line.

check_numerics names the op whose output went non-finite. In the backward pass that is a gradient op,
created by TensorFlow inside ``tape.gradient``: no line of the user's creates it, and "guard SqrtGrad"
cannot be acted on. What can is the forward op (``Sqrt``) and the line that created it.

During the eager replay an op callback (the mechanism check_numerics itself uses) records, for every
eager op, the user's line and Keras layer it ran in, keyed by its output tensors. When the replay stops
in a gradient, TensorFlow's ``_gradient_function`` frame in the traceback holds the forward op's type
and its output tensors (the tape keeps them), which pick the recorded op.
"""

from __future__ import annotations

import dataclasses
import inspect
import traceback
from typing import Any

from tfpilot import _tf_private
from tfpilot.diagnose.frames import first_user_frame

__all__ = ["ForwardOpRecorder", "ForwardOp"]

# The replay is one step; this bounds the record on a pathological one (a Python loop of a million ops).
MAX_RECORDED_OPS = 200_000
# Where TensorFlow's eager backward pass calls the gradient function registered for a forward op.
_GRADIENT_FRAME = "_gradient_function"


@dataclasses.dataclass
class ForwardOp:
    op_type: str
    source: str | None  # the user's file:line that created the op
    user_function: str | None
    layer: str | None
    layer_class: str | None


def _layer_around(frame: Any) -> tuple[str | None, str | None]:
    """The innermost Keras layer whose ``call`` is running at ``frame`` (None outside layers)."""
    from tfpilot.diagnose.numerics import _is_keras_layer

    depth = 0
    while frame is not None and depth < 80:
        if frame.f_code.co_name == "call":
            owner = frame.f_locals.get("self")
            if owner is not None and _is_keras_layer(owner):
                return getattr(owner, "name", type(owner).__name__), type(owner).__name__
        frame, depth = frame.f_back, depth + 1
    return None, None


def _keras_filtering() -> bool | None:
    try:
        import keras
    except ImportError:  # custom loops without Keras
        return None
    return bool(keras.config.is_traceback_filtering_enabled())


def _set_keras_filtering(enabled: bool | None) -> None:
    if enabled is None:
        return
    import keras

    if enabled:
        keras.config.enable_traceback_filtering()
    else:
        keras.config.disable_traceback_filtering()


class ForwardOpRecorder:
    """Install around the replay (``with ForwardOpRecorder() as recorder``), then ``forward_of(error)``."""

    def __init__(self) -> None:
        self._by_output: dict[int, ForwardOp] = {}
        # The tensors are kept so that their ids stay theirs until the replay ends.
        self._outputs: list[Any] = []
        self._by_type: dict[str, list[ForwardOp]] = {}
        self._count = 0
        self._filtering: tuple[bool, bool | None] = (True, None)

    def __enter__(self) -> ForwardOpRecorder:
        import tensorflow as tf

        # Keras and TensorFlow cut their own frames out of tracebacks; the gradient frame is one of them.
        self._filtering = (tf.debugging.is_traceback_filtering_enabled(), _keras_filtering())
        tf.debugging.disable_traceback_filtering()
        _set_keras_filtering(False)
        _tf_private.op_callbacks().add_op_callback(self._callback)
        return self

    def __exit__(self, *exc: Any) -> None:
        import tensorflow as tf

        _tf_private.op_callbacks().remove_op_callback(self._callback)
        tensorflow_filtering, keras_filtering = self._filtering
        if tensorflow_filtering:
            tf.debugging.enable_traceback_filtering()
        _set_keras_filtering(keras_filtering)

    def _callback(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):  # noqa: ARG002 (TF's signature)
        if graph is not None or self._count >= MAX_RECORDED_OPS or not outputs:
            return None  # graph construction (not run in the replay) or enough recorded
        self._count += 1
        user, _ = first_user_frame(inspect.currentframe())
        layer, layer_class = _layer_around(inspect.currentframe())
        record = ForwardOp(
            op_type=op_type,
            source=f"{user.f_code.co_filename}:{user.f_lineno}" if user is not None else None,
            user_function=user.f_code.co_name if user is not None else None,
            layer=layer,
            layer_class=layer_class,
        )
        for output in outputs:
            self._by_output[id(output)] = record
            self._outputs.append(output)
        self._by_type.setdefault(op_type, []).append(record)
        return None

    def forward_of(self, error: BaseException) -> dict[str, Any]:
        """The forward op whose gradient raised ``error`` (empty when the error was not raised in a gradient)."""
        gradient_frame = None
        for frame, _ in traceback.walk_tb(error.__traceback__):
            if frame.f_code.co_name == _GRADIENT_FRAME and "op_name" in frame.f_locals:
                gradient_frame = frame  # the innermost one: nested gradients (a gradient of a gradient) go deeper
        if gradient_frame is None:
            return {}
        op_type = str(gradient_frame.f_locals.get("op_name"))
        found: dict[str, Any] = {"forward_op": op_type}
        record = None
        for output in gradient_frame.f_locals.get("outputs") or ():
            record = self._by_output.get(id(output))
            if record is not None:
                break
        candidates = self._by_type.get(op_type, [])
        if record is None and candidates:
            # The tape kept no outputs for this op (its gradient needs only the inputs): one line, or the last.
            lines = list(dict.fromkeys(c.source for c in candidates if c.source))
            record = candidates[-1]
            if len(lines) > 1:
                found["forward_candidates"] = lines[:6]
        if record is not None:
            found.update(
                {
                    key: value
                    for key, value in (
                        ("forward_source", record.source),
                        ("forward_function", record.user_function),
                        ("forward_layer", record.layer),
                        ("forward_layer_class", record.layer_class),
                    )
                    if value
                }
            )
        return found
