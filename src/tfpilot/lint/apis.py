"""Tables of TensorFlow and Keras API names that the rules key on, and name normalisation.

Names are written relative to their namespace (``"train.Saver"`` for ``tf.train.Saver``) so one
entry covers ``tf.X``, ``tf.compat.v1.X`` and ``from tensorflow.compat.v1 import X``. The
integration tests check every TF1 entry against the installed TensorFlow (present in
``tf.compat.v1``, absent from TF2's ``tf``) and every Keras entry against the installed Keras 3,
so these tables cannot silently drift from the real libraries.
"""

from __future__ import annotations

import dataclasses
import functools

from tfpilot.lint.keras2_names import keras2_module_removal, keras2_removal

__all__ = [
    "tf1_name",
    "keras_name",
    "TF1_SESSION",
    "TF1_PLACEHOLDER",
    "TF1_VARIABLE_SCOPE",
    "TF1_BATCH_NORM",
    "TF1_CHECK_NUMERICS",
    "TF1_QUEUES",
    "TF1_TRAINING",
    "TF1_SAVER_SUMMARY",
    "TF1_MODE_SWITCHES",
    "TF1_COVERED",
    "KerasRemoval",
    "KERAS_REMOVED",
    "KERAS_REMOVED_METHODS",
    "find_keras_removal",
    "DATASET_CONSTRUCTORS",
    "is_dataset_constructor",
    "DATASET_CALL_NAMES",
    "TF_FUNCTION_QUALNAMES",
    "tf1_match",
    "plain_tf1_match",
    "via_compat_v1",
    "is_keras_path",
]

# What `@tf.function` resolves to through the file's imports.
TF_FUNCTION_QUALNAMES = frozenset(
    {"tensorflow.function", "tensorflow.compat.v2.function", "tensorflow.compat.v1.function"}
)

_TF_PREFIXES = ("tensorflow.compat.v1.", "tensorflow.compat.v2.", "tensorflow.")
_KERAS_PREFIXES = (
    ("tensorflow.keras.", "tensorflow.keras"),
    ("tensorflow.python.keras.", "tensorflow.keras"),
    # TF 2.21's tf.compat.v1.keras is the same Keras 3 as tf.keras (keras._tf_keras.keras): no Keras 2 in compat.v1.
    ("tensorflow.compat.v1.keras.", "tensorflow.keras"),
    ("keras.", "keras"),
)


@functools.lru_cache(maxsize=4096)
def tf1_name(qualname: str | None) -> str | None:
    """``tensorflow.compat.v1.train.Saver`` and ``tensorflow.train.Saver`` -> ``train.Saver``."""
    if not qualname:
        return None
    for prefix in _TF_PREFIXES:
        if qualname.startswith(prefix):
            return qualname[len(prefix) :]
    return None


def via_compat_v1(qualname: str | None) -> bool:
    """``tensorflow.compat.v1.Session``: reached through ``tf.compat.v1`` (or ``import
    tensorflow.compat.v1 as tf``), where TF 2.21 still has it."""
    return bool(qualname) and qualname.startswith("tensorflow.compat.v1.")  # type: ignore[union-attr]


@functools.lru_cache(maxsize=8192)
def plain_tf1_match(qualname: str | None, table: frozenset[str]) -> str | None:
    """tf1_match for the TF1 spelling only (``tf.Session`` under ``import tensorflow as tf``),
    which TF 2.x removed. Through tf.compat.v1 the same API still runs on TF 2.21: the TF1 rules
    leave it to TFP607's one note per file instead of claiming a defect at every use."""
    if via_compat_v1(qualname):
        return None
    return tf1_match(qualname, table)


@functools.lru_cache(maxsize=8192)
def tf1_match(qualname: str | None, table: frozenset[str]) -> str | None:
    """The entry of ``table`` that ``qualname`` is (or is inside): ``GraphKeys.UPDATE_OPS`` -> ``GraphKeys``."""
    name = tf1_name(qualname)
    if name is None:
        return None
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in table:
            return candidate
    return None


def is_keras_path(qualname: str | None, *paths: str) -> bool:
    """``is_keras_path(q, "layers.Lambda")``: q is that Keras name in keras or tf.keras."""
    found = keras_name(qualname)
    return found is not None and found[1] in paths


@functools.lru_cache(maxsize=4096)
def keras_name(qualname: str | None) -> tuple[str, str] | None:
    """``tensorflow.keras.layers.Dense`` -> ("tensorflow.keras", "layers.Dense"); keras.* alike."""
    if not qualname:
        return None
    for prefix, namespace in _KERAS_PREFIXES:
        if qualname.startswith(prefix):
            return namespace, qualname[len(prefix) :]
    return None


# --- TF1 graph-mode APIs (all live on in tf.compat.v1, none exist in TF2's tf namespace) ---------

TF1_SESSION = frozenset({"Session", "InteractiveSession"})
TF1_PLACEHOLDER = frozenset({"placeholder", "placeholder_with_default", "sparse_placeholder"})
TF1_VARIABLE_SCOPE = frozenset(
    {"variable_scope", "get_variable", "get_variable_scope", "AUTO_REUSE", "get_local_variable"}
)
TF1_BATCH_NORM = frozenset({"layers.batch_normalization", "contrib.layers.batch_norm"})
TF1_CHECK_NUMERICS = frozenset({"add_check_numerics_ops"})
TF1_QUEUES = frozenset(
    {
        "train.start_queue_runners",
        "train.QueueRunner",
        "train.add_queue_runner",
        "train.string_input_producer",
        "train.input_producer",
        "train.slice_input_producer",
        "train.range_input_producer",
        "train.shuffle_batch",
        "train.batch",
        "train.batch_join",
        "train.shuffle_batch_join",
        "train.maybe_batch",
        "train.maybe_shuffle_batch",
        "FIFOQueue",
        "RandomShuffleQueue",
        "PaddingFIFOQueue",
        "PriorityQueue",
        "TFRecordReader",
        "WholeFileReader",
        "TextLineReader",
        "FixedLengthRecordReader",
        "IdentityReader",
    }
)
TF1_TRAINING = frozenset(
    {
        "train.AdamOptimizer",
        "train.GradientDescentOptimizer",
        "train.MomentumOptimizer",
        "train.RMSPropOptimizer",
        "train.AdagradOptimizer",
        "train.AdadeltaOptimizer",
        "train.FtrlOptimizer",
        "train.ProximalGradientDescentOptimizer",
        "train.ProximalAdagradOptimizer",
        "train.Optimizer",
        "train.get_or_create_global_step",
        "train.get_global_step",
        "train.exponential_decay",
        "global_variables_initializer",
        "initialize_all_variables",
        "local_variables_initializer",
        "tables_initializer",
        "variables_initializer",
        "trainable_variables",
        "global_variables",
        "get_collection",
        "add_to_collection",
        "GraphKeys",
        "reset_default_graph",
    }
)
TF1_SAVER_SUMMARY = frozenset(
    {
        "train.Saver",
        "train.import_meta_graph",
        "summary.FileWriter",
        "summary.merge_all",
        "summary.merge",
        "saved_model.simple_save",
        "saved_model.Builder",
        "saved_model.builder.SavedModelBuilder",
        "saved_model.loader.load",
    }
)
TF1_MODE_SWITCHES = frozenset(
    {
        "disable_v2_behavior",
        "disable_eager_execution",
        "enable_eager_execution",
        "disable_resource_variables",
    }
)
# Whole modules that no compat layer keeps alive any more (TFP611, TFP612 report them).
TF1_REMOVED_MODULES = frozenset({"layers", "estimator"})
# Names with their own, more specific rule; the generic compat.v1 rule (TFP607) skips them.
TF1_COVERED = (
    TF1_REMOVED_MODULES
    | TF1_SESSION
    | TF1_PLACEHOLDER
    | TF1_VARIABLE_SCOPE
    | TF1_BATCH_NORM
    | TF1_CHECK_NUMERICS
    | TF1_QUEUES
    | TF1_TRAINING
    | TF1_SAVER_SUMMARY
    | TF1_MODE_SWITCHES
)


# --- Keras 2 APIs that Keras 3 removed -----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class KerasRemoval:
    """``path`` (relative to the keras namespace; a prefix when ``prefix``) is gone in Keras 3.

    ``rename_to`` replaces ``path`` mechanically (``--fix``); otherwise ``hint`` says what to do.
    ``namespaces`` lists where it is gone: ``tf.keras`` in TF 2.16+ keeps a few legacy aliases.
    ``stub``: the name still imports but raises when used (Keras 3's legacy optimizers).
    """

    path: str
    hint: str
    rename_to: str | None = None
    prefix: bool = False
    namespaces: tuple[str, ...] = ("keras", "tensorflow.keras")
    stub: bool = False


KERAS_REMOVED: tuple[KerasRemoval, ...] = (
    KerasRemoval(
        "layers.experimental.preprocessing",
        "preprocessing layers moved to `keras.layers` (keras.layers.Rescaling, ...)",
        rename_to="layers",
        prefix=True,
    ),
    KerasRemoval(
        "layers.experimental.EinsumDense",
        "use `keras.layers.EinsumDense`",
        rename_to="layers.EinsumDense",
    ),
    KerasRemoval(
        "layers.experimental.SyncBatchNormalization",
        "use `keras.layers.BatchNormalization(synchronized=True)`",
    ),
    KerasRemoval("layers.CuDNNLSTM", "use `keras.layers.LSTM` (it picks cuDNN itself)", "layers.LSTM"),
    KerasRemoval("layers.CuDNNGRU", "use `keras.layers.GRU` (it picks cuDNN itself)", "layers.GRU"),
    KerasRemoval("layers.DenseFeatures", "use `keras.utils.FeatureSpace` or preprocessing layers"),
    KerasRemoval("layers.LocallyConnected1D", "use `keras.layers.Conv1D` or a custom layer"),
    KerasRemoval("layers.LocallyConnected2D", "use `keras.layers.Conv2D` or a custom layer"),
    KerasRemoval(
        "layers.ThresholdedReLU",
        "use `keras.layers.ReLU(threshold=...)`",
        namespaces=("keras",),
    ),
    KerasRemoval("experimental", "`keras.experimental` is gone; see the Keras 3 migration guide", prefix=True),
    KerasRemoval(
        "wrappers.scikit_learn",
        "use `keras.wrappers.SKLearnClassifier` / `SKLearnRegressor`",
        prefix=True,
    ),
    KerasRemoval("engine", "import public names: `keras.Model`, `keras.layers.Layer`", prefix=True),
    KerasRemoval("utils.multi_gpu_model", "use `tf.distribute.MirroredStrategy().scope()`"),
    KerasRemoval("utils.generic_utils", "import from `keras.utils` directly", prefix=True),
    KerasRemoval("utils.np_utils", "use `keras.utils.to_categorical`", prefix=True),
    KerasRemoval("utils.vis_utils", "use `keras.utils.plot_model`", prefix=True),
    KerasRemoval("layers.merge", "import merge layers from `keras.layers`", prefix=True),
    KerasRemoval("layers.core", "import core layers from `keras.layers`", prefix=True),
    KerasRemoval("backend.get_session", "TF2 has no sessions; run eagerly or in a tf.function"),
    KerasRemoval("backend.set_session", "TF2 has no sessions; configure with tf.config"),
    KerasRemoval("backend.learning_phase", "pass `training=` to the model call instead"),
    KerasRemoval("backend.set_learning_phase", "pass `training=` to the model call instead"),
    KerasRemoval("backend.placeholder", "use `keras.Input(shape=...)`"),
    KerasRemoval("backend.function", "call the model, or wrap the computation in tf.function"),
    KerasRemoval(
        "backend.get_value",
        "use `keras.ops.convert_to_numpy(x)` or `variable.numpy()`",
        namespaces=("keras",),
    ),
    KerasRemoval("backend.set_value", "use `variable.assign(value)`", namespaces=("keras",)),
    KerasRemoval(
        "backend.batch_get_value",
        "use `keras.ops.convert_to_numpy` per value",
        namespaces=("keras",),
    ),
    KerasRemoval("backend.eval", "use `keras.ops.convert_to_numpy(x)`", namespaces=("keras",)),
    KerasRemoval("backend.variable", "use `keras.Variable(...)`", namespaces=("keras",)),
    KerasRemoval("backend.gradients", "use `tf.GradientTape`", namespaces=("keras",)),
    KerasRemoval("backend.int_shape", "use `x.shape` or `keras.ops.shape(x)`", namespaces=("keras",)),
    KerasRemoval(
        "optimizers.legacy",
        "Keras 3 has no legacy optimizers (it raises ImportError); use `keras.optimizers.*`",
        rename_to="optimizers",
        prefix=True,
        stub=True,
    ),
    KerasRemoval(
        "mixed_precision.experimental",
        "use `keras.mixed_precision.set_global_policy('mixed_float16')`",
        prefix=True,
    ),
    KerasRemoval("callbacks.experimental", "`keras.callbacks.experimental` is gone", prefix=True),
    KerasRemoval(
        "optimizers.experimental",
        "Keras 3's optimizers are Keras 2's experimental ones: use `keras.optimizers.<Name>` (AdamW, Adafactor, ...)",
        rename_to="optimizers",
        prefix=True,
    ),
    KerasRemoval(
        "losses.Reduction",
        "pass reduction as a string: `reduction='sum_over_batch_size'`",
        namespaces=("keras",),
    ),
    KerasRemoval(
        "preprocessing.image.ImageDataGenerator",
        "use `keras.utils.image_dataset_from_directory` with augmentation layers",
        namespaces=("keras",),
    ),
    KerasRemoval(
        "preprocessing.text.Tokenizer",
        "use `keras.layers.TextVectorization`",
        namespaces=("keras",),
    ),
)

# Model methods that Keras 3 removed; ``model.fit`` and friends take generators and datasets.
KERAS_REMOVED_METHODS: dict[str, str] = {
    "fit_generator": "fit",
    "evaluate_generator": "evaluate",
    "predict_generator": "predict",
}
# Keras 2's private function builders, which code of the Keras 2.2 era called by hand (the
# thread-safety workaround before serving from threads); Keras 3 models have none of them
# (AttributeError) and build their functions on first use.
KERAS2_PRIVATE_METHODS = frozenset({"_make_predict_function", "_make_train_function", "_make_test_function"})


# What `keras.backend` still has in Keras 3 (settings and dtype helpers), and what TF 2.21's
# `tf.keras.backend` has (Keras 3's tf.keras keeps Keras 2's functional backend beside them). Any
# other name under either is gone: AttributeError. Checked against the installed Keras by
# tests/unit/lint/test_lint_tf_premises.py.
KERAS3_BACKEND = frozenset(
    {
        "backend", "clear_session", "epsilon", "floatx", "get_uid", "image_data_format", "is_float_dtype",
        "is_int_dtype", "is_keras_tensor", "result_type", "set_epsilon", "set_floatx", "set_image_data_format",
        "standardize_dtype",
    }
)  # fmt: skip
TF_KERAS3_BACKEND = KERAS3_BACKEND | frozenset(
    {
        "abs", "all", "any", "arange", "argmax", "argmin", "batch_dot", "batch_flatten", "batch_get_value",
        "batch_normalization", "batch_set_value", "bias_add", "binary_crossentropy", "binary_focal_crossentropy",
        "cast", "cast_to_floatx", "categorical_crossentropy", "categorical_focal_crossentropy", "clip",
        "concatenate", "constant", "conv1d", "conv2d", "conv2d_transpose", "conv3d", "cos", "count_params",
        "ctc_batch_cost", "ctc_decode", "ctc_label_dense_to_sparse", "cumprod", "cumsum", "depthwise_conv2d", "dot",
        "dropout", "dtype", "elu", "equal", "eval", "exp", "expand_dims", "eye", "flatten", "foldl", "foldr",
        "gather", "get_value", "gradients", "greater", "greater_equal", "hard_sigmoid", "in_top_k", "int_shape",
        "is_sparse", "l2_normalize", "less", "less_equal", "log", "map_fn", "max", "maximum", "mean", "min",
        "minimum", "moving_average_update", "name_scope", "ndim", "not_equal", "one_hot", "ones", "ones_like",
        "permute_dimensions", "pool2d", "pool3d", "pow", "prod", "random_bernoulli", "random_normal",
        "random_normal_variable", "random_uniform", "random_uniform_variable", "relu", "repeat", "repeat_elements",
        "reshape", "resize_images", "resize_volumes", "reverse", "rnn", "round", "separable_conv2d", "set_value",
        "shape", "sigmoid", "sign", "sin", "softmax", "softplus", "softsign", "sparse_categorical_crossentropy",
        "spatial_2d_padding", "spatial_3d_padding", "sqrt", "square", "squeeze", "stack", "std", "stop_gradient",
        "sum", "switch", "tanh", "temporal_padding", "tile", "to_dense", "transpose", "truncated_normal", "update",
        "update_add", "update_sub", "var", "variable", "zeros", "zeros_like",
    }
)  # fmt: skip


@functools.lru_cache(maxsize=512)
def _backend_removal(namespace: str, name: str) -> KerasRemoval:
    """One entry per (namespace, name), so that callers may compare entries by identity."""
    if namespace == "keras":
        hint = (
            "Keras 3's `keras.backend` keeps only its settings functions (floatx, epsilon, image_data_format, ...); "
            "use `keras.ops` (keras.ops.relu, keras.ops.image.resize, ...) or `tf.*`"
        )
    else:
        hint = "TF 2.21's `tf.keras.backend` does not have it either; use `keras.ops` or `tf.*`"
    return KerasRemoval(f"backend.{name}", hint, namespaces=(namespace,))


@functools.lru_cache(maxsize=4096)
def find_keras_removal(namespace: str, path: str) -> KerasRemoval | None:
    """The removal entry matching ``path`` (``layers.CuDNNLSTM``) in ``namespace``, if any; any
    ``backend.<name>`` that Keras 3's backend module of that namespace lacks counts as one."""
    for entry in KERAS_REMOVED:
        if namespace not in entry.namespaces:
            continue
        if path == entry.path or (entry.prefix and path.startswith(entry.path + ".")):
            return entry
    parts = path.split(".")
    if len(parts) == 2 and parts[0] == "backend" and parts[1] and not parts[1].startswith("_"):
        kept = KERAS3_BACKEND if namespace == "keras" else TF_KERAS3_BACKEND
        if parts[1] not in kept:
            return _backend_removal(namespace, parts[1])
    generated = keras2_removal(namespace, path)
    if generated is not None:
        return _generated_removal(namespace, *generated)
    module = keras2_module_removal(path)
    if module is not None:
        return _module_removal(namespace, module)
    return None


@functools.lru_cache(maxsize=256)
def _module_removal(namespace: str, module: str) -> KerasRemoval:
    """A Keras 2 module (``utils.data_utils``, ``layers.recurrent``) that no Keras 3 namespace has: the import
    fails (ModuleNotFoundError); its public names, where Keras 3 kept them, live one level up."""
    prefix = "keras" if namespace == "keras" else "tf.keras"
    parent = module.split(".")[0]
    hint = (
        f"`{prefix}.{module}` was a module of Keras 2's source tree (ModuleNotFoundError in Keras 3); Keras 3 "
        f"exports the public names it held from `{prefix}.{parent}`"
        if "." in module
        else "Keras 3 has no such module (ModuleNotFoundError)"
    )
    return KerasRemoval(module, hint, prefix=True, namespaces=(namespace,))


_PYDATASET_WORKERS = "Keras 3 runs a `keras.utils.PyDataset(workers=, use_multiprocessing=)` itself"
# What to write instead, for the generated table's names that real code uses most (each replacement is public
# Keras 3 API; test_lint_round17.py resolves the names they cite).
GENERATED_HINTS = {
    "models.model_from_config": "use `keras.saving.deserialize_keras_object(config)` (or `keras.Model.from_config`)",
    "models.model_from_yaml": "Keras 3 reads no YAML: save the config with `model.to_json()` and use "
    "`keras.models.model_from_json`",
    "utils.OrderedEnqueuer": _PYDATASET_WORKERS,
    "utils.GeneratorEnqueuer": _PYDATASET_WORKERS,
    "utils.SequenceEnqueuer": _PYDATASET_WORKERS,
    "callbacks.BaseLogger": "Keras 3 averages the epoch's logs itself: drop it",
    "layers.AbstractRNNCell": "subclass `keras.layers.Layer` with `state_size` / `output_size` and wrap it in "
    "`keras.layers.RNN`",
    "layers.RandomHeight": "use `keras.layers.RandomZoom(height_factor=..., width_factor=0)` or "
    "`keras.layers.Resizing`",
    "layers.RandomWidth": "use `keras.layers.RandomZoom(height_factor=0, width_factor=...)` or `keras.layers.Resizing`",
}


@functools.lru_cache(maxsize=512)
def _generated_removal(namespace: str, path: str, replacement: str | None) -> KerasRemoval:
    """An entry of the generated table of Keras 2 names (lint/keras2_names.py), one per name and namespace."""
    if replacement is not None:
        prefix = "keras" if namespace == "keras" else "tf.keras"
        hint = f"use `{prefix}.{replacement}`: the same Keras 2 function under the name this Keras kept"
    else:
        hint = GENERATED_HINTS.get(
            path, "Keras 3 has no such API; see keras.io's Keras 3 migration guide for what replaces it"
        )
    return KerasRemoval(path, hint, rename_to=replacement, namespaces=(namespace,))


# --- tf.data ---------------------------------------------------------------------------------------

# Qualified names whose call returns a tf.data.Dataset (the root of a pipeline chain).
DATASET_CONSTRUCTORS = frozenset(
    {
        "tensorflow.data.TFRecordDataset",
        "tensorflow.data.TextLineDataset",
        "tensorflow.data.FixedLengthRecordDataset",
        "keras.utils.image_dataset_from_directory",
        "keras.utils.text_dataset_from_directory",
        "keras.utils.audio_dataset_from_directory",
        "keras.utils.timeseries_dataset_from_array",
        "keras.preprocessing.image_dataset_from_directory",
        "tensorflow_datasets.load",
    }
)


def is_dataset_constructor(qualname: str | None) -> bool:
    if not qualname:
        return False
    if qualname.startswith(("tensorflow.data.Dataset.", "tensorflow.data.experimental.")):
        return True
    if qualname.startswith("tensorflow.keras."):
        qualname = "keras." + qualname[len("tensorflow.keras.") :]
    return qualname in DATASET_CONSTRUCTORS


# Names of tf.data.Dataset methods and constructors: an assignment whose outermost call has one
# of these names may hold a pipeline (everything else is skipped cheaply).
DATASET_CALL_NAMES = frozenset(
    {
        "map",
        "batch",
        "shuffle",
        "prefetch",
        "cache",
        "repeat",
        "filter",
        "take",
        "skip",
        "interleave",
        "flat_map",
        "padded_batch",
        "unbatch",
        "zip",
        "concatenate",
        "enumerate",
        "apply",
        "with_options",
        "shard",
        "rebatch",
        "ragged_batch",
        "window",
        "scan",
        "group_by_window",
        "bucket_by_sequence_length",
        "take_while",
        "unique",
        "sample_from_datasets",
        "choose_from_datasets",
        "from_tensor_slices",
        "from_tensors",
        "range",
        "list_files",
        "from_generator",
        "load",
        "ignore_errors",
        "snapshot",
        "save",
        "assert_cardinality",
        "map_with_legacy_function",
        "get_single_element",
    }
)


# TensorFlow's private, frozen copy of Keras 2 (what `from tensorflow.python import keras` binds).
PRIVATE_KERAS = "tensorflow.python.keras"

# Libraries whose Keras objects are Keras 2 (they ask for tf_keras / TF_USE_LEGACY_KERAS=1 under
# TF 2.16+); the top-level import name of each.
KERAS2_LIBRARIES = (
    "tensorflow_hub",
    "tensorflow_recommenders",
    "tf_agents",
    "tensorflow_model_optimization",
    "tensorflow_decision_forests",
    "tensorflow_ranking",
    "tensorflow_federated",
    "official",
    "transformers",
)
# Of those, the ones that refuse Keras 3 outright (they raise at import or at first use unless
# TF_USE_LEGACY_KERAS=1 is set), so a file importing one runs on Keras 2. tensorflow_hub, the
# Model Garden and transformers import fine under Keras 3 (only their Keras objects need
# Keras 2), so the rest of such a file is still Keras 3 code.
KERAS2_ONLY_LIBRARIES = (
    "tensorflow_recommenders",
    "tf_agents",
    "tensorflow_model_optimization",
    "tensorflow_decision_forests",
)
