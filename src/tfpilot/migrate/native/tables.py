"""What --mode native rewrites TF1 calls into: one table per kind of call, and the names it knows."""

from __future__ import annotations

import re

V1 = "tensorflow.compat.v1."

# TF1 optimizer -> (Keras class, TF1 positional parameter names, TF1 keyword -> Keras keyword,
# keywords Keras needs to match TF1's defaults).
OPTIMIZERS: dict[str, tuple[str, tuple[str, ...], dict[str, str], dict[str, str]]] = {
    "GradientDescentOptimizer": ("SGD", ("learning_rate",), {"learning_rate": "learning_rate"}, {}),
    "AdamOptimizer": (
        "Adam",
        ("learning_rate", "beta1", "beta2", "epsilon"),
        {"learning_rate": "learning_rate", "beta1": "beta_1", "beta2": "beta_2", "epsilon": "epsilon"},
        {"epsilon": "1e-08"},
    ),
    "MomentumOptimizer": (
        "SGD",
        ("learning_rate", "momentum", "use_locking", "name", "use_nesterov"),
        {"learning_rate": "learning_rate", "momentum": "momentum", "use_nesterov": "nesterov"},
        {},
    ),
    # Keras' RMSprop has TF1's update (ms = rho*ms + (1-rho)*g^2; mom = momentum*mom + lr*g/sqrt(ms+eps);
    # centered subtracts the mean gradient squared) but starts ms at 0 where TF1 started it at 1: the
    # rewrite uses a subclass that starts at 1 (RMSPROP_TF1_START), and TF1's epsilon 1e-10.
    "RMSPropOptimizer": (
        "RMSprop",
        ("learning_rate", "decay", "momentum", "epsilon", "use_locking", "centered", "name"),
        {
            "learning_rate": "learning_rate",
            "decay": "rho",
            "momentum": "momentum",
            "epsilon": "epsilon",
            "centered": "centered",
        },
        {"epsilon": "1e-10"},
    ),
}
IGNORED_OPTIMIZER_ARGS = frozenset({"name"})
# TF1 applies a sparse gradient (tf.gather, embedding_lookup) to the rows it touches only; a Keras
# optimizer decays the whole slot. The same for SGD and Adam (Adam's TF1 sparse update decays every row
# too), not for these, whose slots of untouched rows stand still in TF1 and move in Keras.
SPARSE_DIFFERS = frozenset({"RMSPropOptimizer", "MomentumOptimizer"})
SPARSE_GRADIENT_OPS = re.compile(r"^tensorflow\.(compat\.v1\.)?(gather\w*|nn\.embedding_lookup\w*|sparse\.\w+)$")
# The class the rewrite writes once per file for TF1's RMSPropOptimizer ({name}, {keras}).
RMSPROP_TF1_START = """class {name}({keras}.optimizers.RMSprop):
    \"\"\"keras.optimizers.RMSprop started as TF1's RMSPropOptimizer: the mean square at 1, not 0.

    The update is Keras' own, the same as TF1's; only the start of the mean square differs, and
    with it every step: from 0, a first step is lr / sqrt(1 - rho) whatever the gradient's size.
    \"\"\"

    def build(self, var_list):
        if self.built:
            return
        {keras}.optimizers.Optimizer.build(self, var_list)  # not RMSprop.build: it starts at 0
        self._velocities = self.add_optimizer_variables(var_list, "velocity", initializer="ones")
        self._momentums = self.add_optimizer_variables(var_list, "momentum") if self.momentum > 0 else []
        self._average_gradients = (
            self.add_optimizer_variables(var_list, "average_gradient") if self.centered else []
        )
"""

# tf.layers function -> (Keras class, TF1 positional parameters after `inputs`, allowed keywords).
LAYERS: dict[str, tuple[str, tuple[str, ...], frozenset[str]]] = {
    "dense": (
        "Dense",
        ("units", "activation", "use_bias", "kernel_initializer", "bias_initializer"),
        frozenset({"units", "activation", "use_bias", "kernel_initializer", "bias_initializer", "name"}),
    ),
    "conv2d": (
        "Conv2D",
        ("filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "activation", "use_bias"),
        frozenset(
            {"filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "activation", "use_bias"}
            | {"kernel_initializer", "bias_initializer", "name"}
        ),
    ),
    "max_pooling2d": (
        "MaxPooling2D",
        ("pool_size", "strides", "padding", "data_format"),
        frozenset({"pool_size", "strides", "padding", "data_format", "name"}),
    ),
    "average_pooling2d": (
        "AveragePooling2D",
        ("pool_size", "strides", "padding", "data_format"),
        frozenset({"pool_size", "strides", "padding", "data_format", "name"}),
    ),
    "flatten": ("Flatten", (), frozenset({"name"})),
}
# tf.layers classes made as objects (`L = tf.layers.Dense(units=1)`, then `L(x)`) -> the keywords the
# Keras class of the same name takes with the same meaning (positional arguments are the same too).
LAYER_OBJECTS: dict[str, frozenset[str]] = {
    "Dense": frozenset({"units", "activation", "use_bias", "kernel_initializer", "bias_initializer", "name"}),
    "Conv2D": frozenset(
        {"filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "activation", "use_bias"}
        | {"kernel_initializer", "bias_initializer", "name"}
    ),
    "MaxPooling2D": frozenset({"pool_size", "strides", "padding", "data_format", "name"}),
    "AveragePooling2D": frozenset({"pool_size", "strides", "padding", "data_format", "name"}),
    "Flatten": frozenset({"name"}),
}
# tf.compat.v1 call -> (its parameters, all required; the TF2 expression that computes the same).
# The losses are TF1's defaults (weights=1.0, SUM_BY_NONZERO_WEIGHTS: the mean over every element).
V1_CALLS: dict[str, tuple[tuple[str, ...], str]] = {
    "set_random_seed": (("seed",), "{tf}.random.set_seed({seed})"),
    "losses.mean_squared_error": (("labels", "predictions"), "{tf}.reduce_mean({tf}.square({labels} - {predictions}))"),
    "losses.softmax_cross_entropy": (
        ("onehot_labels", "logits"),
        "{tf}.reduce_mean({tf}.nn.softmax_cross_entropy_with_logits(labels={onehot_labels}, logits={logits}))",
    ),
    "losses.sparse_softmax_cross_entropy": (
        ("labels", "logits"),
        "{tf}.reduce_mean({tf}.nn.sparse_softmax_cross_entropy_with_logits(labels={labels}, logits={logits}))",
    ),
}
# Modules whose functions the graph may call: they make no variables behind the rewrite's back.
TRUSTED_MODULES = ("tensorflow.", "keras.", "numpy.", "math.", "tensorflow", "numpy", "math")
SUMMARY_KINDS = frozenset({"scalar", "histogram", "image", "audio", "text"})
ASSIGNS = frozenset({V1 + "assign", V1 + "assign_add", V1 + "assign_sub"})
LAYER_MODULES = ("tensorflow.layers.", "tensorflow.compat.v1.layers.")
FLATTEN = "tensorflow.contrib.layers.flatten"
# Calls that create variables: inside a tf.function they would make new ones on every trace.
CREATES_VARIABLES = re.compile(
    r"^tensorflow\.(Variable|compat\.v1\.(Variable|get_variable)|get_variable|compat\.v1\.layers\.|layers\.|contrib\.|"
    r"nn\.rnn_cell\.|compat\.v1\.nn\.rnn_cell\.|keras\.layers\.)|^keras\.layers\."
)
# tf.reset_default_graph, as tf_upgrade_v2 leaves it or imported from TF's ops module (the cookbook's form).
RESET_GRAPH = frozenset(
    {
        V1 + "reset_default_graph",
        "tensorflow.reset_default_graph",
        "tensorflow.python.framework.ops.reset_default_graph",
    }
)
# Graph state made at module level: with the Session in a function, the rewrite would leave it there.
MODULE_GRAPH = re.compile(
    r"^tensorflow\.(compat\.v1\.)?(placeholder|Variable|get_variable|layers\.|train\.\w*Optimizer|"
    r"global_variables_initializer|summary\.|nn\.rnn_cell\.)"
)


# A tf.estimator program stays on compat output, where the Estimator shim runs its model_fn in a
# TF1 graph with checkpoints in model_dir; porting a model_fn to keras.Model + fit is not automated.
ESTIMATOR_MODULES = ("tensorflow.estimator", "tensorflow.compat.v1.estimator")
ESTIMATOR_REASON = (
    "a tf.estimator program: it runs on the Estimator shim (tf1_compat_shims._tf1_estimator); porting the "
    "model_fn to a keras.Model trained with fit is not automated"
)

# Ops that draw anew at every run: a tensor built with one is not a constant.
RANDOM = re.compile(r"random|dropout|shuffle|multinomial|truncated_normal|categorical")
# A TensorFlow op that computes a tensor from its inputs (tf.constant, tf.matmul, tf.nn.relu ...):
# lower-case functions of tf, tf.math, tf.nn ... (classes such as tf.Variable and modules such as
# tf.train or tf.summary are not ops).
TENSOR_OP = re.compile(
    r"^tensorflow\.(compat\.v1\.)?((math|nn|linalg|strings|bitwise|signal|image|sparse)\.)?[a-z][a-z_0-9]*$"
)
