"""Runtime watchers for code not written for tfpilot: retraces, host syncs, step gaps, eager steps.

A Watcher patches a few Python-level entry points of TensorFlow (never the kernels):

- ``Function.__call__``: top-level calls of every tf.function (timing, tracing count, and the
  argument signature of each new trace, so the retracing rule can say what changed);
- ``EagerTensor.numpy`` / ``__float__`` / ``__int__`` / ``__bool__`` / ``__array__`` / ``__format__`` /
  ``__str__`` / ``__repr__`` (f-strings, print): host syncs
  from user code (with the user's file:line), and non-finite values that trigger a numerics replay;
- ``OwnedIterator.__next__``: time spent waiting for tf.data in the Python loop;
- ``GradientTape.gradient`` called eagerly: an uncompiled training step.

Step boundaries are the ends of calls to the most-called tf.function (or of eager gradient calls);
the time between them is split into input wait, host-sync time and unexplained idle.
"""

from __future__ import annotations

import bisect
import dataclasses
import inspect
import statistics
import threading
import time
import weakref
from collections import Counter
from pathlib import Path
from typing import Any

from tfpilot import _tf_private
from tfpilot.diagnose.frames import first_user_frame, is_framework
from tfpilot.diagnose.numerics import NumericsMonitor
from tfpilot.diagnose.window_spec import DEFAULT_PROFILE_STEPS

__all__ = ["Watcher", "WatchReport", "FunctionRecord", "StepTiming", "EAGER_DRIVER", "KERAS_TRAINER_MODULE"]

EAGER_DRIVER = "<eager GradientTape.gradient>"
_MAX_EVENTS = 200_000
_SKIP_WARMUP_STEPS = 2
_MAX_TRACES_KEPT = 50
# The module of Keras 3's TensorFlow trainer: model.fit's step (compiled or, with run_eagerly=True, not).
KERAS_TRAINER_MODULE = "keras.src.backend.tensorflow.trainer"


@dataclasses.dataclass
class FunctionRecord:
    key: str
    name: str
    location: str
    calls: int
    tracing_count: int
    traces: list[list[dict[str, Any]]]
    # py_function / numpy_function op types inside the function's own graphs (nested functions included):
    # these run on the step's critical path, unlike those in a tf.data map or from_generator.
    python_ops: list[str] = dataclasses.field(default_factory=list)
    # How many tf.function objects wrapped this Python function (one per call: `tf.function(f)(x)` in a loop).
    instances: int = 1
    call_site: str = ""
    # tf.function(reduce_retracing=True): TensorFlow generalises shapes after a retrace, so a few traces are expected.
    reduce_retracing: bool = False
    # The Python function's module (`keras.src.backend.tensorflow.trainer` for model.fit's step): which advice fits.
    module: str = ""


@dataclasses.dataclass
class StepTiming:
    driver: str
    steps: int
    step_ms: float
    call_ms: float
    gap_ms: float
    input_ms: float
    sync_ms: float
    idle_ms: float
    syncs_per_step: float
    idle_percent: float
    input_percent: float
    sync_locations: dict[str, int]
    # Medians over steps: a few steps stretched by the CPU scheduler (busy host) or GC do not move them.
    idle_median_ms: float = 0.0
    step_median_ms: float = 0.0
    # Steps before this one (warm-up, an epoch filling a cache) are left out of the timing.
    measured_from_step: int = 0
    # Top-level calls of other tf.functions between two driver calls (an RL loop's action step beside its
    # train step): compiled work, counted in the step and never as idle.
    other_calls_per_step: float = 0.0
    other_call_ms: float = 0.0
    # Medians in CPU time: the main thread's CPU between steps outside reads, input and other calls (Python work),
    # and the process's CPU per step. Load stretches a step's wall time, not the CPU its work takes.
    idle_cpu_median_ms: float = 0.0
    step_cpu_median_ms: float = 0.0
    # Means per step in CPU time: the reads' main-thread CPU (their copy), and the process's CPU per step.
    sync_cpu_ms: float = 0.0
    step_cpu_ms: float = 0.0
    # Median per gap of the main thread's CPU in the gap outside input and other calls: the reads and the Python
    # around them (formatting, print, appends), what the loop's own host work costs every step. One thread: it is
    # compared with the step on one core's terms (rules.base.step_on_one_core_ms), not with the process's CPU.
    host_cpu_median_ms: float = 0.0
    # Median step on one core's terms (its critical path): the main thread's CPU between two calls plus the call's
    # time, the smaller of its wall and process CPU time (rules.base.step_on_one_core_ms).
    step_core_median_ms: float = 0.0
    # The input wait's spread over steps (None: not measured): the median step's next() share of that step, and the
    # share of all next() time spent in the first step of an epoch (a new iterator's buffers start empty). A pipeline
    # that cannot keep up makes every step wait, or every epoch start; waits scattered over a few random steps are the
    # scheduler keeping tf.data's threads off busy CPUs.
    input_median_percent: float | None = None
    epoch_start_input_share: float | None = None
    # CPU per step that the process's other threads (tf.data's producers) spent while the main thread waited in next()
    # (None: not measured). A pipeline too slow for the step works through the wait; a loaded host's scheduler keeps
    # those threads off the CPUs, so the wall time grows and this does not.
    input_producer_cpu_ms: float | None = None


@dataclasses.dataclass
class WatchReport:
    functions: list[FunctionRecord]
    timing: StepTiming | None
    eager_gradient_calls: int
    compiled_calls: int
    sync_count: int
    nonfinite: dict[str, Any] | None
    wall_seconds: float
    profile_dir: str | None
    # The pipelines the script iterated eagerly (PipelineShape.to_dict), the first one first.
    pipelines: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    # With a cache() stage: the step at which its first epoch ended (None: no cache, or not seen to end).
    cache_filled_step: int | None = None
    cache_filled: bool | None = None  # None without a cache stage
    # Eager gradient calls made by Keras' own train_step (model.fit with run_eagerly=True).
    eager_fit_gradient_calls: int = 0
    # Which window the profile holds: "steady" (after warm-up, and after a cache filled), "cache-fill" (the
    # script ended inside the epoch that fills its cache: what there was), None (no profile).
    profile_window: str | None = None
    # Why the watchers never started (a private TensorFlow API they patch is gone in this version):
    # the script ran unobserved. None: they ran.
    watchers_off: str | None = None
    # Eager tf.data iterators the script made (one per epoch in a usual loop; one per step when every step
    # makes its own, as model.predict / model.evaluate called per step or next(iter(ds)) in the loop do).
    iterators_created: int = 0
    # A GPU or TPU was visible to the script: its steps run asynchronously to Python, so a read waits for them.
    async_device: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def unobserved(cls, reason: str) -> WatchReport:
        """The report of a script that ran without watchers (they could not start: `reason`)."""
        return cls(
            functions=[],
            timing=None,
            eager_gradient_calls=0,
            compiled_calls=0,
            sync_count=0,
            nonfinite=None,
            wall_seconds=0.0,
            profile_dir=None,
            watchers_off=reason,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WatchReport:
        data = dict(data)
        data["functions"] = [FunctionRecord(**f) for f in data["functions"]]
        data["timing"] = StepTiming(**data["timing"]) if data.get("timing") else None
        return cls(**data)


# Methods through which a user asks for a tensor's value: a read that enters TensorFlow or Keras through one of
# these (a Keras Variable's ``numpy()``, ``float(v)``, an f-string) is the user's, however deep the library call.
_VALUE_READS = frozenset(
    {
        "numpy",
        "item",
        "tolist",
        "__float__",
        "__int__",
        "__bool__",
        "__index__",
        "__array__",
        "__format__",
        "__repr__",
        "__str__",
    }
)


def _async_device_visible() -> bool:
    """Whether a GPU or TPU is visible: there a step runs asynchronously to Python (on CPU the call returns when done)."""
    import tensorflow as tf

    try:
        # Physical devices: listing them does not initialise the runtime, so the script can still configure it.
        return any(device.device_type in ("GPU", "TPU") for device in tf.config.list_physical_devices())
    except Exception:  # the runtime could not be asked: judge as a synchronous (CPU) step
        return False


def _user_location(frame) -> str | None:
    """The first caller frame in the user's code (outside installed packages, TensorFlow, Keras and tfpilot)."""
    user, _ = first_user_frame(frame)
    return f"{user.f_code.co_filename}:{user.f_lineno}" if user is not None else None


def _issued_by_tensorflow(called) -> bool:
    """Whether TensorFlow/Keras (or tfpilot) read the tensor for their own bookkeeping rather than for the user.

    What decides is the call the user's code made: a value read (``v.numpy()`` on a Keras variable,
    ``float(t)``) is the user's sync; a read inside another TensorFlow/Keras call (the eager gradient of
    reduce_sum reads its axes with ``.numpy()``, ``model.fit`` formats its logs) is not. Reads made by
    other libraries on the user's behalf (``np.mean(tensor)``) still count. ``called`` is the library frame
    the first user frame called (``frames.first_user_frame``; None: the user's code read the tensor itself).
    """
    if called is None:
        return False
    return is_framework(called.f_code.co_filename) and called.f_code.co_name not in _VALUE_READS


def _describe_argument(name: str, value: Any) -> dict[str, Any]:
    import tensorflow as tf

    if isinstance(value, (tf.Tensor, tf.Variable)):
        return {
            "name": name,
            "kind": "tensor",
            "dtype": value.dtype.name,
            "shape": value.shape.as_list() if value.shape.rank is not None else None,
        }
    if isinstance(value, (bool, int, float, complex, str)):
        return {"name": name, "kind": "python", "type": type(value).__name__, "value": repr(value)[:40]}
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return {"name": name, "kind": "array", "dtype": str(value.dtype), "shape": list(value.shape)}
    return {"name": name, "kind": "other", "type": type(value).__name__}


def _function_module(function) -> str:
    python_function = getattr(function, "python_function", None) or getattr(function, "_python_function", None)
    return str(getattr(python_function, "__module__", "") or "")


def _function_identity(function) -> tuple[str, str, str]:
    python_function = getattr(function, "python_function", None) or getattr(function, "_python_function", None)
    name = getattr(python_function, "__qualname__", None) or getattr(function, "__name__", None) or "tf.function"
    code = getattr(python_function, "__code__", None)
    location = f"{code.co_filename}:{code.co_firstlineno}" if code else ""
    return f"{name}@{location}", name, location


def _argument_names(function, count: int) -> list[str]:
    import inspect

    python_function = getattr(function, "python_function", None)
    try:
        names = [p for p in inspect.signature(python_function or function).parameters]
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"arg{i}" for i in range(count)]


_PYTHON_OP_TYPES = frozenset({"EagerPyFunc", "PyFunc", "PyFuncStateless"})


def _caller_frame() -> Any:
    """The frame that called the function calling this one (what sys._getframe(2) returns)."""
    frame = inspect.currentframe()
    return frame.f_back.f_back if frame is not None and frame.f_back is not None else None


def _graph_python_ops(function) -> set[str]:
    """Python-callback op types in every traced graph of ``function`` and the functions it calls."""
    found: set[str] = set()
    try:
        concrete_functions = _tf_private.concrete_functions(function)
    except Exception:  # private API; without it the rule cannot place the ops and assumes the pipeline
        return found
    for concrete in concrete_functions:
        graph = concrete.graph
        found.update(op.type for op in graph.get_operations() if op.type in _PYTHON_OP_TYPES)
        for definition in graph.as_graph_def().library.function:
            found.update(node.op for node in definition.node_def if node.op in _PYTHON_OP_TYPES)
    return found


class Watcher:
    """Install with ``start()``, remove with ``stop()``; ``report()`` summarises what was seen."""

    def __init__(
        self,
        *,
        profile_dir: str | Path | None = None,
        profile_start: int = 5,
        profile_steps: int = DEFAULT_PROFILE_STEPS,
        replay_numerics: bool = True,
    ) -> None:
        self.profile_dir = Path(profile_dir) if profile_dir else None
        self.profile_start = profile_start
        self.profile_steps = profile_steps
        self.replay_numerics = replay_numerics
        # (kind, wall start, wall end, key, main-thread CPU at start, at end, process CPU at end or 0.0, process CPU
        # at start or 0.0)
        self.events: list[tuple[str, float, float, str, float, float, float, float]] = []
        self.functions: dict[str, dict[str, Any]] = {}
        self.boundaries: Counter[str] = Counter()
        self.eager_gradient_calls = 0
        self.eager_fit_gradient_calls = 0
        self.compiled_calls = 0
        self.sync_count = 0
        self.nonfinite: dict[str, Any] | None = None
        # Checks each top-level call's loss and keeps the weights before it, to replay the first bad step.
        self.numerics: NumericsMonitor | None = NumericsMonitor() if replay_numerics else None
        self.window: Any = None  # a ProfileWindow once the driving function is known
        self.window_driver: str | None = None
        # With a cache(): a window inside the filling epoch, kept only if the script ends before the cache fills.
        self.fill_window: Any = None
        self.fill_driver: str | None = None
        self._depth = 0
        self._in_sync = False
        self._main_thread = threading.get_ident()
        self._last_call: tuple[Any, tuple, dict] | None = None
        self._originals: list[tuple[Any, str, Any]] = []
        self._started = 0.0
        self._stopped = 0.0
        self.pipelines: list[dict[str, Any]] = []
        self.iterators_created = 0
        # The first pipeline with a cache stage: (step its iterator was made at, its dataset's id, epoch steps).
        self._cache: tuple[int, int, int | None] | None = None
        self.cache_filled_step: int | None = None
        # Which dataset each eager iterator reads (weakly: iterators come and go with epochs).
        self._iterator_datasets: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self.async_device = False

    # ------------------------------------------------------------------ install / remove
    def start(self) -> Watcher:
        iterator_ops = _tf_private.iterator_ops()
        backprop = _tf_private.backprop()
        polymorphic_function = _tf_private.polymorphic_function()
        eager_tensor_base = _tf_private.eager_tensor_base()

        watcher = self
        self._started = time.perf_counter()
        self.async_device = _async_device_visible()
        original_call = polymorphic_function.Function.__call__

        def call(function, *args, **kwargs):
            import tensorflow as tf

            if watcher._depth or threading.get_ident() != watcher._main_thread or not tf.executing_eagerly():
                return original_call(function, *args, **kwargs)
            entered, entered_cpu = time.perf_counter(), time.thread_time()
            watcher._depth += 1
            before = function.experimental_get_tracing_count()
            # A function object never traced before: remember where the script calls it (a new tf.function
            # per call shows up as many such objects for one Python function).
            site = _user_location(_caller_frame()) if before == 0 else None
            numerics = watcher.numerics
            if numerics is not None:
                numerics.before(function, args, kwargs)
            start, start_cpu, start_process = time.perf_counter(), time.thread_time(), time.process_time()
            outputs: Any = None
            try:
                outputs = original_call(function, *args, **kwargs)
                return outputs
            finally:
                end, end_cpu, end_process = time.perf_counter(), time.thread_time(), time.process_time()
                if numerics is not None and outputs is not None:
                    found = numerics.after(function, outputs)
                    if found is not None and watcher.nonfinite is None:
                        watcher.nonfinite = found
                watcher._depth -= 1
                watcher._on_call(
                    function,
                    args,
                    kwargs,
                    before=before,
                    start=start,
                    end=end,
                    site=site,
                    cpu=(start_cpu, end_cpu, end_process, start_process),
                )
                # The watcher's own bookkeeping (and profiler start/stop) is not the user's idle time.
                watcher._record("overhead", entered, start, "", (entered_cpu, start_cpu))
                watcher._record("overhead", end, time.perf_counter(), "", (end_cpu, time.thread_time()))

        self._patch(polymorphic_function.Function, "__call__", call)

        def make_sync(name: str):
            original = getattr(eager_tensor_base, name)

            def sync(tensor, *args, **kwargs):
                if watcher._in_sync or watcher._depth or threading.get_ident() != watcher._main_thread:
                    return original(tensor, *args, **kwargs)
                watcher._in_sync = True
                start, start_cpu = time.perf_counter(), time.thread_time()
                try:
                    value = original(tensor, *args, **kwargs)
                finally:
                    watcher._in_sync = False
                end, end_cpu = time.perf_counter(), time.thread_time()
                watcher.on_sync(tensor, value, start=start, end=end, frame=_caller_frame(), cpu=(start_cpu, end_cpu))
                watcher._record("overhead", end, time.perf_counter(), "", (end_cpu, time.thread_time()))
                return value

            return sync

        # f"{loss:.4f}" and print(loss) read the value through _numpy() inside __format__ / __str__ /
        # __repr__, never through numpy(): a status line printed every step is a host sync like float(loss).
        for name in (
            "numpy",
            "__float__",
            "__int__",
            "__bool__",
            "__array__",
            "__index__",
            "__format__",
            "__str__",
            "__repr__",
        ):
            self._patch(eager_tensor_base, name, make_sync(name))

        original_next = iterator_ops.OwnedIterator.__next__

        def next_(iterator):
            if watcher._depth or threading.get_ident() != watcher._main_thread:
                return original_next(iterator)
            start, start_cpu, start_process = time.perf_counter(), time.thread_time(), time.process_time()
            try:
                return original_next(iterator)
            except StopIteration:
                watcher._on_epoch_end(iterator)
                epoch_end = time.perf_counter()
                watcher._record("epoch", epoch_end, epoch_end, "")
                raise
            finally:
                end, end_cpu, end_process = time.perf_counter(), time.thread_time(), time.process_time()
                watcher._record("next", start, end, "", (start_cpu, end_cpu, end_process, start_process))

        self._patch(iterator_ops.OwnedIterator, "__next__", next_)

        original_init = iterator_ops.OwnedIterator.__init__

        def init(iterator, dataset=None, *args, **kwargs):
            original_init(iterator, dataset, *args, **kwargs)
            import tensorflow as tf

            if dataset is None or watcher._depth or threading.get_ident() != watcher._main_thread:
                return
            if not tf.executing_eagerly():
                return
            start, start_cpu = time.perf_counter(), time.thread_time()
            watcher._on_iterator(iterator, dataset)
            watcher._record("overhead", start, time.perf_counter(), "", (start_cpu, time.thread_time()))

        self._patch(iterator_ops.OwnedIterator, "__init__", init)

        original_gradient = backprop.GradientTape.gradient

        def gradient(tape, *args, **kwargs):
            import tensorflow as tf

            if watcher._depth or threading.get_ident() != watcher._main_thread or not tf.executing_eagerly():
                return original_gradient(tape, *args, **kwargs)
            start, start_cpu, start_process = time.perf_counter(), time.thread_time(), time.process_time()
            result = original_gradient(tape, *args, **kwargs)
            end, end_cpu, end_process = time.perf_counter(), time.thread_time(), time.process_time()
            watcher.eager_gradient_calls += 1
            caller = _caller_frame()
            if caller is not None and str(caller.f_globals.get("__name__", "")).startswith(KERAS_TRAINER_MODULE):
                watcher.eager_fit_gradient_calls += 1  # model.fit's own train_step, run eagerly (run_eagerly=True)
            watcher._record("grad", start, end, EAGER_DRIVER, (start_cpu, end_cpu, end_process, start_process))
            watcher._boundary(EAGER_DRIVER)
            watcher._record("overhead", end, time.perf_counter(), "", (end_cpu, time.thread_time()))
            return result

        self._patch(backprop.GradientTape, "gradient", gradient)
        return self

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        self._originals.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, replacement)

    def stop(self) -> None:
        if self.numerics is not None and self.nonfinite is None and self._originals:
            # The last calls' updates: the weights check runs every few calls, and once more here.
            self._depth += 1
            try:
                self.nonfinite = self.numerics.finish()
            finally:
                self._depth -= 1
        if self.fill_window is not None:
            self.fill_window.stop()
        if self.window is not None:
            self.window.stop()
        for owner, name, original in reversed(self._originals):
            setattr(owner, name, original)
        self._originals.clear()
        self._stopped = time.perf_counter()

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ recording
    def _record(self, kind: str, start: float, end: float, key: str, cpu: tuple[float, ...] = ()) -> None:
        """One event: wall times, and ``cpu`` = (main-thread CPU at start, at end[, process CPU at end, at start])."""
        if len(self.events) < _MAX_EVENTS:
            thread_start, thread_end, process_end, process_start = (*cpu, 0.0, 0.0, 0.0, 0.0)[:4]
            self.events.append((kind, start, end, key, thread_start, thread_end, process_end, process_start))

    def _on_call(
        self,
        function,
        args: tuple,
        kwargs: dict,
        *,
        before: int,
        start: float,
        end: float,
        site: str | None = None,
        cpu: tuple[float, ...] = (),
    ) -> None:
        key, name, location = _function_identity(function)
        record = self.functions.setdefault(
            key,
            {
                "name": name,
                "location": location,
                "calls": 0,
                "traces": [],
                "function": function,
                "instances": 0,
                "traces_total": 0,
                "call_site": "",
                "reduce_retracing": _tf_private.reduce_retracing(function),
                "module": _function_module(function),
            },
        )
        record["calls"] += 1
        record["function"] = function
        self.compiled_calls += 1
        after = function.experimental_get_tracing_count()
        record["traces_total"] += max(after - before, 0)
        if before == 0:
            record["instances"] += 1
            record["call_site"] = site or record["call_site"]
        if after > before:
            names = _argument_names(function, len(args))
            signature = [_describe_argument(n, a) for n, a in zip(names, args, strict=False)]
            signature += [_describe_argument(k, v) for k, v in sorted(kwargs.items())]
            if len(record["traces"]) < _MAX_TRACES_KEPT:
                record["traces"].append(signature)
            if len(record["traces"]) <= 3:  # a function retraced every call would be inspected every call
                record["python_ops"] = sorted(_graph_python_ops(function))
        self._last_call = (function, args, kwargs)
        self._record("call", start, end, key, cpu)
        self._boundary(key)

    def _steps_so_far(self) -> int:
        return max(self.boundaries.values(), default=0)

    def _on_iterator(self, iterator, dataset) -> None:
        """A new eager iterator: describe its pipeline; a second one over a cached pipeline means epoch 1 ended."""
        from tfpilot.diagnose.pipeline import describe_dataset

        self.iterators_created += 1
        try:
            shape = describe_dataset(dataset)
        except Exception:  # private tf.data attributes changed: no description, the default window
            return
        described = shape.to_dict()
        if described not in self.pipelines and len(self.pipelines) < 5:
            self.pipelines.append(described)
        self._iterator_datasets[iterator] = id(dataset)
        steps = self._steps_so_far()
        if self._cache is None and shape.cached:
            self._cache = (steps, id(dataset), shape.epoch_steps)
            if shape.epoch_steps is not None:
                self.cache_filled_step = steps + shape.epoch_steps
        elif (
            self._cache is not None
            and self.cache_filled_step is None
            and id(dataset) == self._cache[1]
            and steps > self._cache[0]  # a peek before training (Keras reads one batch to build) is no epoch
        ):
            self.cache_filled_step = steps

    def _on_epoch_end(self, iterator) -> None:
        if self._cache is not None and self.cache_filled_step is None:
            if self._iterator_datasets.get(iterator) == self._cache[1]:
                self.cache_filled_step = self._steps_so_far()

    def _window_may_start(self, count: int) -> bool:
        """After warm-up, and with a cache stage only once its first epoch has filled the cache."""
        if count < self.profile_start:
            return False
        if self._cache is None:
            return True
        if self.cache_filled_step is None:
            return False
        return count >= self.cache_filled_step + 1

    def _drain_steps(self) -> tuple[int, int]:
        """(guessed drain, slack): steps a buffer may serve when the profiler starts, and how far that may be off."""
        from tfpilot.diagnose.pipeline import AUTOTUNE_DRAIN_SLACK, PipelineShape

        if not self.pipelines:
            return 1, AUTOTUNE_DRAIN_SLACK
        shape = PipelineShape.from_dict(self.pipelines[0])
        return shape.drain_steps(), shape.drain_slack()

    def _boundary(self, key: str) -> None:
        """A step ended: move the profile window (the first driver to reach the start step owns it)."""
        self.boundaries[key] += 1
        if self.profile_dir is None or (self.window is not None and self.window.finished):
            return
        count = self.boundaries[key]
        if self.window_driver is None:
            if not self._window_may_start(count):
                self._fill_boundary(key, count)
                return
            from tfpilot.diagnose.capture import ProfileWindow

            if self.fill_window is not None and not self.fill_window.finished:
                self.fill_window.stop()  # the cache filled while its epoch was profiled: the real window follows

            # The steps right after the profiler starts may be served from buffers filled while it started:
            # they are profiled (the pipeline's work is in the session) but not measured.
            drain, slack = self._drain_steps()
            self.window_driver = key
            self.window = ProfileWindow(
                self.profile_dir,
                start_step=count,
                stop_step=count + drain + slack + self.profile_steps,
                measure_from=count + drain,
                context={"drain_steps": drain, "drain_slack": slack, "cache_filled_step": self.cache_filled_step},
            )
        if key != self.window_driver:
            return
        # Starting/stopping the profiler is the doctor's own cost: the caller records it as overhead.
        self.window.end_step(last_step=count - 1)
        self.window.begin_step(count)

    def _fill_boundary(self, key: str, count: int) -> None:
        """Profile the epoch that fills the cache, in case the script ends before it does (a later window replaces it)."""
        if self._cache is None or count < self.profile_start:
            return
        if self.fill_window is None:
            drain, slack = self._drain_steps()
            if self.cache_filled_step is not None and count + drain + self.profile_steps > self.cache_filled_step:
                return  # the epoch's length is known and the steady window starts soon after
            from tfpilot.diagnose.capture import ProfileWindow

            self.fill_driver = key
            self.fill_window = ProfileWindow(
                self.profile_dir or "profile",
                start_step=count,
                stop_step=count + drain + slack + self.profile_steps,
                measure_from=count + drain,
                context={"drain_steps": drain, "drain_slack": slack, "cache_filled_step": None, "in_cache_fill": True},
            )
        if key != self.fill_driver or self.fill_window.finished:
            return
        self.fill_window.end_step(last_step=count - 1)
        self.fill_window.begin_step(count)

    def on_sync(self, tensor, value, *, start: float, end: float, frame, cpu: tuple[float, ...] = ()) -> None:
        user, called = first_user_frame(frame)
        if user is None or _issued_by_tensorflow(called):
            return  # e.g. the eager gradient of reduce_sum reads its axes with .numpy(): not the user's sync
        location = f"{user.f_code.co_filename}:{user.f_lineno}"
        self.sync_count += 1
        self._record("sync", start, end, location, cpu)
        if self.nonfinite is None and self.replay_numerics:
            self._check_finite(value, location)
        elif self.nonfinite is not None and "seen_at" not in self.nonfinite and self._is_nonfinite(value):
            self.nonfinite["seen_at"] = location

    @staticmethod
    def _is_nonfinite(value: Any) -> bool:
        import numpy as np

        try:
            array = np.asarray(value)
            return array.dtype.kind == "f" and array.size <= 1_000_000 and not bool(np.all(np.isfinite(array)))
        except (TypeError, ValueError):
            return False

    def _check_finite(self, value: Any, location: str) -> None:
        import numpy as np

        if self.numerics is None or not self._is_nonfinite(value):
            return
        array = np.asarray(value)
        # No call's output showed it (the step returns nothing, or the NaN is in a metric read later).
        function = self._last_call[0] if self._last_call is not None else None
        self._depth += 1
        try:
            self.nonfinite = self.numerics.on_nonfinite_read(function, float(array.flat[0]), location)
        finally:
            self._depth -= 1
        self.nonfinite.setdefault("step", int(sum(self.boundaries.values())))

    # ------------------------------------------------------------------ report
    def _driver(self) -> str | None:
        calls = {key: record["calls"] for key, record in self.functions.items()}
        if self.eager_gradient_calls:
            calls[EAGER_DRIVER] = self.eager_gradient_calls
        if not calls:
            return None
        driver, count = max(calls.items(), key=lambda item: item[1])
        return driver if count >= _SKIP_WARMUP_STEPS + 3 else None

    def _timing(self) -> StepTiming | None:
        driver = self._driver()
        if driver is None:
            return None
        kind = "grad" if driver == EAGER_DRIVER else "call"
        # (wall start, wall end, main-thread CPU at start, at end, process CPU at end, at start) of each driver call.
        boundaries = [
            (s, e, t0, t1, p1, p0) for k, s, e, key, t0, t1, p1, p0 in self.events if k == kind and key == driver
        ]
        skip = _SKIP_WARMUP_STEPS
        if self.cache_filled_step is not None and self.cache_filled_step + 1 < len(boundaries) - 3:
            skip = max(skip, self.cache_filled_step + 1)  # the epoch that filled the cache is not the steady state
        boundaries = boundaries[skip:]
        if len(boundaries) < 3:
            return None
        # Only whole steps between the first and last boundary; boundaries are in time order.
        # Other tf.functions' top-level calls between the driver's ("call" events of another key) are compiled work.
        waits = sorted(
            (s, e, k, key, t1 - t0)
            for k, s, e, key, t0, t1, _, _ in self.events
            if (k in ("next", "sync", "overhead", "epoch") or (k == kind and key != driver))
            and boundaries[0][1] <= s <= boundaries[-1][1]
        )
        steps = len(boundaries) - 1
        step_times, idle_times, step_cpu, idle_cpu, host_cpu, step_core = [], [], [], [], [], []
        input_shares, epoch_start_input = [], 0.0
        starts = [w[0] for w in waits]
        for previous, following in zip(boundaries, boundaries[1:], strict=False):
            previous_end, next_start, next_end = previous[1], following[0], following[1]
            # Everything between two driver calls that is neither input, sync nor the watcher's own work is idle.
            inside = waits[bisect.bisect_left(starts, previous_end) : bisect.bisect_right(starts, next_start)]
            explained = sum(e - s for s, e, k, _, _ in inside if k in ("next", "sync", kind))
            overhead = sum(e - s for s, e, k, _, _ in inside if k == "overhead")
            idle_times.append(max(next_start - previous_end - explained - overhead, 0.0))
            step_times.append(next_end - previous_end - overhead)
            waited = sum(e - s for s, e, k, _, _ in inside if k == "next")
            input_shares.append(100.0 * waited / step_times[-1] if step_times[-1] > 0 else 0.0)
            if any(k == "epoch" for _, _, k, _, _ in inside):
                epoch_start_input += waited
            # The same split in CPU seconds: the main thread's CPU in the gap outside those events (Python work
            # between steps), and the process's CPU over the whole step. A loaded host stretches wall time (a
            # tiny compiled call waits for its threads to be scheduled), not the CPU the work takes.
            if previous[4] and following[4]:
                inside_cpu = sum(cpu for _, _, _, _, cpu in inside)
                idle_cpu.append(max(following[2] - previous[3] - inside_cpu, 0.0))
                sync_cpu = sum(cpu for _, _, k, _, cpu in inside if k == "sync")
                host_cpu.append(idle_cpu[-1] + sync_cpu)
                overhead_cpu = sum(cpu for _, _, k, _, cpu in inside if k == "overhead")
                step_cpu.append(max(following[4] - previous[4] - overhead_cpu, 0.0))
                if following[5]:
                    # The step on one core's terms, its critical path: the main thread's CPU between the calls
                    # (the loop's Python, reads, next(): one thread), then the call, which is at most its wall time
                    # (a quiet host; kernels on several cores) and at most its process CPU (a loaded host).
                    gap_cpu = max(following[2] - previous[3] - overhead_cpu, 0.0)
                    call = min(following[1] - following[0], max(following[4] - following[5], 0.0))
                    step_core.append(gap_cpu + call)
        total_input = sum(e - s for s, e, k, _, _ in waits if k == "next")
        producer_cpu = sum(
            max((p1 - p0) - (t1 - t0), 0.0)
            for k, s, _, _, t0, t1, p1, p0 in self.events
            if k == "next" and p1 and boundaries[0][1] <= s <= boundaries[-1][1]
        )
        total_sync = sum(e - s for s, e, k, _, _ in waits if k == "sync")
        total_sync_cpu = sum(cpu for _, _, k, _, cpu in waits if k == "sync")
        syncs = Counter(key for _, _, k, key, _ in waits if k == "sync")
        other_calls = [e - s for s, e, k, _, _ in waits if k == kind]
        overhead = sum(e - s for s, e, k, _, _ in waits if k == "overhead")
        total = boundaries[-1][1] - boundaries[0][1] - overhead
        gaps = sum(boundaries[i + 1][0] - boundaries[i][1] for i in range(steps)) - overhead
        calls = sum(b[1] - b[0] for b in boundaries[1:])
        idle = sum(idle_times)
        per = 1e3 / steps
        return StepTiming(
            driver=driver if driver == EAGER_DRIVER else self.functions[driver]["name"],
            steps=steps,
            step_ms=total * per,
            call_ms=calls * per,
            gap_ms=gaps * per,
            input_ms=total_input * per,
            sync_ms=total_sync * per,
            idle_ms=idle * per,
            syncs_per_step=sum(syncs.values()) / steps,
            idle_percent=100.0 * idle / total if total else 0.0,
            input_percent=100.0 * total_input / total if total else 0.0,
            sync_locations=dict(syncs.most_common(5)),
            idle_median_ms=1e3 * statistics.median(idle_times),
            step_median_ms=1e3 * statistics.median(step_times),
            measured_from_step=skip,
            other_calls_per_step=len(other_calls) / steps,
            other_call_ms=sum(other_calls) * per,
            idle_cpu_median_ms=1e3 * statistics.median(idle_cpu) if idle_cpu else 0.0,
            step_cpu_median_ms=1e3 * statistics.median(step_cpu) if step_cpu else 0.0,
            sync_cpu_ms=total_sync_cpu * per if step_cpu else 0.0,
            step_cpu_ms=1e3 * statistics.fmean(step_cpu) if step_cpu else 0.0,
            host_cpu_median_ms=1e3 * statistics.median(host_cpu) if host_cpu else 0.0,
            step_core_median_ms=1e3 * statistics.median(step_core) if step_core else 0.0,
            input_median_percent=statistics.median(input_shares),
            epoch_start_input_share=epoch_start_input / total_input if total_input else 0.0,
            input_producer_cpu_ms=producer_cpu * per,
        )

    def report(self) -> WatchReport:
        functions = []
        for key, record in self.functions.items():
            function = record["function"]
            functions.append(
                FunctionRecord(
                    key=key,
                    name=record["name"],
                    location=record["location"],
                    calls=record["calls"],
                    # Summed over every tf.function object that wraps this Python function.
                    tracing_count=max(record["traces_total"], int(function.experimental_get_tracing_count())),
                    traces=record["traces"],
                    python_ops=record.get("python_ops", []),
                    instances=max(record["instances"], 1),
                    call_site=record["call_site"],
                    reduce_retracing=record["reduce_retracing"],
                    module=record["module"],
                )
            )
        end = self._stopped or time.perf_counter()
        timing = self._timing()
        steady = self.window is not None and self.window.finished
        filling = not steady and self.fill_window is not None and self.fill_window.finished
        return WatchReport(
            functions=functions,
            timing=timing,
            eager_gradient_calls=self.eager_gradient_calls,
            eager_fit_gradient_calls=self.eager_fit_gradient_calls,
            compiled_calls=self.compiled_calls,
            sync_count=self.sync_count,
            nonfinite=self.nonfinite,
            wall_seconds=end - self._started,
            profile_dir=str(self.profile_dir) if steady or filling else None,
            profile_window="steady" if steady else "cache-fill" if filling else None,
            pipelines=self.pipelines,
            iterators_created=self.iterators_created,
            async_device=self.async_device,
            cache_filled_step=self.cache_filled_step,
            # Whether the timing covers only steps after the cache filled (None: no cache stage).
            cache_filled=None
            if self._cache is None
            else (
                self.cache_filled_step is not None
                and timing is not None
                and timing.measured_from_step >= self.cache_filled_step + 1
            ),
        )
