"""The one place tfpilot reaches into private TensorFlow and Keras APIs.

Each entry names what it uses and why no public API does the same; a failed lookup raises a
one-line error naming the installed version and the tfpilot feature that needs it
(tests/unit/test_tf_private.py checks that each still exists and behaves as used).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "PrivateApiMissing",
    "apply_weight_decay",
    "backprop",
    "build_compile_state",
    "compile_config",
    "concrete_functions",
    "dataset_inputs",
    "disable_all_reduce",
    "eager_shape_and_values",
    "eager_tensor_base",
    "fast_path_execute",
    "first_call_shapes",
    "fingerprinting_utils",
    "flatten_layers",
    "framework_ops",
    "iteration_counter",
    "iterator_ops",
    "load_graph_without_variables",
    "map_function_graph",
    "onednn_enabled",
    "optimizer_variables_known",
    "op_callbacks",
    "op_is_stateful",
    "polymorphic_function",
    "reduce_retracing",
    "session_callable",
    "sleep_dataset_op",
    "validation_split_of",
    "xplane_pb2",
]


class PrivateApiMissing(RuntimeError):
    """A private TensorFlow/Keras API tfpilot relies on is gone in the installed version."""


def _missing(what: str, feature: str) -> PrivateApiMissing:
    # The versions from the installed distributions' metadata, not by importing the packages: the
    # very module that is missing may be one that importing Keras needs.
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "(not installed)"

    tensorflow = next(
        (v for v in map(installed, ("tensorflow", "tensorflow-cpu", "tf-nightly")) if v != "(not installed)"),
        "(not installed)",
    )
    keras = next((v for v in map(installed, ("keras", "keras-nightly")) if v != "(not installed)"), "(not installed)")
    return PrivateApiMissing(
        f"{feature} needs {what}, which Keras {keras} / TensorFlow {tensorflow} no longer has; "
        "install the versions tfpilot pins (pyproject.toml) or report it"
    )


def _module(name: str, feature: str) -> Any:
    """Import a private module by name; its absence is one line naming the versions and the feature."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise _missing(name, feature) from None


def build_compile_state(model: Any, data: Any) -> None:
    """Create the variables of the compiled loss and metrics from one batch (symbolically).

    Why: on one device Keras defers this to the first trace of the train step
    (TensorFlowTrainer._maybe_symbolic_build returns early without a strategy), so the metric
    variables do not exist yet when tfpilot's NaN guard lists the state a step may change.
    Uses Trainer._symbolic_build(data_batch=...), the same call fit makes under a strategy.
    """
    build = getattr(model, "_symbolic_build", None)
    if build is None:
        raise _missing("keras.Model._symbolic_build", "tfpilot.fit's NaN guard")
    build(data_batch=data)


def validation_split_of(arrays: tuple[Any, Any, Any], validation_split: float) -> Any:
    """The (x, y, sample_weight) rows model.fit holds out for `validation_split`.

    Why: tfpilot.fit keeps the validation rows for `tfpilot evaluate`; they must be exactly the
    rows Keras held out, and Keras' own split (array_slicing.train_validation_split) is the only
    place that says which (the last rows, before shuffling)."""
    try:
        from keras.src.trainers.data_adapters import array_slicing
    except ImportError:
        raise _missing(
            "keras.src.trainers.data_adapters.array_slicing", "keeping tfpilot.fit's validation_split rows"
        ) from None
    _, validation = array_slicing.train_validation_split(arrays, validation_split=validation_split)
    return validation


def load_graph_without_variables(session: Any, tags: list[str], path: str) -> None:
    """Load a SavedModel's graph into `session` and run its init ops, restoring no checkpoint.

    Why: a SavedModel without variables/ (a frozen graph, an ONNX conversion, a copy through git,
    which keeps no empty directory) is what TF Serving loads by skipping the restore when
    variables/variables.index is absent (its C++ loader); tf.saved_model.load and the TF1
    loader.load both insist on the checkpoint. SavedModelLoader's load_graph and run_init_ops
    are the two halves of loader.load without the restore in between."""
    try:
        from tensorflow.python.saved_model.loader_impl import SavedModelLoader
    except ImportError:
        raise _missing(
            "tensorflow.python.saved_model.loader_impl.SavedModelLoader", "serving a SavedModel without variables/"
        ) from None
    loader = SavedModelLoader(path)
    loader.load_graph(session.graph, tags)
    loader.run_init_ops(session, tags)


# ----------------------------------------------------------------------------------- Keras


def flatten_layers(model: Any, *, include_self: bool = False) -> list[Any]:
    """Every layer of a model, nested ones included.

    Why: Keras 3 has no public recursive walk (`model.layers` is one level); names in check_numerics
    messages, the guard's layer state and custom-object modules all need the nested layers."""
    walk = getattr(model, "_flatten_layers", None)
    if walk is None:
        raise _missing("keras.Layer._flatten_layers", "walking a model's nested layers")
    return list(walk(include_self=include_self, recursive=True))


def first_call_shapes(model: Any) -> Any | None:
    """The shapes of what a built layer's first call received (its first argument's structure), or None.

    Why: a subclassed model declares no Inputs, and Keras keeps the shapes it was built from only
    in the private `_build_shapes_dict` (`{"inputs_shape": [(32, 5, 24, 24), (32, 24, 11)]}`);
    tfpilot.fit needs them to serve a model whose own train_step calls it on part of each batch."""
    shapes = getattr(model, "_build_shapes_dict", None)
    if not isinstance(shapes, dict) or len(shapes) != 1:
        return None
    return next(iter(shapes.values()))


def compile_config(model: Any) -> dict[str, Any]:
    """The arguments model.compile was given (loss, metrics, ...), {} for an uncompiled model.

    Why: Keras keeps them only in the private CompileConfig; tfpilot.fit records the modules that
    define a custom loss or metric so `tfpilot export` can import them."""
    config = getattr(getattr(model, "_compile_config", None), "config", None)
    return dict(config) if isinstance(config, dict) else {}


def disable_all_reduce(optimizer: Any) -> bool:
    """Make a Keras optimizer apply the gradients it is given as the global gradient (no all-reduce).

    Why: under a distribution strategy Keras 3's optimizer.apply sums gradients across replicas
    itself; tfpilot's step reduces them first (to check and clip the global norm), and Keras 3
    has no public switch (Keras 2's experimental_aggregate_gradients=False). Returns False when
    this Keras has no such hook; the caller then passes per-replica gradients."""
    if not hasattr(optimizer, "_all_reduce_sum_gradients"):
        return False
    optimizer._all_reduce_sum_gradients = lambda grads_and_vars: list(grads_and_vars)
    return True


def optimizer_variables_known(optimizer: Any) -> list[Any]:
    """The trainable variables a built Keras optimizer applies gradients to, in its order.

    Why: `apply(grads)` without variables pairs the gradients with this private list; the NaN guard
    needs the same pairing to know which variables a gradient-less variable leaves out."""
    return list(getattr(optimizer, "_trainable_variables", None) or [])


def iteration_counter(optimizer: Any) -> Any:
    """The variable that counts an optimizer's apply() calls (one per training batch).

    Why: with `gradient_accumulation_steps`, Keras 3's public `iterations` is a tensor (the batch
    count floor-divided by the accumulation steps), which cannot be assigned; the count of batches
    the NaN guard takes back after a refused update is the private `_iterations`. Elsewhere the
    public one is the variable (a LossScaleOptimizer's is its inner optimizer's: its own
    `_iterations` is another variable, which nothing reads)."""
    inner = getattr(optimizer, "inner_optimizer", None)
    if inner is not None:
        return iteration_counter(inner)
    public = optimizer.iterations
    if hasattr(public, "assign_add"):
        return public
    counter = getattr(optimizer, "_iterations", None)
    if counter is None or not hasattr(counter, "assign_add"):
        raise _missing("keras.optimizers.Optimizer._iterations", "tfpilot.fit's NaN guard")
    return counter


def apply_weight_decay(optimizer: Any, variables: list[Any]) -> None:
    """Apply the optimizer's decoupled weight decay (AdamW's `w -= w * wd * lr`) to `variables`,
    as its apply() does before the gradient update.

    Why: Keras 3 has no public call for the decay alone; tfpilot.fit replays the decay that
    model.fit's step runs without a batch on the call that finds a dataset's end."""
    if not hasattr(optimizer, "_apply_weight_decay"):
        raise _missing("keras.optimizers.Optimizer._apply_weight_decay", "tfpilot.fit's end-of-data weight decay")
    optimizer._apply_weight_decay(variables)


# ------------------------------------------------------------------------------ TensorFlow


def onednn_enabled() -> bool | None:
    """Whether TensorFlow runs its oneDNN custom CPU kernels in this process (None when it cannot say).

    Why private: TensorFlow decides at start-up (a oneDNN build, an x86/supported CPU, TF_ENABLE_ONEDNN_OPTS)
    and says so only in a C++ log line ("oneDNN custom operations are on"), which tfpilot hides; the
    decision itself is exposed only by this pywrap module."""
    try:
        port = _module("tensorflow.python.util._pywrap_util_port", "the oneDNN round-off note on parity checks")
    except PrivateApiMissing:
        return None
    check = getattr(port, "IsMklEnabled", None)
    return bool(check()) if check is not None else None


def framework_ops() -> Any:
    """tensorflow.python.framework.ops: EagerTensor and _EagerTensorBase, whose numpy(),
    __float__ ... the doctor's watchers wrap to see host syncs (no public type is the base)."""
    return _module("tensorflow.python.framework.ops", "the doctor's host-sync and numerics watchers")


def eager_tensor_base() -> Any:
    base = getattr(framework_ops(), "_EagerTensorBase", None)
    if base is None:
        raise _missing("tensorflow.python.framework.ops._EagerTensorBase", "the doctor's host-sync watcher")
    return base


def eager_shape_and_values(value: Any) -> tuple[tuple[int, ...] | None, Any]:
    """An EagerTensor's shape tuple and numpy array, read without its public numpy() (which the
    doctor wraps to count the user's host syncs: this read is the doctor's own)."""
    return value._shape_tuple(), value._numpy()


def concrete_functions(function: Any) -> list[Any]:
    """Every concrete function a tf.function has traced (no public listing exists); [] when gone."""
    listing = getattr(function, "_list_all_concrete_functions", None)
    return list(listing()) if listing is not None else []


def reduce_retracing(function: Any) -> bool:
    """Whether a tf.function was made with reduce_retracing=True (its constructor keeps the flag only privately)."""
    return bool(getattr(function, "_reduce_retracing", False))


def map_function_graph(dataset: Any) -> Any:
    """The traced graph of a tf.data map stage's function (the doctor reads whether it is random or stateful)."""
    return dataset._map_func.function.graph


def op_is_stateful(op: Any) -> bool:
    """Whether a graph op is stateful (random, variables, py_function): Operation has no public flag for it."""
    return bool(op._is_stateful)


def op_callbacks() -> Any:
    """TensorFlow's op-callback registry (what check_numerics itself uses): the NaN replay records which user
    line created each eager op, so a gradient op's NaN can be traced to its forward op."""
    return _module("tensorflow.python.framework.op_callbacks", "the NaN replay's forward-op lines")


def dataset_inputs(dataset: Any) -> list[Any]:
    """The datasets a tf.data stage reads from (the doctor describes the pipeline stage by stage)."""
    return list(dataset._inputs())


def polymorphic_function() -> Any:
    """The tf.function class, whose __call__ the doctor wraps to time and count calls."""
    return _module("tensorflow.python.eager.polymorphic_function.polymorphic_function", "the doctor's call watcher")


def iterator_ops() -> Any:
    """tf.data's OwnedIterator, whose __next__ the doctor wraps (input wait, epochs)."""
    return _module("tensorflow.python.data.ops.iterator_ops", "the doctor's input watcher")


def backprop() -> Any:
    return _module("tensorflow.python.eager.backprop", "the doctor's gradient watcher")


def fast_path_execute() -> tuple[Any, Any]:
    """(TFE_Py_FastPathExecute, the eager context): one ReadVariableOp per variable without the
    Python layers around it, so the doctor's numerics snapshot costs little per step."""
    pywrap_tfe = _module("tensorflow.python.pywrap_tfe", "the doctor's numerics snapshot")
    context = _module("tensorflow.python.eager.context", "the doctor's numerics snapshot")
    return pywrap_tfe.TFE_Py_FastPathExecute, context.context()


def fingerprinting_utils() -> Any:
    """Recomputes fingerprint.pb after tfpilot rewrites a signature's method name in saved_model.pb
    (TF Serving checks the fingerprint; no public API writes it)."""
    return _module("tensorflow.python.saved_model.fingerprinting_utils", "rewriting a signature's method name")


def sleep_dataset_op() -> Any:
    """tf.data's testing `sleep` transformation: a model that sleeps inside its graph for the
    serve tests' deadlines (a duration that does not depend on the machine)."""
    return _module("tensorflow.python.data.experimental.ops.testing", "the serve tests' sleeping model")


def xplane_pb2() -> Any:
    """The profiler's XSpace protobuf (tensorflow.tsl); xprof ships the same message."""
    return _module("tensorflow.tsl.profiler.protobuf.xplane_pb2", "reading a profile (tfpilot profile, doctor)")


def session_callable(session: Any, options: Any) -> Any:
    """A Session callable from CallableOptions without Session.make_callable's Python-side check of
    feed shapes: TF Serving feeds the graph and lets the kernels decide."""
    return session._make_callable_from_options(options)
