"""``--mode compat``: make tf_upgrade_v2's output run on TF 2.21 as a TF1 graph program.

tf_upgrade_v2 renames TF1 calls to ``tf.compat.v1.*`` but leaves three things that stop a TF1
script from starting on TF 2.21 with Keras 3:

1. TF2 runs eagerly, so ``tf.compat.v1.placeholder`` and ``Session.run`` fail. When the file
   builds a graph, ``tf.compat.v1.disable_v2_behavior()`` goes right after the TensorFlow import.
2. APIs that are gone, not renamed: ``tf.compat.v1.layers.*`` and ``tf.compat.v1.nn.rnn_cell.*``
   raise AttributeError with Keras 3, ``tf.contrib`` and ``tensorflow.examples.tutorials`` do not
   exist. ``REMOVED_APIS`` lists each one with its TF 2.21 home (``tf.flags`` ->
   ``tf.compat.v1.flags``, the projector -> ``tensorboard.plugins.projector``, ``np.int`` ->
   ``int``) or a helper (see ``tfpilot.migrate.shims``). The helpers keep TF1's variable names so
   existing checkpoints still load; they live in one module per output tree,
   ``tf1_compat_shims.py`` (``render_shim_module``), which migrated files import.
3. Imports of removed modules become assignments of the helper (``rnn = _tf1_rnn``), so the rest
   of the code reads as before and line numbers stay put.

Everything here works on source text with libcst and imports no TensorFlow.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.resources
import re
from collections.abc import Iterable, Mapping, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tfpilot.lint.numpy_removed import NUMPY_REMOVED
from tfpilot.tf_version import decide_version_test, installed_tensorflow

__all__ = [
    "CONTRIB_INITIALIZERS",
    "REMOVED_APIS",
    "SHIM_MODULE",
    "SHIMS_VERSION",
    "ESTIMATOR_COVERAGE",
    "RemovedApi",
    "render_shim_module",
    "CompatChange",
    "CompatResult",
    "HELPER_NAMES",
    "SHIM_BEGIN",
    "SHIM_END",
    "rewrite_compat",
    "shim_line_range",
    "unmarked",
    "import_bindings",
    "qualified_name",
    "dotted_name",
    "line_map",
]

SHIM_BEGIN = "# --- tfpilot migrate: helpers for TF1 APIs that TF 2.21 / Keras 3 removed (see the migration report) ---"
SHIM_END = "# --- end of tfpilot migrate helpers ---"

# Helper namespace -> (shim module in tfpilot.migrate.shims, the names it provides).
HELPER_NAMES: dict[str, tuple[str, frozenset[str]]] = {
    "_tf1_layers": (
        "layers",
        frozenset(
            {
                "dense",
                "conv1d",
                "conv2d",
                "conv2d_transpose",
                "max_pooling1d",
                "max_pooling2d",
                "average_pooling1d",
                "average_pooling2d",
                "dropout",
                "flatten",
                "batch_normalization",
                # the layer classes (tf.layers.Dense(units=1)(x)): the functions above, variables shared
                "Dense",
                "Conv1D",
                "Conv2D",
                "Conv2DTranspose",
                "BatchNormalization",
                "MaxPooling1D",
                "MaxPooling2D",
                "AveragePooling1D",
                "AveragePooling2D",
                "Dropout",
                "Flatten",
            }
        ),
    ),
    "_tf1_rnn": (
        "rnn",
        frozenset(
            {
                "BasicRNNCell",
                "BasicLSTMCell",
                "LSTMCell",
                "GRUCell",
                "MultiRNNCell",
                "DropoutWrapper",
                "LSTMStateTuple",
                "static_rnn",
                "static_bidirectional_rnn",
                "dynamic_rnn",
                "bidirectional_dynamic_rnn",
                "stack_bidirectional_dynamic_rnn",
                "LSTMBlockCell",
                "GRUBlockCell",
                "GRUBlockCellV2",
                "LayerNormBasicLSTMCell",
                "OutputProjectionWrapper",
                "ResidualWrapper",
            }
        ),
    ),
    "_tf1_mnist": ("mnist", frozenset({"read_data_sets", "load_dataset", "DataSet"})),
    "_tf1_contrib": (
        "contrib",
        frozenset(
            {
                "fully_connected",
                "conv2d",
                "max_pool2d",
                "avg_pool2d",
                "l1_regularizer",
                "l2_regularizer",
                "l1_l2_regularizer",
                "sum_regularizer",
                "apply_regularization",
                "batch_norm",
                "layer_norm",
                "dropout",
                "flatten",
                "sequence_loss",
                "model_analyzer",
                "arg_scope",
                "losses",
                "linear",
                "bias_add",
                "variance_scaling_initializer",
                "xavier_initializer",
                "xavier_initializer_conv2d",
                "get_variables",
                "conv2d_transpose",
                "convolution2d",
                "convolution2d_transpose",
                "one_hot_encoding",
                "embed_sequence",
            }
        ),
    ),
    "_tf1_legacy_seq2seq": ("seq2seq", frozenset({"rnn_decoder", "sequence_loss_by_example", "sequence_loss"})),
    "_tf1_crf": (
        "crf",
        frozenset(
            {
                "crf_unary_score",
                "crf_binary_score",
                "crf_sequence_score",
                "crf_log_norm",
                "crf_log_likelihood",
                "viterbi_decode",
            }
        ),
    ),
    "_tf1_lookup": (
        "lookup",
        frozenset(
            {
                "HashTable",
                "KeyValueTensorInitializer",
                "TextFileInitializer",
                "TextFileIndex",
                "index_table_from_file",
                "index_table_from_tensor",
                "index_to_string_table_from_file",
            }
        ),
    ),
    "_tf1_metrics": (
        "metrics",
        frozenset(
            {
                "streaming_accuracy",
                "streaming_auc",
                "streaming_precision",
                "streaming_recall",
                "streaming_mean_absolute_error",
                "streaming_mean_squared_error",
                "streaming_root_mean_squared_error",
                "streaming_mean_relative_error",
                "streaming_mean_iou",
                "streaming_true_positives",
                "streaming_false_positives",
                "streaming_true_negatives",
                "streaming_false_negatives",
                "streaming_sparse_precision_at_k",
                "streaming_sparse_recall_at_k",
                "streaming_mean",
                "streaming_mean_tensor",
                "accuracy",
                "aggregate_metrics",
                "aggregate_metric_map",
            }
        ),
    ),
    "_tf1_learn": ("learn", frozenset({"preprocessing"})),
    "_tf1_training": ("training", frozenset({"HParams"})),
    "_tf1_scipy_misc": (
        "scipy_misc",
        frozenset({"imread", "imsave", "imresize", "toimage", "fromimage", "bytescale"}),
    ),
    "_tf1_seq2seq": (
        "seq2seq",
        frozenset(
            {
                "BasicDecoderOutput",
                "AttentionWrapperState",
                "sequence_loss",
                "tile_batch",
                "TrainingHelper",
                "GreedyEmbeddingHelper",
                "BasicDecoder",
                "dynamic_decode",
                "LuongAttention",
                "BahdanauAttention",
                "AttentionWrapper",
            }
        ),
    ),
    "_tf1_image": (
        "image",
        frozenset(
            {
                "transform",
                "rotate",
                "translate",
                "angles_to_projective_transforms",
                "translations_to_projective_transforms",
            }
        ),
    ),
    "_tf1_estimator": (
        "estimator",
        frozenset(
            {
                "Estimator",
                "EstimatorSpec",
                "ModeKeys",
                "RunConfig",
                "TrainSpec",
                "EvalSpec",
                "train_and_evaluate",
                "numpy_input_fn",
                "ServingInputReceiver",
                "TensorServingInputReceiver",
                "PredictOutput",
                "ClassificationOutput",
                "RegressionOutput",
                "build_raw_serving_input_receiver_fn",
                "build_parsing_serving_input_receiver_fn",
                "LatestExporter",
                "FinalExporter",
                "DNNClassifier",
                "DNNRegressor",
                "LinearClassifier",
                "LinearRegressor",
            }
        ),
    ),
}
# Helpers whose code calls another helper (written together into tf1_compat_shims.py).
_HELPER_NEEDS: dict[str, tuple[str, ...]] = {
    "_tf1_contrib": ("_tf1_layers",),
    "_tf1_seq2seq": ("_tf1_contrib", "_tf1_layers"),
}

# The module migrated files import their helpers from, written once per output directory.
SHIM_MODULE = "tf1_compat_shims"
# Bumped whenever a helper's behaviour changes; the module states it. Next to a single migrated
# file, an existing tf1_compat_shims.py is replaced only if tfpilot wrote it (it names a version).
SHIMS_VERSION = 13


@dataclasses.dataclass(frozen=True)
class RemovedApi:
    """One removed TF1 API and where migrated code finds it on TF 2.21."""

    removed: str  # fully qualified name as TF1 code spells it (a module, a member or `.attribute`)
    replacement: str  # what the migrated code uses instead
    how: str  # "rename" (a TF 2.21 home), "helper" (tf1_compat_shims.py) or "rewrite" (an expression)


# contrib initializers tf_upgrade_v2 turns into Keras' VarianceScaling, whose truncated normal divides by 0.8796
# where contrib multiplied 1.3 into the variance (weights 0.3% apart: a program seeded to the bit drifts, migrate
# round 16's DenseNet). pre_upgrade renames them to names tf_upgrade_v2 does not know, which the table
# below sends to contrib's own initializer.
CONTRIB_INITIALIZERS = {
    name: "tfpilot_contrib_" + name
    for name in ("variance_scaling_initializer", "xavier_initializer", "xavier_initializer_conv2d")
}


def unmarked(message: str) -> str:
    """A report line names the initializer as the TF1 source spells it, not as pre_upgrade renamed it."""
    return message.replace("tfpilot_contrib_", "")


REMOVED_APIS: tuple[RemovedApi, ...] = (
    RemovedApi("tensorflow.contrib.tensorboard.plugins.projector", "tensorboard.plugins.projector", "rename"),
    RemovedApi("tensorflow.flags", "tensorflow.compat.v1.flags", "rename"),
    RemovedApi("tensorflow.app.flags", "tensorflow.compat.v1.flags", "rename"),
    RemovedApi("tensorflow.logging", "tensorflow.compat.v1.logging", "rename"),
    RemovedApi("tensorflow.app", "tensorflow.compat.v1.app", "rename"),
    # TF 0.x names TF 1.0 renamed (tf_upgrade_v2 knows only TF 1.x names): pre-1.0 tutorials
    RemovedApi("tensorflow.mul", "tensorflow.multiply", "rename"),
    RemovedApi("tensorflow.sub", "tensorflow.subtract", "rename"),
    RemovedApi("tensorflow.neg", "tensorflow.negative", "rename"),
    RemovedApi("tensorflow.pack", "tensorflow.stack", "rename"),
    RemovedApi("tensorflow.unpack", "tensorflow.unstack", "rename"),
    RemovedApi("tensorflow.select", "tensorflow.compat.v1.where", "rename"),
    RemovedApi("tensorflow.scalar_summary", "tensorflow.compat.v1.summary.scalar", "rename"),
    RemovedApi("tensorflow.histogram_summary", "tensorflow.compat.v1.summary.histogram", "rename"),
    RemovedApi("tensorflow.image_summary", "tensorflow.compat.v1.summary.image", "rename"),
    RemovedApi("tensorflow.audio_summary", "tensorflow.compat.v1.summary.audio", "rename"),
    RemovedApi("tensorflow.merge_summary", "tensorflow.compat.v1.summary.merge", "rename"),
    RemovedApi("tensorflow.merge_all_summaries", "tensorflow.compat.v1.summary.merge_all", "rename"),
    RemovedApi("tensorflow.train.SummaryWriter", "tensorflow.compat.v1.summary.FileWriter", "rename"),
    # NumPy's removed aliases (lint.numpy_removed, shared with TFP514), where one name replaces another
    *(RemovedApi(f"numpy.{row.name}", row.replacement, "rename") for row in NUMPY_REMOVED.values() if row.rename),
    RemovedApi("numpy.bool", "bool", "rename"),  # removed in 1.24; NumPy 2's np.bool is np.bool_
    RemovedApi("numpy.long", "int", "rename"),  # removed in 1.24; NumPy 2's np.long is the C long
    RemovedApi("numpy.lib.pad", "numpy.pad", "rename"),  # NumPy 2 dropped the numpy.lib alias
    RemovedApi(".output_types", "tf.compat.v1.data.get_output_types(dataset)", "rewrite"),
    RemovedApi(".output_shapes", "tf.compat.v1.data.get_output_shapes(dataset)", "rewrite"),
    RemovedApi(".output_classes", "tf.compat.v1.data.get_output_classes(dataset)", "rewrite"),
    # contrib.framework's global step and checkpoint readers moved to core in TF 1.x; tf_upgrade_v2
    # renames only some contrib.framework names (nest, sort, is_tensor, load_variable)
    RemovedApi(
        "tensorflow.contrib.framework.get_or_create_global_step",
        "tensorflow.compat.v1.train.get_or_create_global_step",
        "rename",
    ),
    RemovedApi("tensorflow.contrib.framework.get_global_step", "tensorflow.compat.v1.train.get_global_step", "rename"),
    RemovedApi("tensorflow.contrib.framework.get_variables", "_tf1_contrib.get_variables", "helper"),
    RemovedApi(
        "tensorflow.contrib.framework.create_global_step", "tensorflow.compat.v1.train.create_global_step", "rename"
    ),
    RemovedApi("tensorflow.contrib.framework.list_variables", "tensorflow.train.list_variables", "rename"),
    RemovedApi("tensorflow.contrib.framework.load_checkpoint", "tensorflow.train.load_checkpoint", "rename"),
    RemovedApi(
        "tensorflow.contrib.framework.init_from_checkpoint", "tensorflow.compat.v1.train.init_from_checkpoint", "rename"
    ),
    # TF 1.3's tf.contrib.data, which TF 1.4 moved to tf.data (tf_upgrade_v2 renames only the later contrib.data
    # names); its Dataset.map(num_threads=, output_buffer_size=) is rewritten at the call (_Rewriter._contrib_map)
    *(
        RemovedApi(f"tensorflow.contrib.data.{name}", f"tensorflow.compat.v1.data.{name}", "rename")
        for name in ("Dataset", "Iterator", "TextLineDataset", "TFRecordDataset", "FixedLengthRecordDataset")
    ),
    RemovedApi("tensorflow.contrib.seq2seq.sequence_loss", "_tf1_contrib.sequence_loss", "helper"),
    RemovedApi("tensorflow.contrib.learn.datasets.load_dataset", "_tf1_mnist.load_dataset", "helper"),
    RemovedApi("tensorflow.contrib.learn.datasets.mnist", "_tf1_mnist", "helper"),
    RemovedApi("tensorflow.contrib.learn.python.learn.datasets.mnist", "_tf1_mnist", "helper"),
    RemovedApi("tensorflow.examples.tutorials.mnist.input_data", "_tf1_mnist", "helper"),
    RemovedApi("tensorflow.contrib.layers.fully_connected", "_tf1_contrib.fully_connected", "helper"),
    RemovedApi("tensorflow.contrib.layers.conv2d", "_tf1_contrib.conv2d", "helper"),
    RemovedApi("tensorflow.contrib.layers.max_pool2d", "_tf1_contrib.max_pool2d", "helper"),
    RemovedApi("tensorflow.contrib.layers.avg_pool2d", "_tf1_contrib.avg_pool2d", "helper"),
    RemovedApi("tensorflow.contrib.layers.l1_regularizer", "_tf1_contrib.l1_regularizer", "helper"),
    RemovedApi("tensorflow.contrib.layers.l2_regularizer", "_tf1_contrib.l2_regularizer", "helper"),
    *(
        RemovedApi(f"tensorflow.contrib.layers.{name}", f"_tf1_contrib.{name}", "helper")
        for name in ("l1_l2_regularizer", "sum_regularizer", "apply_regularization")
    ),
    RemovedApi("tensorflow.contrib.layers.batch_norm", "_tf1_contrib.batch_norm", "helper"),
    RemovedApi("tensorflow.contrib.layers.layer_norm", "_tf1_contrib.layer_norm", "helper"),
    RemovedApi("tensorflow.contrib.layers.dropout", "_tf1_contrib.dropout", "helper"),
    RemovedApi("tensorflow.contrib.layers.flatten", "_tf1_layers.flatten", "helper"),
    RemovedApi("tensorflow.layers", "_tf1_layers", "helper"),
    RemovedApi("tensorflow.compat.v1.layers", "_tf1_layers", "helper"),
    RemovedApi("tensorflow.contrib.rnn", "_tf1_rnn", "helper"),
    RemovedApi("tensorflow.contrib.legacy_seq2seq", "_tf1_legacy_seq2seq", "helper"),
    RemovedApi("tensorflow.contrib.learn.preprocessing", "_tf1_learn.preprocessing", "helper"),
    RemovedApi("tensorflow.contrib.slim", "_tf1_contrib", "helper"),
    RemovedApi("tensorflow.contrib.metrics", "_tf1_metrics", "helper"),
    RemovedApi("tensorflow.contrib.lookup", "_tf1_lookup", "helper"),
    RemovedApi("tensorflow.contrib.crf", "_tf1_crf", "helper"),
    RemovedApi("tensorflow.contrib.training", "_tf1_training", "helper"),
    RemovedApi("tensorflow.contrib.seq2seq", "_tf1_seq2seq", "helper"),
    RemovedApi("tensorflow.contrib.framework.arg_scope", "_tf1_contrib.arg_scope", "helper"),
    # SciPy 1.2-1.3 removed scipy.misc's PIL wrappers, with which TF1 programs read and save images
    *(
        RemovedApi(f"scipy.misc.{name}", f"_tf1_scipy_misc.{name}", "helper")
        for name in ("imread", "imsave", "imresize", "toimage", "fromimage", "bytescale")
    ),
    RemovedApi("tensorflow.contrib.losses", "_tf1_contrib.losses", "helper"),
    RemovedApi("tensorflow.contrib.keras", "tensorflow.keras", "rename"),
    # `from tensorflow.contrib import data as tf_data`: TF 1.3's module, whose classes TF 1.4 moved to tf.data
    RemovedApi("tensorflow.contrib.data", "tensorflow.compat.v1.data", "rename"),
    RemovedApi("tensorflow.contrib.image", "_tf1_image", "helper"),
    RemovedApi("tensorflow.contrib.layers.conv2d_transpose", "_tf1_contrib.conv2d_transpose", "helper"),
    RemovedApi("tensorflow.contrib.layers.convolution2d", "_tf1_contrib.conv2d", "helper"),
    RemovedApi("tensorflow.contrib.layers.one_hot_encoding", "_tf1_contrib.one_hot_encoding", "helper"),
    RemovedApi("tensorflow.contrib.layers.embed_sequence", "_tf1_contrib.embed_sequence", "helper"),
    # contrib modules that moved to core whole (a member TF 2.21 lacks is named in the report, as any missing name)
    RemovedApi("tensorflow.contrib.signal", "tensorflow.signal", "rename"),
    RemovedApi("tensorflow.contrib.distributions", "tensorflow.compat.v1.distributions", "rename"),
    RemovedApi("tensorflow.contrib.util.make_tensor_proto", "tensorflow.make_tensor_proto", "rename"),
    RemovedApi("tensorflow.contrib.util.constant_value", "tensorflow.get_static_value", "rename"),
    RemovedApi("tensorflow.contrib.lite", "tensorflow.compat.v1.lite", "rename"),
    RemovedApi("tensorflow.contrib.layers.linear", "_tf1_contrib.linear", "helper"),
    RemovedApi("tensorflow.contrib.layers.bias_add", "_tf1_contrib.bias_add", "helper"),
    RemovedApi("tensorflow.contrib.layers.xavier_initializer", "_tf1_contrib.xavier_initializer", "helper"),
    RemovedApi(
        "tensorflow.contrib.layers.variance_scaling_initializer", "_tf1_contrib.variance_scaling_initializer", "helper"
    ),
    RemovedApi("tensorflow.contrib.layers.xavier_initializer_conv2d", "_tf1_contrib.xavier_initializer", "helper"),
    # the same three under the names pre_upgrade gives them, so that tf_upgrade_v2 leaves them to this table
    *(
        RemovedApi(f"tensorflow.contrib.layers.{marked}", f"_tf1_contrib.{name.replace('_conv2d', '')}", "helper")
        for name, marked in CONTRIB_INITIALIZERS.items()
    ),
    RemovedApi("tensorflow.nn.rnn_cell", "_tf1_rnn", "helper"),
    RemovedApi("tensorflow.compat.v1.nn.rnn_cell", "_tf1_rnn", "helper"),
    RemovedApi("tensorflow.estimator", "_tf1_estimator", "helper"),
    RemovedApi("tensorflow.compat.v1.estimator", "_tf1_estimator", "helper"),
)
# Module paths renamed one for one (imports and attribute chains): removed -> TF 2.21 home.
_RENAMES: dict[str, str] = {api.removed: api.replacement for api in REMOVED_APIS if api.how == "rename"}
_DATASET_ATTRIBUTES = {
    api.removed[1:]: api.replacement.split("(")[0].removeprefix("tf.compat.v1.")
    for api in REMOVED_APIS
    if api.how == "rewrite"
}

# Removed modules whose members the helpers replace one for one.
_MODULE_HELPERS: dict[str, str] = {
    # every removed module the table gives a helper of its own (`tf.contrib.rnn` -> _tf1_rnn, the MNIST readers ...)
    **{api.removed: api.replacement for api in REMOVED_APIS if api.how == "helper" and "." not in api.replacement},
    # `from tensorflow.contrib import learn` for learn.preprocessing.VocabularyProcessor; its datasets
    # (mnist) keep their own, more specific helper above. slim's layer functions are tf.contrib.layers' (slim.conv2d
    # is contrib.layers.conv2d), with its arg_scope and losses; repeat, stack and nets are not replaced (the report
    # names each use).
    "tensorflow.contrib.learn": "_tf1_learn",
    # `from tensorflow.contrib import layers` then layers.linear(...): the members above, one helper
    "tensorflow.contrib.layers": "_tf1_contrib",
    # tf.estimator's submodules are flattened: tf.estimator.inputs.numpy_input_fn ->
    # _tf1_estimator.numpy_input_fn, tf.estimator.export.PredictOutput -> _tf1_estimator.PredictOutput.
    **{
        f"{root}{sub}": "_tf1_estimator"
        for root in ("tensorflow.estimator", "tensorflow.compat.v1.estimator")
        for sub in (".inputs", ".export")
    },
}
# Single members of otherwise unsupported removed modules.
_MEMBER_HELPERS: dict[str, tuple[str, str]] = {
    api.removed: (api.replacement.split(".")[0], api.replacement.split(".")[1])
    for api in REMOVED_APIS
    if api.how == "helper" and "." in api.replacement
}
_WHY = {
    "_tf1_layers": "tf.layers needs Keras 2 (AttributeError with Keras 3)",
    "_tf1_rnn": "TF1 RNN cells need Keras 2 (AttributeError with Keras 3)",
    "_tf1_mnist": "tensorflow.examples.tutorials and tf.contrib.learn were removed in TF 2",
    "_tf1_contrib": "tf.contrib was removed in TF 2",
    "_tf1_estimator": "tf.estimator was removed in TF 2.16",
    "_tf1_legacy_seq2seq": "tf.contrib was removed in TF 2",
    "_tf1_learn": "tf.contrib was removed in TF 2",
    "_tf1_metrics": "tf.contrib was removed in TF 2 (and tf.metrics takes labels first)",
    "_tf1_lookup": "tf.contrib was removed in TF 2",
    "_tf1_crf": "tf.contrib was removed in TF 2",
    "_tf1_training": "tf.contrib was removed in TF 2",
    "_tf1_seq2seq": "tf.contrib was removed in TF 2",
    "_tf1_image": "tf.contrib was removed in TF 2",
    "_tf1_scipy_misc": "SciPy 1.3 removed scipy.misc's image functions",
}
_WHERE = f"helper in {SHIM_MODULE}.py"
# What the report says about a file that runs tf.estimator on the shim (shims/estimator.py).
ESTIMATOR_COVERAGE = (
    f"tf.estimator runs on `_tf1_estimator` in {SHIM_MODULE}.py: each call builds a TF1 graph from your "
    "input_fn and model_fn and runs it in a MonitoredTrainingSession with checkpoints in model_dir (a second "
    "train resumes). Covered: Estimator train / evaluate / predict / export_saved_model, EstimatorSpec (TRAIN "
    "loss + train_op, EVAL loss + tf.compat.v1.metrics eval_metric_ops, PREDICT predictions + export_outputs), "
    "ModeKeys, RunConfig, numpy_input_fn, TrainSpec / EvalSpec / train_and_evaluate (local, Latest / Final "
    "exporters), the serving receivers and export outputs, DNNClassifier / DNNRegressor / LinearClassifier / "
    "LinearRegressor on tf.feature_column columns. Refused (TF1OptionRefused, a NotImplementedError): warm_start_from, "
    "distribution strategies and device_fn, a multi-worker TF_CONFIG, canned label_vocabulary / weight_column "
    "/ batch_norm, Keras optimizers in canned estimators, Keras metric objects in eval_metric_ops; any other "
    "tf.estimator name (BoostedTrees*, DNNLinearCombined*, pandas_input_fn, hooks from tf.estimator) stops the file"
)
# _tf1_contrib members that make variables (with get_variable, so the file needs graph mode).
_CONTRIB_VARIABLES = frozenset({"fully_connected", "conv2d", "batch_norm"})

# tf.compat.v1 names that only work in a TF1 graph (they fail or mean something else eagerly).
_GRAPH_ONLY = frozenset(
    {
        "placeholder",
        "placeholder_with_default",
        "sparse_placeholder",
        "Session",
        "InteractiveSession",
        "get_variable",
        "variable_scope",
        "global_variables_initializer",
        "initialize_all_variables",
        "local_variables_initializer",
        "variables_initializer",
        "tables_initializer",
        "train",
        "summary",
        "get_default_graph",
        "reset_default_graph",
        "get_collection",
        "add_to_collection",
        "trainable_variables",
        "global_variables",
        "layers",
        "metrics",
        "data",
        "assign",
        "assign_add",
        "assign_sub",
        "nn",
    }
)
_V1_NN_GRAPH_ONLY = frozenset({"rnn_cell", "dynamic_rnn", "static_rnn", "bidirectional_dynamic_rnn"})
_TF1_SUMMARY_OPS = frozenset({"scalar", "histogram", "image", "audio", "text"})
_DISABLERS = frozenset({"disable_v2_behavior", "disable_eager_execution"})
_DISABLE_COMMENT = "# tfpilot migrate: TF1 graph code (placeholders, sessions) needs graph mode"
_IMPORT_COMMENT = "# tfpilot migrate: helpers for removed TF1 APIs"
_HOME_IMPORT_COMMENT = "# tfpilot migrate: TF 2.21 home of a removed TF1 module"
# absl 2.x takes only a str or int default for DEFINE_integer (and str, int or float for
# DEFINE_float): a NumPy number (`np.power(2, 7)`) raises IllegalFlagValueError at definition.
_FLAG_CASTS = {"DEFINE_integer": "int", "DEFINE_float": "float"}
_FLAG_MODULES = frozenset(
    {
        "tensorflow.flags",
        "tensorflow.app.flags",
        "tensorflow.compat.v1.flags",
        "tensorflow.compat.v1.app.flags",
        "absl.flags",
    }
)
_FLAG_COMMENT = "# tfpilot migrate: {cast}() on the default: absl 2.x refuses a NumPy number"


@dataclasses.dataclass(frozen=True)
class CompatChange:
    line: int  # in the rewritten file
    column: int  # 1-based
    message: str
    blocks_run: bool = True  # for notes: the file will not start until a person acts


@dataclasses.dataclass(frozen=True)
class CompatResult:
    source: str
    changes: tuple[CompatChange, ...]
    helpers: tuple[str, ...]  # helper namespaces the file imports from tf1_compat_shims.py
    graph_mode: bool  # the file builds a TF1 graph (so v2 behaviour must be off)
    disabled_v2: bool  # this rewrite added disable_v2_behavior()
    notes: tuple[CompatChange, ...]  # what a person still has to do that the rewrite could not
    in_place: Mapping[int, int] = dataclasses.field(default_factory=dict)  # input line -> line before insertions
    inserted: tuple[tuple[int, int], ...] = ()  # (line the text went before, number of lines)

    def moved(self, line: int) -> int:
        """Where line ``line`` of the input ended up in ``source``."""
        line = self.in_place.get(line, line)
        return line + sum(count for at, count in self.inserted if at <= line)


def _is_main_guard(test: cst.BaseExpression) -> bool:
    """`if __name__ == "__main__":` (the program's body, which always runs)."""
    return (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value == "__name__"
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Equal)
        and isinstance(test.comparisons[0].comparator, cst.SimpleString)
        and test.comparisons[0].comparator.evaluated_value == "__main__"
    )


_STOPS = frozenset({"exit", "quit", "sys.exit", "os._exit"})
_SAYS = frozenset({"print", "warnings.warn", "logging.error", "logging.warning", "logging.info"})


def stops_the_program(block: cst.BaseSuite) -> bool:
    """A block that only says something and stops: ``exit("Please install Tensorflow 1.x")``,
    ``print(...); sys.exit(1)``, ``raise ImportError(...)``."""
    statements: Sequence[cst.BaseSmallStatement]
    if isinstance(block, cst.SimpleStatementSuite):
        statements = block.body
    else:
        lines = list(block.body)
        if not all(isinstance(line, cst.SimpleStatementLine) for line in lines):
            return False
        statements = [small for line in lines for small in line.body]  # type: ignore[attr-defined]
    stops = False
    for small in statements:
        if isinstance(small, cst.Raise):
            stops = True
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            name = dotted_name(small.value.func)
            if name in _STOPS:
                stops = True
            elif name not in _SAYS:
                return False
        elif not isinstance(small, cst.Pass):
            return False
    return stops


def refuses_tensorflow2(test: cst.BaseExpression, body: cst.BaseSuite, tf_names: set[str]) -> str | None:
    """``if tf.__version__.startswith('2'): exit("Please install Tensorflow 1.x")``: a version test
    true on the installed TensorFlow guarding a block that only stops the program. TF1 tutorials
    refuse TF 2 this way; the migrated code runs on TF 2, so the guard goes. The test's text, or None."""
    if not tf_names or not stops_the_program(body):
        return None
    code = cst.Module(body=[]).code_for_node(test)
    return code if decide_version_test(code, tf_names, installed_tensorflow()) is True else None


def dotted_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted_name(node.value)
        return None if head is None else f"{head}.{node.attr.value}"
    return None


def _module_name(node: cst.BaseExpression) -> str:
    name = dotted_name(node)
    assert name is not None  # import statements name modules with Names and Attributes only
    return name


def import_bindings(module: cst.Module) -> dict[str, str]:
    """Local name -> the dotted path it is bound to, for every import in the file."""
    bindings: dict[str, str] = {}

    class Collector(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            for alias in node.names:
                full = _module_name(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    bindings[alias.asname.name.value] = full
                else:
                    head = full.split(".")[0]
                    bindings[head] = head

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
                return
            base = _module_name(node.module)
            for alias in node.names:
                name = _module_name(alias.name)
                local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
                bindings[local] = f"{base}.{name}"

    module.visit(Collector())
    return bindings


def qualified_name(node: cst.BaseExpression, bindings: Mapping[str, str]) -> str | None:
    name = dotted_name(node)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    if head not in bindings:
        return None
    return bindings[head] + ("." + rest if rest else "")


# contrib's internal modules, which its public ones re-export (`tensorflow.contrib.layers.python.
# layers.layers.batch_norm` is `tensorflow.contrib.layers.batch_norm`): scripts imported either
_CONTRIB_INTERNALS = re.compile(r"^(tensorflow\.contrib\.\w+)\.python((?:\.\w+)+)$")
_INTERNAL_MODULES = frozenset(
    {"layers", "ops", "core", "rnn", "rnn_cell", "core_rnn_cell", "initializers", "regularizers"}
)


def _canonical(qualified: str) -> str:
    """The public contrib name of a name reached through contrib's internal `python` modules."""
    match = _CONTRIB_INTERNALS.match(qualified)
    if match is None:
        return qualified
    base, rest = match.group(1), match.group(2).strip(".").split(".")
    if (rest[-1] not in _INTERNAL_MODULES or len(rest) > 1) and _helper_for(f"{base}.{rest[-1]}") is not None:
        return f"{base}.{rest[-1]}"
    if all(part in _INTERNAL_MODULES for part in rest):
        return base
    return qualified


def _helper_for(qualified: str) -> tuple[str, str] | None:
    """(helper namespace, member) that replaces a removed API, or None."""
    qualified = _canonical(qualified)
    if qualified in _MEMBER_HELPERS:
        return _MEMBER_HELPERS[qualified]
    module, _, member = qualified.rpartition(".")
    helper = _MODULE_HELPERS.get(module)
    if helper is not None and member in HELPER_NAMES[helper][1]:
        return helper, member
    return None


def _leads_to_helper(qualified: str) -> bool:
    """Whether a longer name that starts with this one has a helper (`tf.contrib.learn.datasets`
    on its way to `...datasets.load_dataset`, inside the `tf.contrib.learn` module helper)."""
    return any(name.startswith(qualified + ".") for name in (*_MODULE_HELPERS, *_MEMBER_HELPERS))


def _is_graph_only(qualified: str) -> bool:
    for prefix in ("tensorflow.compat.v1.", "tensorflow."):
        if qualified.startswith(prefix):
            rest = qualified[len(prefix) :].split(".")
            if prefix == "tensorflow." and rest[0] in ("Session", "placeholder", "InteractiveSession"):
                return True  # tf_upgrade_v2 could not rename these (an unparsable neighbour, a noqa)
            if prefix == "tensorflow.compat.v1.":
                if rest[0] == "nn":
                    return len(rest) > 1 and rest[1] in _V1_NN_GRAPH_ONLY
                return rest[0] in _GRAPH_ONLY
    return False


def shim_source(helper: str) -> str:
    """The text of one helper, as written into migrated files."""
    module = HELPER_NAMES[helper][0]
    text = importlib.resources.files("tfpilot.migrate.shims").joinpath(f"{module}.py").read_text(encoding="utf-8")
    return text.split("# --- emitted below ---\n", 1)[1].strip("\n")


def _refusal_source() -> str:
    text = importlib.resources.files("tfpilot.migrate.shims").joinpath("refusal.py").read_text(encoding="utf-8")
    return text.split("# --- emitted below ---\n", 1)[1].strip("\n")


def _selected_helper(helper: str, members: Iterable[str]) -> tuple[list[str], str]:
    """(import lines, class source) of one helper, keeping only ``members`` and what they use.

    A migrated file gets the parts of a helper it calls, not all of it: members are kept when a
    kept member's text names them (``_tf1_layers._conv``, a base class ``_Cell``), and an import
    only when the kept code uses its alias.
    """
    import ast
    import re

    text = shim_source(helper)
    lines = text.splitlines()
    tree = ast.parse(text)
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == helper]
    assert classes, f"shim {helper} defines no class {helper}"
    cls = classes[0]
    spans: dict[str, tuple[int, int]] = {}
    docstring_end = cls.body[0].end_lineno if ast.get_docstring(cls) is not None else None
    for item in cls.body:
        names: list[str] = []
        if isinstance(item, (ast.FunctionDef, ast.ClassDef)):
            names = [item.name]
        elif isinstance(item, ast.Assign):
            names = [target.id for target in item.targets if isinstance(target, ast.Name)]
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names = [item.target.id]
        start = min([item.lineno, *(decorator.lineno for decorator in getattr(item, "decorator_list", []))])
        for name in names:
            spans[name] = (start, item.end_lineno or item.lineno)

    def body_of(name: str) -> str:
        start, end = spans[name]
        return "\n".join(lines[start - 1 : end])

    wanted = [member for member in members if member in spans] or list(spans)
    kept: set[str] = set()
    while wanted:
        name = wanted.pop()
        if name in kept:
            continue
        kept.add(name)
        source = body_of(name)
        wanted += [other for other in spans if other not in kept and re.search(rf"\b{re.escape(other)}\b", source)]
    ordered = sorted(kept, key=lambda name: spans[name][0])
    header = lines[cls.lineno - 1 : (docstring_end or cls.lineno)]
    chunks = ["\n".join(header)] + [body_of(name) for name in ordered]
    class_source = "\n\n".join(chunks)
    imports = [
        line
        for line in lines[: cls.lineno - 1]
        if line.startswith(("import ", "from "))
        # the helpers' own imports of tfpilot (TF1OptionRefused) are defined in the written file:
        # a migrated program must run where tfpilot is not installed
        and not line.startswith(("from tfpilot", "import tfpilot"))
        and re.search(rf"\b{re.escape(line.split()[-1])}\b", class_source)
    ]
    return imports, class_source


def render_shims(helpers: Mapping[str, Iterable[str]]) -> str:
    """The helper block: every import the helpers need once, then each helper's class."""
    imports: list[str] = []
    bodies: list[str] = []
    for helper in sorted(helpers):
        helper_imports, body = _selected_helper(helper, helpers[helper])
        imports += [line for line in helper_imports if line not in imports]
        bodies.append(body)
    if any("TF1OptionRefused" in body for body in bodies):
        # The helpers refuse TF1 options they do not reproduce with one named exception (shims/refusal.py).
        bodies.insert(0, _refusal_source())
    standard = sorted(line for line in imports if "numpy" not in line and "tensorflow" not in line)
    third_party = sorted(line for line in imports if line not in standard)
    parts = [SHIM_BEGIN, *standard, *([""] if standard and third_party else []), *third_party, "", ""]
    parts += ["\n\n\n".join(bodies), SHIM_END, ""]
    return "\n".join(parts)


def render_shim_module(helpers: Iterable[str]) -> str:
    """The text of tf1_compat_shims.py: every helper in ``helpers``, whole, under a versioned header."""
    from tfpilot import __version__

    wanted = set(helpers)
    wanted.update(needed for helper in list(wanted) for needed in _HELPER_NEEDS.get(helper, ()))
    chosen = {helper: HELPER_NAMES[helper][1] for helper in sorted(wanted)}
    body = render_shims(chosen).split("\n", 1)[1].replace(SHIM_END + "\n", "").rstrip("\n")
    # Said only where a helper builds a graph: the MNIST reader beside native TF2 code only reads TF's seed.
    graph_note = (
        "They build TF1 graphs with tf.compat.v1 and keep TF1's variable names, so old checkpoints load.\n"
        if "compat.v1" in render_shims({helper: names for helper, names in chosen.items() if helper != "_tf1_mnist"})
        else ""
    )
    return (
        f'"""Helpers for TF1 APIs that TensorFlow 2.21 / Keras 3 removed, written by `tfpilot migrate`.\n\n'
        "Migrated files import them (`from tf1_compat_shims import _tf1_layers`); see MIGRATION_REPORT.md.\n"
        f"{graph_note}"
        "Do not edit: run `tfpilot migrate` again to regenerate this file.\n"
        '"""\n\n'
        "# tfpilot: noqa-file[TFP6]\n\n"
        f"TF1_COMPAT_SHIMS_VERSION = {SHIMS_VERSION}\n"
        f'WRITTEN_BY = "tfpilot {__version__}"\n'
        f"HELPERS = {tuple(chosen)!r}\n\n"
        f"{body}\n"
    )


def shim_line_range(source: str) -> range:
    """1-based line numbers of the helper block in a migrated file (empty when it has none)."""
    lines = source.splitlines()
    try:
        start = lines.index(SHIM_BEGIN)
        end = lines.index(SHIM_END, start)
    except ValueError:
        return range(0)
    return range(start + 1, end + 2)


# TF calls whose shape TF 1 read as a TensorShape, which took whole floats (int(3.0)) where TF 2's refuses them
# (TypeError, checked on TF 2.21; tf.zeros still takes them): keyword `shape` or this positional index. Keys are
# names with any `compat.v1.` removed.
_SHAPE_ARGUMENT: dict[str, int] = {
    "tensorflow.get_variable": 1,
    "tensorflow.placeholder": 1,
    "tensorflow.placeholder_with_default": 1,
    "tensorflow.sparse_placeholder": 1,
}


@functools.lru_cache(maxsize=256)
def _public_home_of_private(qualified: str) -> str | None:
    """``tensorflow.python.ops.control_flow_ops.while_loop`` -> ``while_loop``: a member TF 1 scripts reached through
    a private module that TF 2.21's module no longer has (it moved to another private module) while TF 1's public
    API still does, as ``tf.compat.v1.<member>`` (checked on the installed TensorFlow). None otherwise."""
    if not qualified.startswith("tensorflow.python."):
        return None
    module, _, member = qualified.rpartition(".")
    try:
        found = importlib.import_module(module)
    except Exception:  # a private module that is gone altogether: the readiness check reports it
        return None
    if hasattr(found, member):
        return None
    import tensorflow as tf  # only for a script that uses TensorFlow's private modules

    return member if hasattr(tf.compat.v1, member) else None


class _Rewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(
        self, bindings: Mapping[str, str], *, summary_v1: bool = False, bare_names: frozenset[str] = frozenset()
    ) -> None:
        super().__init__()
        self.bindings = bindings
        self.tf_names = {local for local, bound in bindings.items() if bound.split(".")[0] == "tensorflow"}
        self.bare_names = bare_names  # names the file uses other than as an attribute or keyword
        # the second pass over a graph file: TF1's summary ops, Variable and initializers back
        self.summary_v1 = summary_v1
        self.v1_candidates = 0  # calls the second pass over a graph file turns back into TF1's (_v1_in_graph)
        self.helpers: dict[str, set[str]] = {}
        self.changes: list[tuple[int, int, str]] = []
        self.graph_lines: list[int] = []
        self.has_disabler = False
        self.notes: list[tuple[int, int, str]] = []
        # notes on code inside an `if` branch (not the main guard): the file stops there only when
        # that branch runs (`elif args.model == 'nas': cell_fn = rnn.NASCell`), so it still starts
        self.branch_notes: list[tuple[int, int, str]] = []
        self._branches = 0
        self.first_use: dict[str, tuple[int, int]] = {}
        self.home_imports: dict[str, str] = {}  # TF 2.21 home module -> the local name the code uses
        self.flag_casts: list[str] = []  # casts added in the statement being visited (for its comment)
        self.inner: set[int] = set()  # ids of expressions that are the value of an attribute

    def visit_If(self, node: cst.If) -> None:
        if not _is_main_guard(node.test):
            self._branches += 1

    def leave_UnaryOperation(self, original: cst.UnaryOperation, updated: cst.UnaryOperation) -> cst.BaseExpression:
        """``-tf.reduce_mean(-loss)``: TF 2.21's graph optimizer (Grappler's arithmetic optimizer, which a
        compat.v1 Session runs) drops one of the two negations when the inner value is a scalar, and the
        program prints the opposite sign (run by test_migrate_round17_classes.py). The negations cancel
        exactly for a mean or sum (IEEE negation is exact and commutes with rounding), so they go."""
        inner = _negated_reduction(updated, self.bindings)
        if inner is None:
            return updated
        call, argument = inner
        line, column = self._position(original)
        self.changes.append(
            (
                line,
                column,
                "`-reduce(-x)` -> `reduce(x)`: the same value exactly; TF 2.21's graph optimizer in a compat.v1 "
                "Session drops one of the two negations when x is a scalar (the opposite sign, silently)",
            )
        )
        return call.with_changes(args=[call.args[0].with_changes(value=argument), *call.args[1:]])

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.BaseStatement | cst.RemovalSentinel:
        if not _is_main_guard(original_node.test):
            self._branches -= 1
        test = None
        if original_node.orelse is None:
            test = refuses_tensorflow2(original_node.test, original_node.body, self.tf_names)
        if test is not None:
            line, column = self._position(original_node)
            self.changes.append(
                (
                    line,
                    column,
                    f"removed `if {test}:` and the exit under it: it refused TensorFlow 2, which the "
                    "migrated code runs on",
                )
            )
            return cst.RemovalSentinel.REMOVE
        return updated_node

    def _note(self, line: int, column: int, message: str) -> None:
        if self._branches:
            self.branch_notes.append(
                (line, column, f"{message} (in a branch: the program stops there only if it runs)")
            )
        else:
            self.notes.append((line, column, message))

    def _position(self, node: cst.CSTNode) -> tuple[int, int]:
        start = self.get_metadata(PositionProvider, node).start
        return start.line, start.column + 1

    # Import statements name modules; their dotted names are not uses of the API.
    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.inner.add(id(node.value))

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        qualified = qualified_name(original, self.bindings)
        renamed = self._renamed(original, updated, qualified)
        if renamed is not None:
            return renamed
        if qualified is None:
            return updated
        if qualified.rpartition(".")[2] in _DISABLERS:
            self.has_disabler = True
        if _is_graph_only(qualified):
            self.graph_lines.append(self._position(original)[0])
        helper = _helper_for(qualified)
        if helper is None and qualified.startswith("tensorflow.contrib.") and id(original) not in self.inner:
            # A removed contrib module used as a value (`m = tf.contrib.rnn`): the whole helper.
            namespace = _MODULE_HELPERS.get(_canonical(qualified))
            if namespace is not None:
                self.helpers.setdefault(namespace, set())
                line, column = self._position(original)
                self.changes.append(
                    (line, column, f"`{dotted_name(original)}` -> `{namespace}` ({_WHY[namespace]}; {_WHERE})")
                )
                return cst.Name(namespace)
        if helper is None:
            module_name, _, member_name = qualified.rpartition(".")
            if module_name in _MODULE_HELPERS and qualified not in _MODULE_HELPERS and not _leads_to_helper(qualified):
                line, column = self._position(original)
                self._note(
                    line,
                    column,
                    f"`{dotted_name(original)}` ({qualified}) was removed and migrate has no replacement for it",
                )
            return updated
        namespace, member = helper
        self.helpers.setdefault(namespace, set()).add(member)
        self.first_use.setdefault(member, self._position(original))
        line, column = self._position(original)
        shown = dotted_name(original)
        self.changes.append((line, column, f"`{shown}` -> `{namespace}.{member}` ({_WHY[namespace]}; {_WHERE})"))
        return cst.Attribute(value=cst.Name(namespace), attr=cst.Name(member))

    def _renamed(
        self, original: cst.Attribute, updated: cst.Attribute, qualified: str | None
    ) -> cst.BaseExpression | None:
        """A removed name with a TF 2.21 home (REMOVED_APIS' "rename" and "rewrite" rows), or None."""
        line, column = self._position(original)
        shown = dotted_name(original)
        moved = _public_home_of_private(qualified) if qualified is not None else None
        if moved is not None:
            tf_alias = next((local for local, bound in sorted(self.bindings.items()) if bound == "tensorflow"), None)
            spelled = f"{tf_alias}.compat.v1.{moved}" if tf_alias is not None else None
            if spelled is None:
                spelled = self.home_imports.setdefault(f"tensorflow.compat.v1.{moved}", self._home_name(moved))
            self.changes.append(
                (line, column, f"`{shown}` -> `{spelled}` (TF 2.21's private module no longer has it; the public name)")
            )
            return cst.parse_expression(spelled)
        if qualified is not None and qualified in _RENAMES:
            target = _RENAMES[qualified]
            head = (shown or "").split(".")[0]
            if qualified.startswith("numpy."):
                row = NUMPY_REMOVED.get(qualified[len("numpy.") :])
                removed = f"NumPy {row.removed_in} removed it" if row is not None else "NumPy removed it"
                if "." not in target:  # the aliases of Python's types and functions
                    self.changes.append((line, column, f"`{shown}` -> `{target}` ({removed}: the builtin)"))
                    return cst.Name(target)
                if target.startswith("numpy.") and self.bindings.get(head) == "numpy":
                    spelled = head + target[len("numpy") :]  # np.float_ -> np.float64 under the file's alias
                    self.changes.append((line, column, f"`{shown}` -> `{spelled}` ({removed})"))
                    return cst.parse_expression(spelled)
            if target.startswith("tensorflow.") and self.bindings.get(head) == "tensorflow":
                spelled = head + target[len("tensorflow") :]
                self.changes.append((line, column, f"`{shown}` -> `{spelled}` (removed from the TF2 API)"))
                return cst.parse_expression(spelled)
            if not target.startswith("tensorflow."):
                # `tf.contrib.tensorboard.plugins.projector.X` reached as an attribute chain: the same
                # home as its import, bound by an import this rewrite adds.
                local = self.home_imports.setdefault(target, self._home_name(target))
                self.changes.append((line, column, f"`{shown}` -> `{local}` (`{target}`; removed from the TF2 API)"))
                return cst.Name(local)
            return None
        attribute = original.attr.value
        v1 = _v1_alias(self.bindings)
        if attribute in _DATASET_ATTRIBUTES and v1 is not None and (qualified is None or "." not in qualified):
            function = f"{v1}.{_DATASET_ATTRIBUTES[attribute]}"
            self.changes.append(
                (
                    line,
                    column,
                    f"`.{attribute}` -> `{function}(...)` (TF2 datasets have no `{attribute}`; the function reads "
                    "it from a dataset or an iterator)",
                )
            )
            return cst.Call(func=cst.parse_expression(function), args=[cst.Arg(updated.value)])
        return None

    def _home_name(self, target: str) -> str:
        """The local name for module ``target``: the file's own binding of it, else its last part if free."""
        for local, full in sorted(self.bindings.items()):
            if full == target:
                return local
        last = target.rpartition(".")[2]
        return last if last not in self.bindings and last not in self.bare_names else f"_tf1_{last}"

    def leave_BinaryOperation(self, original: cst.BinaryOperation, updated: cst.BinaryOperation) -> cst.BaseExpression:
        """``"W: %f" % sess.run(W)`` on a one-element array: NumPy 2 refuses what NumPy 1 converted.

        Only a fetch formatted with a numeric conversion (%f, %d, %g ...) gets ``.item()``, the
        value NumPy 1 used; ``%s`` prints arrays of any size and is left alone.
        """
        if not isinstance(original.operator, cst.Modulo) or not isinstance(original.left, cst.SimpleString):
            return updated
        template = original.left.evaluated_value
        if not isinstance(template, str):
            return updated
        specs = [spec for spec in _FORMAT_SPEC.findall(template) if spec != "%"]
        values = list(updated.right.elements) if isinstance(updated.right, cst.Tuple) else None
        if values is None:
            if len(specs) != 1 or specs[0] not in _NUMERIC_SPECS or not _is_fetch(updated.right):
                return updated
            right: cst.BaseExpression = _item(updated.right)
        else:
            if len(specs) != len(values) or any(isinstance(value, cst.StarredElement) for value in values):
                return updated
            elements = [
                value.with_changes(value=_item(value.value))
                if spec in _NUMERIC_SPECS and _is_fetch(value.value)
                else value
                for spec, value in zip(specs, values, strict=True)
            ]
            if elements == values:
                return updated
            right = updated.right.with_changes(elements=elements)
        line, column = self._position(original)
        self.changes.append(
            (
                line,
                column,
                "a fetched value formatted with a numeric %-conversion -> `.item()` (NumPy 2 no longer converts "
                "a one-element array to a Python number)",
            )
        )
        return updated.with_changes(right=right)

    def _flag_default(self, original: cst.Call, updated: cst.Call) -> cst.Call | None:
        """``DEFINE_integer(name, np.power(2, 7), help)`` -> ``DEFINE_integer(name, int(np.power(2, 7)), help)``."""
        if not isinstance(original.func, cst.Attribute):
            return None
        define = original.func.attr.value
        cast = _FLAG_CASTS.get(define)
        if cast is None:
            return None
        module = qualified_name(original.func.value, self.bindings)
        spelled = dotted_name(original.func.value) or ""
        # `flags = tf.app.flags` is an assignment, not an import: a receiver named `flags` counts too.
        if module not in _FLAG_MODULES and spelled.rpartition(".")[2] != "flags":
            return None
        positional = [index for index, arg in enumerate(original.args) if arg.keyword is None]
        keyword = [index for index, arg in enumerate(original.args) if arg.keyword and arg.keyword.value == "default"]
        index = keyword[0] if keyword else positional[1] if len(positional) > 1 else None
        if index is None or _is_plain_literal(original.args[index].value):
            return None
        value = updated.args[index].value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == cast:
            return None
        line, column = self._position(original.args[index].value)
        shown = cst.Module([]).code_for_node(original.args[index].value)
        self.changes.append(
            (
                line,
                column,
                f"the default of {define}: `{shown}` -> `{cast}({shown})` (absl 2.x accepts only a Python "
                f"{'str or int' if cast == 'int' else 'str, int or float'}: a NumPy number raises "
                "IllegalFlagValueError before the program starts)",
            )
        )
        self.flag_casts.append(cast)
        args = list(updated.args)
        args[index] = args[index].with_changes(value=cst.Call(func=cst.Name(cast), args=[cst.Arg(value)]))
        return updated.with_changes(args=args)

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        flag = self._flag_default(original, updated)
        if flag is not None:
            return flag
        # tf_upgrade_v2 leaves TF1's tf.summary.scalar(name, tensor) on the TF2 API, which records
        # nothing in a TF1 graph (merge_all() then returns None). A graph file gets TF1's ops back.
        qualified = qualified_name(original.func, self.bindings)
        if isinstance(updated.func, cst.Attribute) and updated.func.attr.value == "map":
            contrib_map = self._contrib_map(original, updated)
            if contrib_map is not None:
                return contrib_map
        shape_at = _SHAPE_ARGUMENT.get(qualified.replace(".compat.v1.", ".")) if qualified is not None else None
        if shape_at is not None:
            updated = self._whole_shape(original, updated, shape_at)
        if qualified == "tensorflow.Variable":
            return self._variable_v1(original, updated)
        if qualified == "tensorflow.compat.v1.keras.initializers.VarianceScaling":
            # tf_upgrade_v2 writes this for tf.contrib.layers.xavier_initializer / variance_scaling_initializer.
            # With Keras 3 it is Keras' class: unseeded by tf.set_random_seed (new weights every run) and another
            # random stream than TF1's. The TF1 class takes the same scale / mode / distribution.
            return self._v1_in_graph(
                original,
                updated,
                "variance_scaling_initializer",
                "TF1's initializer, seeded by the graph's seed as contrib's was; the Keras 3 class it names ignores "
                "tf.set_random_seed",
            )
        if qualified == "tensorflow.image.resize":
            # tf_upgrade_v2 writes TF2's resize for tf.image.resize_images, and TF 1.x's own tf.image.resize was
            # resize_images too; TF2's samples at half-pixel centers, which moves every resized pixel (up to 0.8
            # of a step on a ramp): a segmentation model's first loss differed (round 16's FC-DenseNet).
            return self._v1_in_graph(
                original,
                updated,
                "image.resize",
                "TF1's resize_images, without TF2's half-pixel centers (tf.compat.v1.image.resize is resize_images)",
            )
        if qualified in ("tensorflow.keras.regularizers.l2", "tensorflow.keras.regularizers.l1"):
            return self._contrib_regularizer(original, updated, qualified.rpartition(".")[2])
        if qualified is None or qualified.rpartition(".")[0] != "tensorflow.summary":
            return updated
        if qualified.rpartition(".")[2] not in _TF1_SUMMARY_OPS:
            return updated
        if any(
            arg.keyword is not None and arg.keyword.value in ("step", "data", "description") for arg in original.args
        ):
            return updated  # already written for the TF2 API
        return self._v1_in_graph(
            original,
            updated,
            "summary." + qualified.rpartition(".")[2],
            "the TF2 summary API records nothing in a TF1 graph; merge_all() would return None",
        )

    def _contrib_map(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        """TF 1.3's ``ds.map(f, num_threads=N, output_buffer_size=M)`` (tf.contrib.data) -> ``ds.map(f,
        num_parallel_calls=N).prefetch(M)``: what TF 1.4 split those arguments into; tf.data's map refuses them."""
        names = {arg.keyword.value for arg in updated.args if arg.keyword is not None}
        if not names & {"num_threads", "output_buffer_size"}:
            return None
        buffer = next(
            (arg.value for arg in updated.args if arg.keyword and arg.keyword.value == "output_buffer_size"), None
        )
        args = [
            arg.with_changes(keyword=cst.Name("num_parallel_calls"))
            if arg.keyword is not None and arg.keyword.value == "num_threads"
            else arg
            for arg in updated.args
            if not (arg.keyword is not None and arg.keyword.value == "output_buffer_size")
        ]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        result: cst.BaseExpression = updated.with_changes(args=args)
        if buffer is not None:
            result = cst.Call(func=cst.Attribute(value=result, attr=cst.Name("prefetch")), args=[cst.Arg(buffer)])
        line, column = self._position(original)
        self.changes.append(
            (
                line,
                column,
                "`map(num_threads=, output_buffer_size=)` (TF 1.3's tf.contrib.data) -> `map(num_parallel_calls=)"
                + (".prefetch(...)`" if buffer is not None else "`")
                + ": tf.data's map takes neither argument",
            )
        )
        return result

    def _whole_shape(self, original: cst.Call, updated: cst.Call, position: int) -> cst.Call:
        """``shape=[k, k, channels / groups, n]``: Python 3's ``/`` makes a float, which TF 1's Dimension took when it
        was whole (int(3.0)) and TF 2's refuses (TypeError). Floor division gives TF 1's value: ``//``."""
        args = list(updated.args)
        index = next((i for i, arg in enumerate(args) if arg.keyword and arg.keyword.value == "shape"), None)
        if index is None and len(args) > position and args[position].keyword is None and not args[position].star:
            index = position
        if index is None or not isinstance(args[index].value, (cst.List, cst.Tuple)):
            return updated
        shape = args[index].value
        assert isinstance(shape, (cst.List, cst.Tuple))
        divided = [
            element
            for element in shape.elements
            if isinstance(element.value, cst.BinaryOperation) and isinstance(element.value.operator, cst.Divide)
        ]
        if not divided:
            return updated
        elements = [
            element.with_changes(value=element.value.with_changes(operator=cst.FloorDivide()))
            if element in divided
            else element
            for element in shape.elements
        ]
        args[index] = args[index].with_changes(value=shape.with_changes(elements=elements))
        line, column = self._position(original)
        self.changes.append(
            (
                line,
                column,
                "`/` -> `//` in a shape: Python 3's division makes a float dimension, which TF 1 took when whole and "
                "TF 2 refuses (TypeError)",
            )
        )
        return updated.with_changes(args=args)

    def _variable_v1(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """``tf.Variable(0, name="global_step")`` in a TF1 graph: TF1's variable class back. With v2
        behaviour off, tf.compat.v1.Variable makes TF1's reference variable, whose value fetched in
        the same ``sess.run`` as its update is the updated one; tf.Variable always makes a resource
        variable, which gives the value from before (the step count a script prints moves by one)."""
        return self._v1_in_graph(
            original,
            updated,
            "Variable",
            "a TF1 graph: TF1's variable, whose value read in the same sess.run as its update is the updated "
            "one, as the script expects",
        )

    def _contrib_regularizer(self, original: cst.Call, updated: cst.Call, kind: str) -> cst.BaseExpression:
        """tf_upgrade_v2 writes ``tf.keras.regularizers.l2(0.5 * (s))`` for contrib's ``l2_regularizer(s)``.
        With Keras 3 that regularizer refuses TF1's reference variables ("Invalid dtype: float32_ref") when
        ``get_variable(regularizer=...)`` or a tf.layers layer applies it in a graph file: there the contrib
        helper (same penalty, ``scale * sum(w**2) / 2``) comes back."""
        self.v1_candidates += 1
        if not self.summary_v1 or len(updated.args) != 1:
            return updated
        keyword = updated.args[0].keyword
        if keyword is not None and keyword.value != "l":
            return updated
        value = updated.args[0].value
        if kind == "l2":
            # undo tf_upgrade_v2's `0.5 * (s)`: contrib halves the sum itself
            if not (
                isinstance(value, cst.BinaryOperation)
                and isinstance(value.operator, cst.Multiply)
                and isinstance(value.left, cst.Float)
                and value.left.value == "0.5"
            ):
                return updated
            value = value.right.with_changes(lpar=[], rpar=[])
        member = f"{kind}_regularizer"
        self.helpers.setdefault("_tf1_contrib", set()).add(member)
        line, column = self._position(original)
        self.changes.append(
            (
                line,
                column,
                f"`tf.keras.regularizers.{kind}` (tf_upgrade_v2's spelling of contrib's `{member}`) -> "
                f"`_tf1_contrib.{member}`: Keras 3's regularizer refuses TF1 graph variables (float32_ref)",
            )
        )
        return cst.Call(func=cst.parse_expression(f"_tf1_contrib.{member}"), args=[cst.Arg(value)])

    def _v1_in_graph(self, original: cst.Call, updated: cst.Call, member: str, why: str) -> cst.BaseExpression:
        """On the second pass over a graph file (summary_v1): `tf.<member>` -> `tf.compat.v1.<member>`."""
        self.v1_candidates += 1
        if not self.summary_v1 or not isinstance(updated.func, cst.Attribute):
            return updated
        head = dotted_name(original.func)
        assert head is not None
        alias = head.split(".")[0]
        line, column = self._position(original)
        self.changes.append((line, column, f"`{head}` -> `{alias}.compat.v1.{member}` ({why})"))
        return updated.with_changes(func=cst.parse_expression(f"{alias}.compat.v1.{member}"))

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        statements: list[cst.BaseSmallStatement] = []
        changed = False
        for small in updated.body:
            replaced = self._replace_import(small, self._position(original)[0])
            if replaced is None:
                statements.append(small)
            else:
                statements.extend(replaced)
                changed = True
        if self.flag_casts and updated.trailing_whitespace.comment is None:
            comment = _FLAG_COMMENT.format(cast="/".join(sorted(set(self.flag_casts))))
            updated = updated.with_changes(
                trailing_whitespace=updated.trailing_whitespace.with_changes(
                    whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(comment)
                )
            )
        self.flag_casts = []
        return updated.with_changes(body=statements) if changed else updated

    def _replace_import(self, small: cst.BaseSmallStatement, line: int) -> list[cst.BaseSmallStatement] | None:
        """An import of a removed module -> an assignment of its helper (same line, same name)."""
        if isinstance(small, cst.ImportFrom):
            if small.relative or small.module is None or isinstance(small.names, cst.ImportStar):
                return None
            base = _module_name(small.module)
            pairs = [(alias, f"{base}.{_module_name(alias.name)}") for alias in small.names]
        elif isinstance(small, cst.Import):
            pairs = [(alias, _module_name(alias.name)) for alias in small.names]
        else:
            return None
        kept: list[cst.ImportAlias] = []
        assignments: list[cst.BaseSmallStatement] = []
        for alias, full in pairs:
            asname = alias.asname.name if alias.asname is not None else None
            renamed = _RENAMES.get(full)
            # A TF 2.21 home outside tensorflow (projector's), or any home of a from-import (`from
            # tensorflow.contrib.data import Dataset` -> `from tensorflow.compat.v1.data import Dataset`).
            if (
                renamed is not None
                and "." in renamed
                and (not renamed.startswith("tensorflow.") or isinstance(small, cst.ImportFrom))
            ):
                local = asname.value if isinstance(asname, cst.Name) else None
                if isinstance(small, cst.ImportFrom):
                    home, _, member = renamed.rpartition(".")
                    text = f"from {home} import {member}" + (f" as {local}" if local and local != member else "")
                elif local is not None:
                    text = f"import {renamed} as {local}"
                else:
                    kept.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
                    continue
                statement = cst.parse_statement(text)
                assert isinstance(statement, cst.SimpleStatementLine)
                assignments.append(statement.body[0])
                self.changes.append((line, 1, f"import of `{full}` -> `{text}` (its TF 2.21 home)"))
                continue
            target = _MODULE_HELPERS.get(_canonical(full))
            if target is None:
                found = _helper_for(full)
                target = None if found is None else f"{found[0]}.{found[1]}"
            # `import a.b.c` binds `a`, not the module: only aliased imports and from-imports are swapped.
            if target is None or (isinstance(small, cst.Import) and not isinstance(asname, cst.Name)):
                kept.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
                continue
            local = asname.value if isinstance(asname, cst.Name) else _module_name(alias.name)
            namespace, _, member = target.partition(".")
            self.helpers.setdefault(namespace, set()).update([member] if member else [])
            assignments.append(
                cst.Assign(targets=[cst.AssignTarget(cst.Name(local))], value=cst.parse_expression(target))
            )
            self.changes.append((line, 1, f"import of `{full}` -> `{local} = {target}` ({_WHY[namespace]}; {_WHERE})"))
        if not assignments:
            return None
        return ([small.with_changes(names=kept)] if kept else []) + assignments

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        # A bare name bound by `from tensorflow.compat.v1 import placeholder` and the like.
        qualified = self.bindings.get(original.value)
        if qualified is not None and qualified != original.value and _is_graph_only(qualified):
            self.graph_lines.append(self._position(original)[0])
        return updated


# A %-conversion: mapping key, flags, width, precision, length, type.
_FORMAT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])")
_NUMERIC_SPECS = frozenset("diouxXeEfFgG")
_FETCH_METHODS = frozenset({"run", "eval", "numpy"})


_SIGN_FREE_REDUCTIONS = frozenset({"reduce_mean", "reduce_sum"})


def _negated_reduction(
    node: cst.UnaryOperation, bindings: Mapping[str, str]
) -> tuple[cst.Call, cst.BaseExpression] | None:
    """(the reduction call, its argument without the minus) for ``-tf.reduce_mean(-x, ...)`` /
    ``-tf.reduce_sum(-x, ...)`` (any TensorFlow spelling of the two), else None."""
    if not isinstance(node.operator, cst.Minus) or not isinstance(node.expression, cst.Call):
        return None
    call = node.expression
    qualified = qualified_name(call.func, bindings) or ""
    if not qualified.startswith("tensorflow.") or qualified.rsplit(".", 1)[-1] not in _SIGN_FREE_REDUCTIONS:
        return None
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return None
    first = call.args[0].value
    if isinstance(first, cst.UnaryOperation) and isinstance(first.operator, cst.Minus):
        return call, first.expression
    return None


def _is_plain_literal(node: cst.BaseExpression) -> bool:
    """A number, a string, None / True / False (possibly signed): absl takes these as they are."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)):
        return True
    return isinstance(node, cst.Name) and node.value in ("None", "True", "False")


class _BareNames(cst.CSTVisitor):
    """Names a module uses other than as an attribute (`x.name`) or a keyword (`f(name=...)`)."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.skipped: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.skipped.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skipped.add(id(node.keyword))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self.skipped:
            self.names.add(node.value)


def _is_fetch(node: cst.BaseExpression) -> bool:
    """``sess.run(x)`` / ``x.eval()`` / ``x.numpy()`` with one fetch that is not a list or dict literal."""
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return False
    if node.func.attr.value not in _FETCH_METHODS:
        return False
    positional = [arg for arg in node.args if arg.keyword is None]
    if node.func.attr.value == "run":
        return bool(positional) and not isinstance(positional[0].value, (cst.List, cst.Tuple, cst.Dict, cst.Set))
    return True


def _item(node: cst.BaseExpression) -> cst.BaseExpression:
    return cst.Call(func=cst.Attribute(value=node, attr=cst.Name("item")))


def _v1_alias(bindings: Mapping[str, str]) -> str | None:
    """How this file spells tf.compat.v1 (``tf.compat.v1``, or ``tf`` after ``import tensorflow.compat.v1 as tf``)."""
    for local, full in sorted(bindings.items()):
        if full == "tensorflow.compat.v1":
            return local
    for local, full in sorted(bindings.items()):
        if full == "tensorflow":
            return f"{local}.compat.v1"
    return None


_REMOVED_MODULES = ("tensorflow.contrib", "tensorflow.examples")


def _is_removed(module: str) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in _REMOVED_MODULES)


class _UsedNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


class _DropUnusedRemovedImports(cst.CSTTransformer):
    """Imports of removed modules whose every use was replaced by a helper are dropped."""

    def __init__(self, used: set[str]) -> None:
        super().__init__()
        self.used = used
        self.dropped: list[str] = []

    def _unused(self, alias: cst.ImportAlias, full: str, local: str) -> bool:
        return _is_removed(full) and local not in self.used

    def leave_Import(self, original: cst.Import, updated: cst.Import) -> cst.Import | cst.RemovalSentinel:
        kept = []
        for alias in updated.names:
            full = _module_name(alias.name)
            local = (
                alias.asname.name.value
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                else full.split(".")[0]
            )
            if self._unused(alias, full, local):
                self.dropped.append(full)
            else:
                kept.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        if not kept:
            return cst.RemoveFromParent()
        return updated.with_changes(names=kept) if len(kept) != len(updated.names) else updated

    def leave_ImportFrom(
        self, original: cst.ImportFrom, updated: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        if updated.relative or updated.module is None or isinstance(updated.names, cst.ImportStar):
            return updated
        base = _module_name(updated.module)
        kept = []
        for alias in updated.names:
            name = _module_name(alias.name)
            local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
            full = f"{base}.{name}"
            if self._unused(alias, full, local):
                self.dropped.append(full)
            else:
                kept.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        if not kept:
            return cst.RemoveFromParent()
        return updated.with_changes(names=kept) if len(kept) != len(updated.names) else updated


def _insertion_index(body: Sequence[cst.BaseStatement]) -> int:
    """Index after the module docstring and `from __future__` imports."""
    index = 0
    if body and isinstance(body[0], cst.SimpleStatementLine):
        first = body[0].body[0] if body[0].body else None
        if isinstance(first, cst.Expr) and isinstance(first.value, (cst.SimpleString, cst.ConcatenatedString)):
            index = 1
    while index < len(body):
        statement = body[index]
        if (
            isinstance(statement, cst.SimpleStatementLine)
            and statement.body
            and isinstance(statement.body[0], cst.ImportFrom)
            and statement.body[0].module is not None
            and dotted_name(statement.body[0].module) == "__future__"
        ):
            index += 1
            continue
        break
    return index


def _tensorflow_import(body: Sequence[cst.BaseStatement]) -> tuple[int, str] | None:
    """(index of the first module-level `import tensorflow ...`, expression for tf.compat.v1)."""
    for index, statement in enumerate(body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Import):
                continue
            for alias in small.names:
                full = _module_name(alias.name)
                local = (
                    alias.asname.name.value
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                    else full.split(".")[0]
                )
                if full == "tensorflow" or (alias.asname is None and full.startswith("tensorflow.")):
                    return index, f"{local}.compat.v1"
                if full == "tensorflow.compat.v1":
                    return index, local
    return None


def line_map(before: str, after: str) -> dict[int, int]:
    """1-based line numbers of ``before`` -> where the same line is in ``after``.

    migrate only inserts lines and rewrites lines in place, so matching the two texts line by
    line (difflib, no junk heuristics) recovers every position; a rewritten block of another
    length maps to its first line.
    """
    import difflib

    old, new = before.splitlines(), after.splitlines()
    mapping: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        for offset in range(old_end - old_start):
            if tag == "equal" or (tag == "replace" and old_end - old_start == new_end - new_start):
                mapping[old_start + offset + 1] = new_start + offset + 1
            elif tag != "insert":
                mapping[old_start + offset + 1] = new_start + 1
    return mapping


def _star_import(body: Sequence[cst.BaseStatement]) -> int | None:
    """Index of the first module-level `from X import *` of a module other than tensorflow's
    (the project's own: tensorflow's names hold no `tf`), or None."""
    for index, statement in enumerate(body):
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                    module = dotted_name(small.module) if small.module is not None else None
                    if not (module or "").startswith("tensorflow"):
                        return index
    return None


def rewrite_compat(source: str) -> CompatResult:
    """tf_upgrade_v2's output -> code that runs on TF 2.21 (the input must parse)."""
    module = cst.parse_module(source)
    bindings = import_bindings(module)
    tf_from_star = "tf" not in bindings and "tf." in source and _star_import(module.body) is not None
    if tf_from_star:
        # `from ops import *` where ops.py imports tensorflow as tf (taki0112's ResNet): `tf` is
        # nothing else, or the file would fail with a NameError.
        bindings["tf"] = "tensorflow"
    bare = _BareNames()
    module.visit(bare)
    bare_names = frozenset(bare.names)
    rewriter = _Rewriter(bindings, bare_names=bare_names)
    rewritten = MetadataWrapper(module).visit(rewriter)
    graph_mode = bool(rewriter.graph_lines) or any(
        helper in ("_tf1_layers", "_tf1_rnn", "_tf1_estimator")
        or (helper == "_tf1_contrib" and members & _CONTRIB_VARIABLES)
        for helper, members in rewriter.helpers.items()
    )
    if graph_mode and rewriter.v1_candidates:
        rewriter = _Rewriter(bindings, summary_v1=True, bare_names=bare_names)
        rewritten = MetadataWrapper(module).visit(rewriter)
    helpers = rewriter.helpers
    notes = list(rewriter.notes)
    branch_notes = list(rewriter.branch_notes)
    changes_extra: list[tuple[int, int, str]] = []
    if helpers:
        used = _UsedNames()
        rewritten.visit(used)
        dropper = _DropUnusedRemovedImports(used.names)
        rewritten = rewritten.visit(dropper)
        source_lines = source.splitlines()

        def import_line(full: str) -> int:
            module, _, member = full.rpartition(".")
            for number, text in enumerate(source_lines, 1):
                if "import" in text and member in text and (module in text or full in text):
                    return number
            return 1

        changes_extra = [
            (import_line(full), 1, f"dropped the import of `{full}`: every use now goes to a helper")
            for full in dropper.dropped
        ]
    warnings: list[tuple[int, int, str]] = []
    if "batch_normalization" in helpers.get("_tf1_layers", set()) and "UPDATE_OPS" not in source:
        where = rewriter.first_use.get("batch_normalization", (1, 1))
        warnings.append(
            (
                where[0],
                where[1],
                "batch_normalization keeps TF1's behaviour: its moving averages only update if the train op runs "
                "under tf.control_dependencies(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)); "
                "this file never reads UPDATE_OPS, so inference would use the initial statistics (as in TF1)",
            )
        )

    if "_tf1_estimator" in helpers:
        first = min(
            (rewriter.first_use[member] for member in helpers["_tf1_estimator"] if member in rewriter.first_use),
            default=(1, 1),
        )
        warnings.append((first[0], first[1], ESTIMATOR_COVERAGE))

    # Rewrites above keep lines in place; insertions below happen at statement boundaries of the
    # rewritten code, bottom-up, and are recorded so every position can be moved exactly.
    code = rewritten.code
    fresh = MetadataWrapper(cst.parse_module(code))
    positions = fresh.resolve(PositionProvider)
    body = fresh.module.body
    lines = code.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    inserted: list[tuple[int, int]] = []  # (line of `code` the text went before, number of lines)
    disabled = False
    tf_import = _tensorflow_import(body)
    if tf_import is None and tf_from_star:
        # `tf` comes with `from ops import *`: v2 behaviour goes off right after that import
        star = _star_import(body)
        tf_import = None if star is None else (star, "tf.compat.v1")
    if graph_mode and not rewriter.has_disabler:
        if tf_import is None:
            line = min(rewriter.graph_lines) if rewriter.graph_lines else 1
            notes.append(
                (
                    line,
                    1,
                    "the file builds a TF1 graph but imports TensorFlow only inside functions: call "
                    "tf.compat.v1.disable_v2_behavior() once, before the graph is built",
                )
            )
        else:
            index, v1 = tf_import
            end_line = positions[body[index]].end.line
            lines.insert(end_line, f"{v1}.disable_v2_behavior()  {_DISABLE_COMMENT}\n")
            inserted.append((end_line + 1, 1))
            disabled = True
    # Homes the code now names that the file does not import yet (its own import of them is kept).
    home_imports = {target: local for target, local in rewriter.home_imports.items() if bindings.get(local) != target}
    if helpers or home_imports:
        block = f"from {SHIM_MODULE} import {', '.join(sorted(helpers))}  {_IMPORT_COMMENT}\n" if helpers else ""
        for target, local in sorted(home_imports.items()):
            home, _, last = target.rpartition(".")
            alias = "" if local == last else f" as {local}"
            block += f"from {home} import {last}{alias}  {_HOME_IMPORT_COMMENT}\n"
        insert_at = _insertion_index(body)
        if insert_at < len(body):
            statement = body[insert_at]
            block_start = positions[statement].start.line - len(statement.leading_lines)
        else:
            block_start = len(lines) + 1
        lines.insert(block_start - 1, block)
        inserted.append((block_start, block.count("\n")))
    result = "".join(lines)

    in_place = line_map(source, code)

    def moved(line: int) -> int:
        line = in_place.get(line, line)
        return line + sum(count for at, count in inserted if at <= line)

    def final(items: Iterable[tuple[int, int, str]]) -> list[CompatChange]:
        return [CompatChange(moved(line), column, message) for line, column, message in items]

    changes = final(rewriter.changes + changes_extra)
    if disabled:
        disable_line = next(i for i, text in enumerate(result.splitlines(), 1) if text.endswith(_DISABLE_COMMENT))
        changes.append(
            CompatChange(
                disable_line,
                1,
                "added `tf.compat.v1.disable_v2_behavior()` after the TensorFlow import: the file builds a TF1 graph",
            )
        )
    for number, text in enumerate(result.splitlines(), 1):
        if text.endswith(_HOME_IMPORT_COMMENT):
            changes.append(
                CompatChange(
                    number, 1, f"added `{text.split('  #')[0]}`: the removed `tf.contrib` attribute chains now name it"
                )
            )
    if helpers:
        helper_line = next(i for i, text in enumerate(result.splitlines(), 1) if text.endswith(_IMPORT_COMMENT))
        names = ", ".join(sorted(helpers))
        changes.append(
            CompatChange(helper_line, 1, f"imports {names} from {SHIM_MODULE}.py (written once per output directory)")
        )
    return CompatResult(
        source=result,
        changes=tuple(sorted(changes, key=lambda change: (change.line, change.column))),
        helpers=tuple(sorted(helpers)),
        graph_mode=graph_mode,
        disabled_v2=disabled,
        notes=tuple(final(notes))
        + tuple(dataclasses.replace(note, blocks_run=False) for note in (*final(warnings), *final(branch_notes))),
        in_place=in_place,
        inserted=tuple(inserted),
    )
