"""Numerics: find the first step whose loss or gradient turns NaN/Inf and replay that step.

Replaying after the fact (the old approach) met weights the bad update had already made NaN, so
check_numerics always named the first ``ReadVariableOp``. Instead, ``NumericsMonitor`` keeps, for
every top-level tf.function, the variable values before each of its last two calls and the calls'
arguments, and checks each call's small float outputs (losses, metrics) for NaN/Inf:

- the loss of call N is non-finite and the weights before N were finite: replay N from them;
- the weights before N were already non-finite: call N-1's update (its gradient) made them so,
  replay N-1 from the weights before N-1.

The replay restores those weights, runs the step's Python function eagerly (every nested
tf.function too, via ``run_functions_eagerly``) under ``tf.debugging.enable_check_numerics``, then
puts back the values the run had, so the script goes on as it would have. Eagerly, the error is
raised inside the op's own Python call: the traceback's deepest frame in the user's code is the
line that produced the value, and a Keras ``Layer.call`` frame on the way names the layer. A step
fed by a tf.data iterator (``model.fit``) consumed its batch inside the graph: it is replayed on
the iterator's next batch, and the evidence says so.

Reading variables before a call costs one ``ReadVariableOp`` per variable, issued through the
eager fast path (``_VariableReader``: no ``Variable.value()`` Python layers), and, once the step
updates them, one copy of the weights inside the step (copy-on-write). That copy is the price of
having the weights before every step; copying into shadow variables in one compiled call costs the
same copy plus a function dispatch, and was slower when measured (docs/doctor.md, "Overhead").
Above ``MAX_SNAPSHOT_BYTES`` no snapshot is kept.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import re
import traceback
import weakref
from typing import Any

from tfpilot import _tf_private
from tfpilot.diagnose.forward_ops import ForwardOpRecorder
from tfpilot.diagnose.frames import is_library
from tfpilot.diagnose.layer_sites import layer_sites

__all__ = [
    "NumericsMonitor",
    "parse_check_numerics_message",
    "user_frame",
    "replay_nonfinite",
]

MAX_SNAPSHOT_BYTES = 1 << 30
# The weights are checked for NaN/Inf every K calls, K as large as keeping K + 1 snapshots allows within this
# budget (at most MAX_CHECK_INTERVAL): the check costs two eager ops per variable (0.4 ms per call on
# train_long's step with its 20-odd variables), the snapshots cost memory (the device's, on a GPU). The kept
# snapshots then say at which of the last K steps the NaN entered.
WEIGHT_HISTORY_BYTES = 256 << 20
MAX_CHECK_INTERVAL = 8
MAX_TRACKED_FUNCTIONS = 64
# Losses and metrics are scalars; a function returning a whole batch is not checked element by element.
MAX_CHECKED_ELEMENTS = 64

_OP = re.compile(r'Detected (?:Infinity or NaN|NaN|Infinity)[^\n]*?op "([^"]+)"')
# Graph-mode messages list the op's creation site: `File "/path/x.py", line 15, in train_step`.
_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)(?:, in (\S+))?')


def _is_library(filename: str) -> bool:
    # By install directory (frames.is_library), never by a substring: a user's `keras_demo.py` is the user's.
    return filename.startswith("<") or is_library(filename)


def parse_check_numerics_message(message: str) -> dict[str, Any]:
    """The op type and, for graph-mode messages, the deepest user frame (`file:line`) of a check_numerics error."""
    result: dict[str, Any] = {}
    op = _OP.search(message)
    if op:
        result["op"] = op.group(1)
    frames = [m for m in _FILE_LINE.finditer(message) if not _is_library(m.group(1))]
    if frames:
        deepest = frames[-1]
        result["source"] = f"{deepest.group(1)}:{deepest.group(2)}"
        if deepest.group(3):
            result["user_function"] = deepest.group(3)
    return result


def user_frame(error: BaseException) -> dict[str, Any]:
    """The deepest traceback frame of ``error`` in the user's code, and the Keras layer it ran in."""
    result: dict[str, Any] = {}
    layer = None
    for frame, line in traceback.walk_tb(error.__traceback__):
        code = frame.f_code
        if not _is_library(code.co_filename):
            result["source"] = f"{code.co_filename}:{line}"
            result["user_function"] = code.co_name
        if code.co_name == "call":
            owner = frame.f_locals.get("self")
            if owner is not None and _is_keras_layer(owner):
                layer = owner
    if layer is not None:
        result["layer"] = getattr(layer, "name", type(layer).__name__)
        result["layer_class"] = type(layer).__name__
        if "source" not in result:
            # No user frame ran the op (model.fit's step calling a built-in layer): the line that
            # created the layer is the one to act on, when the user's code shows which it is.
            sites = layer_sites(layer)
            if len(sites) == 1:
                result["source"] = sites[0]
                result["source_is"] = "the line that created the layer"
            elif sites:
                result["layer_candidates"] = sites[:5]
    return result


def _is_keras_layer(value: Any) -> bool:
    try:
        import keras
    except ImportError:  # Keras is optional for custom loops
        return False
    return isinstance(value, keras.layers.Layer)


_TYPES: dict[str, Any] = {}


def _types() -> dict[str, Any]:
    """TensorFlow classes looked up once: the checks run on every call, and ``tf.*`` lookups are not free."""
    if not _TYPES:
        import tensorflow as tf

        _TYPES.update(
            eager=_tf_private.framework_ops().EagerTensor,
            optional=tf.experimental.Optional,
            iterators=(tf.data.Iterator, tf.distribute.DistributedIterator),
            flatten=tf.nest.flatten,
        )
    return _TYPES


def _nonfinite_tensor(value: Any) -> float | None:
    import numpy as np

    if not value.dtype.is_floating:
        return None
    # Not the watcher's patched numpy(): this read is the doctor's, not the user's.
    shape, array = _tf_private.eager_shape_and_values(value)
    if shape is None or None in shape or math.prod(shape) > MAX_CHECKED_ELEMENTS:
        return None
    if array.ndim == 0:
        number = float(array)
        return None if math.isfinite(number) else number
    if np.all(np.isfinite(array)):
        return None
    return float(array[~np.isfinite(array)].flat[0])


def _nonfinite_output(outputs: Any) -> float | None:
    """The first NaN/Inf among the small float tensors of a call's outputs (an Optional is looked into)."""
    types = _types()
    if isinstance(outputs, types["eager"]):
        return _nonfinite_tensor(outputs)  # a step returning its loss: no nest walk
    if isinstance(outputs, types["optional"]):
        if not bool(outputs.has_value()):
            return None
        outputs = outputs.get_value()
    for value in types["flatten"](outputs, expand_composites=False):
        if isinstance(value, types["eager"]):
            found = _nonfinite_tensor(value)
            if found is not None:
                return found
    return None


class _VariableReader:
    """Reads a fixed list of resource variables with one eager ``ReadVariableOp`` each, on the fast path.

    Each result aliases the variable's buffer until the step writes the variable (copy-on-write), so it
    holds the value before the step. A variable the fast path cannot read (not a plain resource variable)
    is read with ``value()``.
    """

    def __init__(self, variables: list[Any]) -> None:
        self._execute, self._context = _tf_private.fast_path_execute()
        self._plan: list[tuple[Any, Any, Any]] = []
        for variable in variables:
            handle = getattr(variable, "handle", None)
            fast = handle is not None and getattr(handle, "dtype", None) is not None and handle.dtype.name == "resource"
            self._plan.append((variable, handle if fast else None, variable.dtype))

    def read(self) -> list[Any]:
        values = []
        for variable, handle, dtype in self._plan:
            if handle is not None:
                try:
                    values.append(self._execute(self._context, "ReadVariableOp", None, handle, "dtype", dtype))
                    continue
                except Exception:  # a device or dtype the fast path refuses: the ordinary read below
                    pass
            values.append(variable.value())
        return values


class _FiniteCheck:
    """Whether all of a fixed list of float values are finite, with eager ops on the fast path.

    Per value ``All(IsFinite(v), every axis)``, then one ``All`` over the results and one read: about two
    microsecond-scale dispatches per variable. A tf.function over the list costs more in argument handling
    alone (measured with bench_doctor.py --monitor-calls: 0.67 ms per call on train_long's step).
    """

    def __init__(self, values: list[Any]) -> None:
        import tensorflow as tf

        self._execute, self._context = _tf_private.fast_path_execute()
        # The reduction axes of each value, made once: the check runs before every call.
        self._axes = [tf.range(len(v.shape), dtype=tf.int32) for v in values]
        self._all_axes = tf.constant([0], dtype=tf.int32)

    def __call__(self, values: list[Any]) -> bool:
        execute, context = self._execute, self._context
        finite = [
            execute(context, "All", None, execute(context, "IsFinite", None, value), axes, "keep_dims", False)
            for value, axes in zip(values, self._axes, strict=True)
        ]
        stacked = execute(context, "Pack", None, finite, "axis", 0)
        result = execute(context, "All", None, stacked, self._all_axes, "keep_dims", False)
        # Not the watcher's patched numpy(): this read is the doctor's, not the user's.
        return bool(_tf_private.eager_shape_and_values(result)[1])


def _first_nonfinite(value: Any) -> float:
    import numpy as np

    array = _tf_private.eager_shape_and_values(value)[1]
    return float(np.asarray(array)[~np.isfinite(array)].flat[0])


def _all_finite(values: list[Any]) -> bool:
    import numpy as np

    return all(bool(np.all(np.isfinite(v.numpy()))) for v in values if v.dtype.is_floating)


@dataclasses.dataclass
class _Call:
    index: int
    snapshot: list[Any] | None
    args: tuple
    kwargs: dict
    # How many earlier calls drew from each tf.data iterator argument (its batch's position in the epoch).
    positions: dict[int, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Tracked:
    function: Any = None  # a weak reference: ids of collected functions are reused
    variables: list[Any] = dataclasses.field(default_factory=list)
    reader: _VariableReader | None = None
    checker: Any = None  # the all-finite check of the variables (made on first use, again after a retrace)
    tracing_count: int = -1
    calls: int = 0
    history: collections.deque = dataclasses.field(default_factory=lambda: collections.deque(maxlen=2))
    check_every: int = 1


class NumericsMonitor:
    """``before(function, args, kwargs)`` and ``after(function, outputs)`` around each top-level call."""

    def __init__(self, *, max_snapshot_bytes: int = MAX_SNAPSHOT_BYTES) -> None:
        self.max_snapshot_bytes = max_snapshot_bytes
        self.found: dict[str, Any] | None = None
        self._tracked: dict[int, _Tracked] = {}
        self._iterator_calls: collections.Counter[int] = collections.Counter()
        self._unreported = False

    def before(self, function: Any, args: tuple, kwargs: dict) -> None:
        if self.found is not None:
            return
        tracked = self._tracked.get(id(function))
        if tracked is None or tracked.function() is not function:
            if len(self._tracked) > MAX_TRACKED_FUNCTIONS:
                # A new tf.function per call (a problem the retracing rule reports) must not grow this forever.
                self._tracked = {k: t for k, t in self._tracked.items() if t.function() is not None}
            tracked = self._tracked[id(function)] = _Tracked(function=weakref.ref(function))
        tracked.calls += 1
        traced = function.experimental_get_tracing_count()
        refresh = traced != tracked.tracing_count  # a new trace may capture new variables
        if traced == 0:
            # Trace before the first call (the call then reuses the trace) so that the variables, Keras'
            # optimizer slots included, exist and the weights before step 1 can be kept too.
            try:
                function.get_concrete_function(*args, **kwargs)
            except Exception:  # an argument tracing cannot take here: the first step goes without a snapshot
                pass
            refresh = True  # traced just now
        if refresh:
            self._refresh_variables(function, tracked)
        # The reads alias the variables' buffers; the step's update then copies them (copy-on-write).
        snapshot = tracked.reader.read() if tracked.reader is not None else None
        if snapshot is not None and tracked.history and tracked.calls % tracked.check_every == 0:
            # The weights after the previous call: a NaN hidden from the loss (a ReLU or clip after it, a NaN-safe
            # loss, an optimizer slot or a moving statistic the loss never reads) is caught at the step it entered.
            self._check_weights(function, tracked, snapshot)
            if self.found is not None:
                return
        positions = {}
        iterators = _types()["iterators"]
        for argument in (*args, *kwargs.values()) if kwargs else args:
            if isinstance(argument, iterators):
                positions[id(argument)] = self._iterator_calls[id(argument)]
                self._iterator_calls[id(argument)] += 1
        tracked.history.append(_Call(tracked.calls, snapshot, args, kwargs, positions))

    def _check_weights(self, function: Any, tracked: _Tracked, snapshot: list[Any]) -> None:
        floating = [value for value in snapshot if value.dtype.is_floating]
        if not floating:
            return
        if tracked.checker is None:
            tracked.checker = _FiniteCheck(floating)
        if tracked.checker(floating):
            return
        bad = [
            (getattr(variable, "path", None) or variable.name, value)
            for variable, value in zip(tracked.variables, snapshot, strict=True)
            if value.dtype.is_floating and not _all_finite([value])
        ]
        # The step that made them non-finite: the one before the first kept snapshot that is not finite.
        history = list(tracked.history)
        culprit: _Call | None = history[-1]
        for position, call in enumerate(history):
            if call.snapshot is not None and not _all_finite(call.snapshot):
                culprit = history[position - 1] if position else None
                break
        self.found = {
            "value": _first_nonfinite(bad[0][1]) if bad else float("nan"),
            "step": culprit.index if culprit is not None else history[0].index - 1,
            "detected_in": "weights",
            "nonfinite_variables": [name for name, _ in bad[:8]],
            "checked_every": tracked.check_every,
        }
        self.found.update(self.replay(function, chosen=culprit) if culprit is not None else {"replayed": False})
        self._unreported = True

    def finish(self) -> dict[str, Any] | None:
        """At the end of the run: check the weights after each function's last call (the calls since the last
        check, fewer than ``check_every``, would go unchecked otherwise)."""
        if self.found is not None:
            return None
        for tracked in list(self._tracked.values()):
            function = tracked.function()
            if function is None or tracked.reader is None or not tracked.history:
                continue
            self._check_weights(function, tracked, tracked.reader.read())
            if self.found is not None:
                self._unreported = False
                return self.found
        return None

    def after(self, function: Any, outputs: Any) -> dict[str, Any] | None:
        """Check the call's outputs; on the first NaN/Inf, replay and return what was found."""
        if self.found is not None:
            if self._unreported:  # found in the weights before this call (by before()): said once
                self._unreported = False
                return self.found
            return None
        tracked = self._tracked.get(id(function))
        if tracked is None:
            return None
        value = _nonfinite_output(outputs)
        if value is None:
            return None
        self.found = {"value": value, "step": tracked.calls, "detected_in": "output"}
        self.found.update(self.replay(function))
        return self.found

    def on_nonfinite_read(self, function: Any, value: float, location: str) -> dict[str, Any]:
        """The script read a NaN/Inf that no call's output showed (e.g. a metric): replay the last call."""
        tracked = self._tracked.get(id(function)) if function is not None else None
        self.found = {"value": value, "seen_at": location, "detected_in": "read"}
        if tracked is not None:
            self.found["step"] = tracked.calls
            self.found.update(self.replay(function))
        return self.found

    def _refresh_variables(self, function: Any, tracked: _Tracked) -> None:
        tracked.tracing_count = function.experimental_get_tracing_count()
        try:
            concrete = _tf_private.concrete_functions(function)
        except Exception:  # private API: without it there is no snapshot, the replay still runs on current weights
            concrete = []
        unique: dict[int, Any] = {}
        for function_ in concrete:
            for variable in function_.variables:
                unique.setdefault(id(variable), variable)
        variables = list(unique.values())
        size = sum(v.shape.num_elements() * v.dtype.size for v in variables if v.shape.is_fully_defined())
        tracked.variables = variables if size <= self.max_snapshot_bytes else []
        tracked.reader = _VariableReader(tracked.variables) if tracked.variables else None
        tracked.checker = None  # the variables (and their ranks) may have changed with the trace
        if tracked.variables and size:
            tracked.check_every = max(1, min(MAX_CHECK_INTERVAL, WEIGHT_HISTORY_BYTES // size - 1))
        else:
            tracked.check_every = 1
        tracked.history = collections.deque(tracked.history, maxlen=tracked.check_every + 1)

    def replay(self, function: Any, *, chosen: _Call | None = None) -> dict[str, Any]:
        tracked = self._tracked.get(id(function))
        history = list(tracked.history) if tracked is not None else []
        if not history:
            return {"replayed": False}
        assert tracked is not None
        if chosen is not None:
            # The weights check found the step: replay it from the finite weights before it.
            result_: dict[str, Any] = {"replayed_step": chosen.index}
            args, kwargs, batch = _replay_arguments(chosen)
            result_["batch"] = batch
            result_.update(replay_nonfinite(function, args, kwargs, tracked.variables, chosen.snapshot))
            return result_
        chosen = history[-1]
        result: dict[str, Any] = {}
        if chosen.snapshot is None:
            result["weights_before_step"] = "not kept"
        elif not _all_finite(chosen.snapshot):
            earlier = history[-2] if len(history) > 1 else None
            if earlier is not None and earlier.snapshot is not None and _all_finite(earlier.snapshot):
                # Call N's loss was the first NaN, but call N-1's update had already made the weights NaN.
                chosen = earlier
                result["cause"] = "update"
            else:
                result["weights_before_step"] = "non-finite"
        result["replayed_step"] = chosen.index
        args, kwargs, batch = _replay_arguments(chosen)
        result["batch"] = batch
        result.update(replay_nonfinite(function, args, kwargs, tracked.variables, chosen.snapshot))
        return result


def _gradient_origin(recorder: ForwardOpRecorder, error: BaseException, found: dict[str, Any]) -> dict[str, Any]:
    """For a NaN born in a gradient op: the forward op and the user's line that created it become the source.

    The line check_numerics' traceback gives (the ``tape.gradient`` call, or none under model.fit) is kept as
    ``gradient_source``.
    """
    forward = recorder.forward_of(error)
    if not forward.get("forward_source"):
        return forward
    origin = dict(forward)
    if found.get("source"):
        origin["gradient_source"] = found["source"]
    origin["source"] = forward["forward_source"]
    if forward.get("forward_function"):
        origin["user_function"] = forward["forward_function"]
    if forward.get("forward_layer"):
        origin["layer"], origin["layer_class"] = forward["forward_layer"], forward.get("forward_layer_class")
    return origin


# Skipping to the batch's position re-reads that many batches; further in, the epoch's first batch is used.
MAX_SKIP_BATCHES = 1000


def _is_iterator(value: Any) -> bool:
    return isinstance(value, _types()["iterators"])


def _replay_arguments(call: _Call) -> tuple[tuple, dict, str]:
    """The call's arguments for the replay, and which batch they hold.

    A compiled step fed by an iterator (``model.fit``) took its batch inside the graph, so it is gone.
    The replay reads the batch at the same position from a fresh iterator over the same dataset
    (the same batch unless the dataset shuffles), leaving the run's own iterator untouched.
    """
    iterator_ops = _tf_private.iterator_ops()

    batch = "same"

    def substitute(value: Any) -> Any:
        nonlocal batch
        if not _is_iterator(value):
            return value
        dataset = getattr(value, "_dataset", None) if isinstance(value, iterator_ops.OwnedIterator) else None
        position = call.positions.get(id(value), 0)
        if dataset is None:
            batch = "the iterator's next batch (the step's own batch was consumed inside the graph)"
            return value
        if position > MAX_SKIP_BATCHES:
            position = 0
        batch = f"batch {position} of a fresh iterator over the same dataset (the same batch unless it shuffles)"
        return iter(dataset.skip(position) if position else dataset)

    args = tuple(substitute(a) for a in call.args)
    kwargs = {k: substitute(v) for k, v in call.kwargs.items()}
    return args, kwargs, batch


def replay_nonfinite(
    function: Any,
    args: tuple,
    kwargs: dict,
    variables: list[Any] | None = None,
    snapshot: list[Any] | None = None,
) -> dict[str, Any]:
    """Run ``function``'s Python body eagerly under check_numerics from ``snapshot``; restore the run's values after."""
    import tensorflow as tf

    python_function = getattr(function, "python_function", None)
    if python_function is None:
        return {"replayed": False}
    result: dict[str, Any] = {"replayed": True, "step_function": getattr(python_function, "__qualname__", "?")}
    variables = variables or []
    current = [v.value() for v in variables] if snapshot is not None else []
    eager_before = tf.config.functions_run_eagerly()
    try:
        if snapshot is not None:
            for variable, value in zip(variables, snapshot, strict=True):
                variable.assign(value)
        tf.config.run_functions_eagerly(True)
        # Records each eager op's user line first, so a NaN born in a gradient op can name its forward op's line.
        recorder = ForwardOpRecorder()
        with recorder:
            tf.debugging.enable_check_numerics()
            try:
                python_function(*args, **kwargs)
                result["reproduced"] = False
            finally:
                tf.debugging.disable_check_numerics()
                tf.config.run_functions_eagerly(eager_before)
    except tf.errors.InvalidArgumentError as error:
        result["reproduced"] = "Detected" in str(error.message)
        if result["reproduced"]:
            parsed = parse_check_numerics_message(str(error.message))
            result.update({k: v for k, v in parsed.items() if k == "op"})
            frame = user_frame(error)
            result.update(frame or {k: v for k, v in parsed.items() if k != "op"})
            result.update(_gradient_origin(recorder, error, result))
        else:
            result["replay_error"] = f"{type(error).__name__}: {str(error.message)[:200]}"
    except Exception as error:  # the step may not be replayable (an exhausted iterator): report, never crash the run
        result["reproduced"] = False
        result["replay_error"] = f"{type(error).__name__}: {str(error)[:200]}"
    finally:
        for variable, value in zip(variables, current, strict=False):
            variable.assign(value)
    return result
