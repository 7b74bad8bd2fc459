"""Numerics replay: when a value turns NaN/Inf, rerun the step once with check_numerics on.

``tf.debugging.enable_check_numerics()`` names the first op that produced a non-finite value and
the user's source line, but it doubles step time, so it is switched on only for this one replay.
The replay runs the step's Python function eagerly on the arguments of the last call; a training
step applies its update once more, which does not matter any more once the loss is NaN.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["replay_nonfinite", "parse_check_numerics_message"]

_OP = re.compile(r'Detected (?:Infinity or NaN|NaN|Infinity)[^\n]*?op "([^"]+)"')
_USER_FRAME = re.compile(r"->\s*\|\s*(\S+)\s*\(L(\d+)\)\s*(\S*)")


def parse_check_numerics_message(message: str) -> dict[str, Any]:
    """Pull the op type and the user's file:line out of a check_numerics error."""
    result: dict[str, Any] = {}
    op = _OP.search(message)
    if op:
        result["op"] = op.group(1)
    frame = _USER_FRAME.search(message)
    if frame:
        result["source"] = f"{frame.group(1)}:{frame.group(2)}"
        result["function"] = frame.group(3)
    return result


def _variables_finite(function, args: tuple, kwargs: dict) -> bool | None:
    import numpy as np

    try:
        variables = function.get_concrete_function(*args, **kwargs).trainable_variables
    except Exception:  # the signature may not be reproducible outside the original call; the check is optional
        return None
    return all(bool(np.all(np.isfinite(v.numpy()))) for v in variables if v.dtype.is_floating)


def replay_nonfinite(function, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Replay ``function(*args, **kwargs)`` eagerly under check_numerics; return what it found."""
    import tensorflow as tf

    python_function = getattr(function, "python_function", None)
    if python_function is None:
        return {"replayed": False}
    weights_finite = _variables_finite(function, args, kwargs)
    result: dict[str, Any] = {
        "replayed": True,
        "function": getattr(python_function, "__qualname__", "?"),
        "weights_finite_before_replay": weights_finite,
    }
    tf.debugging.enable_check_numerics()
    try:
        python_function(*args, **kwargs)
        result["reproduced"] = False
    except (tf.errors.InvalidArgumentError, tf.errors.OpError) as error:
        result["reproduced"] = True
        result.update(parse_check_numerics_message(str(error.message)))
    except Exception as error:  # the user's step may not be replayable (consumed iterator); report, don't crash
        result["reproduced"] = False
        result["replay_error"] = f"{type(error).__name__}: {str(error)[:200]}"
    finally:
        tf.debugging.disable_check_numerics()
    return result
