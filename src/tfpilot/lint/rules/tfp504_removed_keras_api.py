"""TFP504: Keras 2 APIs that Keras 3 removed."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfpilot.findings import Severity
from tfpilot.lint.apis import (
    KERAS2_PRIVATE_METHODS,
    KERAS_REMOVED,
    KERAS_REMOVED_METHODS,
    PRIVATE_KERAS,
    find_keras_removal,
    keras_name,
)
from tfpilot.lint.bindings import KERAS, UNKNOWN, LoopElement
from tfpilot.lint.keras3_private import KERAS3_PRIVATE
from tfpilot.lint.local_modules import imported_project_function
from tfpilot.lint.nodes import walk_nodes, walk_statements
from tfpilot.lint.paths import reaching_values
from tfpilot.lint.patterns import is_keras_model_expr, path_literals, walk_body
from tfpilot.lint.patterns import keyword as keyword_of
from tfpilot.lint.rule import Invalid, Rule
from tfpilot.lint.symbolic import (
    assume_symbolic,
    first_symbolic_argument,
    is_layer_class,
    is_symbolic,
    is_tensorflow_op,
    passed_argument,
    symbolic_argument,
    symbolic_parameter,
)

if TYPE_CHECKING:
    from tfpilot.lint.context import FileContext

# What switches eager execution off for the process, and the Keras model methods that then fail.
_EAGER_OFF = frozenset({"tensorflow.compat.v1.disable_eager_execution", "tensorflow.compat.v1.disable_v2_behavior"})
_EAGER_SWITCHES = frozenset(name.rsplit(".", 1)[1] for name in _EAGER_OFF)
_KERAS_RUNS = frozenset({"fit", "evaluate", "predict", "predict_on_batch", "train_on_batch", "test_on_batch"})
# Layer methods of Keras 2's node graph that Keras 3 removed (AttributeError).
_REMOVED_LAYER_METHODS = {
    "get_input_shape_at": "layer.input.shape",
    "get_output_shape_at": "layer.output.shape",
    "get_input_at": "layer.input",
    "get_output_at": "layer.output",
}
# tf.Variable methods a Keras 3 layer weight (keras.Variable) does not have (checked on the installed Keras: its
# `shape` is a TensorShape-like tuple, `numpy()`, `assign()` and `value` remain).
_TF_VARIABLE_ONLY_METHODS = {
    "get_shape": "use `{0}.shape`",
    "eval": "use `{0}.numpy()`",
    "initialized_value": "use `{0}.value`",
    "read_value": "use `{0}.value`",
}
_LAYER_WEIGHTS = frozenset(
    {"kernel", "bias", "embeddings", "gamma", "beta", "moving_mean", "moving_variance", "recurrent_kernel",
     "depthwise_kernel", "pointwise_kernel"}
)  # fmt: skip
# Keras 2's layer graph as attributes: Keras 3's layers keep only private `_inbound_nodes`, and its
# Node has `parent_nodes` / `operation` instead (each checked on the installed Keras).
_REMOVED_GRAPH_ATTRIBUTES = {
    "inbound_layers": "`[parent.operation for parent in node.parent_nodes]`",
    "outbound_layer": "`node.operation`",
    "inbound_nodes": "`layer._inbound_nodes` (private) or the model's `layers` in order",
    "outbound_nodes": "`layer._outbound_nodes` (private)",
}
# Keras 2's fit/evaluate/predict took these for Sequence workers; Keras 3 moved them to
# keras.utils.PyDataset(workers=, use_multiprocessing=, max_queue_size=) and rejects them here.
_WORKER_ARGUMENTS = ("use_multiprocessing", "workers", "max_queue_size")
_KERAS_WORKER_WORDS = ("use_multiprocessing", "max_queue_size")
_TRAINING_METHODS = frozenset({"fit", "evaluate", "predict"})
# (Keras class, keyword) Keras 2 took and Keras 3 refuses, and what to write instead.
# Each row was run on the installed Keras (tests/unit/lint/test_lint_round13.py's premise test).
_TENSORBOARD_GONE = "Keras 3's TensorBoard callback has no such option: drop it"
_REMOVED_KEYWORDS = {
    ("ModelCheckpoint", "period"): "save every N epochs with `save_freq=N * steps_per_epoch` (batches), "
    "or save in an `on_epoch_end` callback",
    ("ModelCheckpoint", "options"): "drop it (Keras 3 saves .keras / .weights.h5 files, not TF checkpoints)",
    ("TensorBoard", "batch_size"): _TENSORBOARD_GONE,
    ("TensorBoard", "write_grads"): _TENSORBOARD_GONE + " (log gradients from a custom train_step with tf.summary)",
    ("TensorBoard", "embeddings_layer_names"): _TENSORBOARD_GONE,
    ("TensorBoard", "embeddings_data"): _TENSORBOARD_GONE,
    ("BatchNormalization", "fused"): "drop it (TensorFlow picks the fused kernel itself)",
    **{
        (rnn, "time_major"): "drop it and feed batch-major tensors (`tf.transpose(x, [1, 0, 2])` first)"
        for rnn in ("RNN", "LSTM", "GRU", "SimpleRNN")
    },
}
# Keywords every Keras 2 layer took (Layer.__init__'s **kwargs) and no Keras 3 layer does.
_REMOVED_LAYER_KEYWORDS = {
    "batch_input_shape": "start the model with `keras.Input(batch_shape=...)` (or pass `input_shape=` "
    "without the batch dimension)",
    "batch_size": "start the model with `keras.Input(shape, batch_size=...)` (a stateful RNN needs it there)",
    "weights": "build the layer, then `layer.set_weights([...])`, or give it a `keras.initializers.Constant` initializer",
}
# The Keras 3 layers that still take one of those keywords (each checked on the installed Keras).
_LAYERS_TAKING = {
    "batch_size": frozenset({"Input", "InputLayer"}),
    "weights": frozenset({"Embedding", "Bidirectional"}),
}
_REMOVED_KEYWORD_NAMES = frozenset(keyword for _, keyword in _REMOVED_KEYWORDS) | set(_REMOVED_LAYER_KEYWORDS)
# What Keras 2's TF-format load_weights returned (a checkpoint status); Keras 3 returns None.
_STATUS_METHODS = frozenset({"expect_partial", "assert_consumed", "assert_existing_objects_matched"})


# Keras 2 layer attributes Keras 3 layers lack (models keep them), and what to read instead.
_LAYER_SHAPES = {"output_shape": "output.shape", "input_shape": "input.shape"}


def _is_int_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


# Calls that return one integer: a count or a product of dimensions (`np.prod(shape)`,
# `functools.reduce(lambda x, y: x * y, shape)`, `len(features)`); Keras 3 refuses each as a shape
# (ValueError "Cannot convert '6' to a shape", numpy's int64 included; run in test_lint_tf_premises).
_INT_CALLS = frozenset({"len", "int", "prod", "reduce"})


def _is_int_valued(node: ast.AST) -> bool:
    """An int literal, a call that returns one integer, or arithmetic on those."""
    if _is_int_literal(node):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        return _is_int_valued(node.left) and _is_int_valued(node.right)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name == "reduce":
            # functools.reduce(operator.mul / lambda x, y: x * y, dims): a product of dimensions
            first = node.args[0] if node.args else None
            return (isinstance(first, ast.Lambda) and isinstance(first.body, ast.BinOp)) or (
                isinstance(first, ast.Attribute) and first.attr == "mul"
            )
        return name in _INT_CALLS
    return False


# Keras 2's LossScaleOptimizer methods for custom loops; Keras 3's scales with scale_loss() and
# unscales inside apply_gradients().
_LOSS_SCALE_METHODS = {
    "get_scaled_loss": "use `optimizer.scale_loss(loss)` before taking the gradients",
    "get_unscaled_gradients": "Keras 3's apply_gradients() unscales the gradients itself; pass them as they are",
}


# Keras 2's OptimizerV2 internals that custom loops and optimizer subclasses called; a Keras 3
# optimizer has none of them (AttributeError). `build(var_list)` makes the slots now.
_OPTIMIZER_V2_METHODS = {
    "_create_hypers": "Keras 3 optimizers keep their hyperparameters as plain attributes",
    "_create_slots": "call `optimizer.build(var_list)` to create the slot variables",
    "_create_all_weights": "call `optimizer.build(var_list)` to create the slot variables",
    "_set_hyper": "set the attribute (`optimizer.learning_rate = ...`)",
    "_get_hyper": "read the attribute (`optimizer.learning_rate`)",
    "_decayed_lr": "read `optimizer.learning_rate` (a schedule is evaluated at `optimizer.iterations`)",
    "get_slot": "Keras 3 keeps slots in `optimizer.variables`; there is no per-variable lookup",
    "get_slot_names": "Keras 3 keeps slots in `optimizer.variables`; there is no per-variable lookup",
}


def _iterates_layers(iterated: ast.expr) -> bool:
    """``model.layers`` (or ``enumerate`` / ``reversed`` of it, or a slice of it): each element is a layer."""
    if (
        isinstance(iterated, ast.Call)
        and isinstance(iterated.func, ast.Name)
        and iterated.func.id in ("enumerate", "reversed")
    ):
        iterated = iterated.args[0] if iterated.args else iterated
    if isinstance(iterated, ast.Subscript):
        iterated = iterated.value  # model.layers[1:]
    return isinstance(iterated, ast.Attribute) and iterated.attr == "layers"


# Instance attributes Keras 3's Model sets in __init__: a method of a Model subclass by one of these
# names is hidden by the attribute (`self.loss` is None, so `self.loss(x, y)` raises TypeError).
_MODEL_INIT_ATTRIBUTES = frozenset(
    {"loss", "compiled", "train_function", "test_function", "predict_function", "steps_per_execution"}
)
# What keras_name() calls a constructor of a Keras model (its second item).
_KERAS_MODEL_FACTORIES = frozenset({"Sequential", "Model", "models.Sequential", "models.Model"})
# Keras RNN cells and layers: Keras 3's get_initial_state(batch_size) takes neither dtype= nor inputs=.
_RNN_LAYERS = frozenset(
    {"LSTMCell", "GRUCell", "SimpleRNNCell", "StackedRNNCells", "RNN", "LSTM", "GRU", "SimpleRNN", "ConvLSTM2D"}
)
# A TF1 optimizer (tf.compat.v1.train.*Optimizer) has `variables()`, `get_slot()` and `_create_slots`.
_TF1_OPTIMIZER = re.compile(r"train\.\w*Optimizer\b")

# TensorFlow's private frozen Keras 2 (PRIVATE_KERAS; `tensorflow.python.keras.engine` still imports on TF 2.21):
# its modules are not Keras 3's to have removed; TFP509 reports depending on it.


# Keras 2 add_weight keywords that Keras 3's add_weight(shape, initializer, dtype, trainable, autocast, regularizer,
# constraint, aggregation, overwrite_with_gradient, name) does not take: what to write instead.
_KERAS2_ADD_WEIGHT_KEYWORDS = {
    "experimental_autocast": "it is `autocast=` in Keras 3",
    "use_resource": "drop it (Keras 3 variables are always resource variables)",
    "synchronization": "drop it (Keras 3 variables choose their own); `aggregation=` stays",
    "partitioner": "drop it (Keras 3 has no variable partitioners)",
    "caching_device": "drop it (Keras 3 has no caching device)",
    "getter": "drop it (Keras 3 has no custom getters)",
}


class RemovedKerasApi(Rule):
    """Keras 3 removed or moved many Keras 2 APIs; the code fails on import or first call.

    Examples: ``layers.experimental.preprocessing.*`` (now ``keras.layers.*``),
    ``fit_generator`` (``fit`` takes generators), ``CuDNNLSTM`` (``LSTM`` picks cuDNN itself),
    ``keras.backend.get_session``, legacy optimizers. Renames are fixed mechanically; the rest
    come with the replacement to use.
    """

    code = "TFP504"
    name = "removed-keras-api"
    message = "Keras 2 API removed in Keras 3"
    fix_hint = "Use the Keras 3 replacement named in the message (see the Keras 3 migration guide)"
    severity = Severity.ERROR
    category = "keras 3"
    keras3_only = True
    tokens = (
        "keras",
        "_generator",
        "_shape_at",
        "use_multiprocessing",
        "max_queue_size",
        "load_weights",
        "predict_classes",
        "output_shape",
        "input_shape",
        "_scaled_",
        "optimizer",
        "opt.",
        "get_initial_state",
        "def loss(",
        "Module",
        "Variable(",
    )
    # every call: a TensorFlow op on a KerasTensor can be any op (gated by _builds_functional_model)
    fixable = True
    VALID = [
        """
import keras

rescale = keras.layers.Rescaling(1 / 255)
model = keras.Sequential([rescale, keras.layers.LSTM(8)])
model.fit(x=None)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

rescale = tf.keras.layers.experimental.preprocessing.Rescaling(1 / 255)
""",
            line=4,
            fixed="""
import tensorflow as tf

rescale = tf.keras.layers.Rescaling(1 / 255)
""",
        ),
        Invalid(
            """
from tensorflow.keras.layers.experimental.preprocessing import Rescaling, RandomFlip
""",
            line=2,
            fixed="""
from tensorflow.keras.layers import Rescaling, RandomFlip
""",
        ),
        Invalid(
            """
def train(model, generator):
    model.fit_generator(generator, epochs=3)
""",
            line=3,
            fixed="""
def train(model, generator):
    model.fit(generator, epochs=3)
""",
        ),
        Invalid(
            """
from keras import backend as K

session = K.get_session()
""",
            line=4,
        ),
    ]

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        found = keras_name(qualname)
        if found is None:
            return
        namespace, path = found
        entry = find_keras_removal(namespace, path)
        if entry is None:
            return
        binding = keras_name(self.context.root_binding(node))
        if binding is not None and find_keras_removal(binding[0], binding[1]) is entry:
            return  # the import that bound this name is already reported
        text = self.context.dotted(node) or path
        if entry.path.startswith("backend.") and entry not in KERAS_REMOVED:
            # Keras 2's functional backend (K.mean, K.relu, ...) used throughout a file is one
            # cause: one finding, at the first use, counting the rest
            self._report_per_file("backend", node, f"`{text}` was removed in Keras 3: {entry.hint}")
            return
        fix: dict[str, Any] | None = None
        if entry.rename_to is not None and isinstance(node, ast.Attribute):
            marker = "." + entry.path
            index = text.find(marker)
            if index >= 0:
                fixed = text[:index] + "." + entry.rename_to + text[index + len(marker) :]
                fix = {"replacement": fixed, "description": f"{text} -> {fixed}"}
        self.report(node, f"`{text}` was removed in Keras 3: {entry.hint}", fix_data=fix)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or not module or module.startswith(PRIVATE_KERAS):
            return
        found = keras_name(module + ".")
        module_path = found[1].rstrip(".") if found else None
        for alias in node.names:
            full = keras_name(f"{module}.{alias.name}")
            if full is None:
                continue
            entry = find_keras_removal(*full)
            if entry is None:
                continue
            fix: dict[str, Any] | None = None
            if (
                entry.rename_to is not None
                and entry.prefix
                and module_path is not None
                and (module_path == entry.path or module_path.startswith(entry.path + "."))
            ):
                new_path = entry.rename_to + module_path[len(entry.path) :]
                namespace = module[: len(module) - len(module_path)]
                new_module = namespace + new_path
                fix = {"module": new_module, "description": f"from {module} -> from {new_module}"}
            self.report(node, f"`{module}.{alias.name}` was removed in Keras 3: {entry.hint}", fix_data=fix)
            return

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            found = None if alias.name.startswith(PRIVATE_KERAS) else keras_name(alias.name)
            if found is not None and find_keras_removal(*found) is not None:
                entry = find_keras_removal(*found)
                self.report(node, f"`{alias.name}` was removed in Keras 3: {entry.hint}")  # type: ignore[union-attr]
                return

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        # the first TensorFlow op on a KerasTensor in this file: (its violation index, how many)
        # id(scope) -> whether it calls keras.Input (only there can a name hold a KerasTensor)
        self._functional_scopes: dict[int, bool] = {}
        self._may_build = "Input(" in context.source
        # names some line assigns an expression with a `/` (read once, when a size or step count is a name)
        self._divided_names: frozenset[str] | None = None
        # only such a file can give a function's `reduction` parameter Reduction.AUTO as default
        self._may_reduce = "Reduction" in context.source
        # Causes reported once per file however often it repeats them (`optimizer.lr`, Keras 2 backend
        # functions, TensorFlow ops on KerasTensors): cause -> (violation index, how many uses)
        self._grouped: dict[str, tuple[int, int]] = {}
        # `tf.compat.v1.disable_eager_execution()` and the Keras model runs it breaks (see finish)
        self._eager_off: ast.Call | None = None
        self._keras_runs: list[ast.Call] = []
        # only a file that names a switch can turn eager execution off: elsewhere the binding
        # lookups behind each fit / predict call would be spent for nothing
        self._may_switch = any(switch in context.source for switch in _EAGER_SWITCHES)

    def finish(self) -> None:
        """Keras 3 runs eagerly or in a tf.function: with eager execution switched off for the whole
        process, fit / evaluate / predict raise RuntimeError ("`tf.data.Dataset` only supports
        Python-style iteration in eager mode"), predict_on_batch an AttributeError, and
        train_on_batch returns a graph tensor it never runs. One finding, at the switch."""
        if self._eager_off is None or not self._keras_runs:
            return
        first = min(self._keras_runs, key=lambda call: call.lineno)
        assert isinstance(first.func, ast.Attribute)
        method = first.func.attr
        what = (
            "returns a graph tensor it never runs (nothing trains)"
            if method in ("train_on_batch", "test_on_batch")
            else "raises AttributeError"
            if method == "predict_on_batch"
            else "raises RuntimeError"
        )
        self.report(
            self._eager_off,
            f"eager execution is switched off here, and Keras 3 runs only eagerly or in a tf.function: "
            f"`{ast.unparse(first.func)}()` (line {first.lineno}) {what}; drop the switch, or keep the graph "
            "code on tf.compat.v1 apart from the Keras model",
        )

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == "lr":
            self._check_optimizer_lr(node)
            return
        if node.attr in _REMOVED_GRAPH_ATTRIBUTES and isinstance(node.ctx, ast.Load) and self.context.uses_tensorflow:
            self._report_per_file(
                f"graph-{node.attr}",
                node,
                f"`.{node.attr}` is Keras 2's layer graph; Keras 3's layers and nodes have no such attribute "
                f"(AttributeError): read {_REMOVED_GRAPH_ATTRIBUTES[node.attr]}",
            )
            return
        if node.attr in ("input", "output") and isinstance(node.ctx, ast.Load):
            self._check_sequential_io(node)
            return
        # `layer.output_shape` / `layer.input_shape` on a layer of a model: Keras 3 layers have
        # neither (models still do)
        if node.attr not in _LAYER_SHAPES or not isinstance(node.ctx, ast.Load) or not self.context.uses_tensorflow:
            return
        if self._is_layer(node.value):
            self.report(
                node,
                f"`{ast.unparse(node)}`: Keras 3 layers have no {node.attr} (AttributeError); read "
                f"`{ast.unparse(node.value)}.{_LAYER_SHAPES[node.attr]}`",
            )

    def _check_sequential_io(self, node: ast.Attribute) -> None:
        """``model.input`` / ``model.output`` of a ``keras.Sequential``: Keras 3 gives a layer an input and an
        output only once it was called on a symbolic tensor, and a Sequential never is (its layers run in an
        inner functional model), so both raise AttributeError "has never been called", with an Input layer
        too (premise run in test_lint_round17.py). ``model.inputs[0]`` / ``model.outputs[0]`` work."""
        receiver = self.context.dotted(node.value)
        if receiver is None:
            return
        constructor = keras_name(self.context.assigned_calls.get(receiver))
        if constructor is None or constructor[1] not in ("Sequential", "models.Sequential"):
            return
        if re.search(rf"(?<![\w.]){re.escape(receiver)}\(", self.context.source):
            return  # called on a tensor somewhere: then it has them
        self.report(
            node,
            f"`{receiver}.{node.attr}`: a Keras 3 Sequential has no `{node.attr}` until it is called on a tensor "
            f'(AttributeError "never been called"); use `{receiver}.{node.attr}s[0]`',
        )

    def _check_optimizer_lr(self, node: ast.Attribute) -> None:
        """``optimizer.lr``: Keras 2's alias of ``learning_rate``; a Keras 3 optimizer has no
        ``lr`` (reading it raises AttributeError, assigning it makes a plain attribute the
        optimizer never reads). One finding per file, at the first use."""
        if not self.context.uses_tensorflow or not self._is_optimizer(node.value, node):
            return
        receiver = ast.unparse(node.value)
        effect = (
            "raises AttributeError"
            if isinstance(node.ctx, ast.Load)
            else "is a plain attribute the optimizer never reads (the learning rate does not change)"
        )
        self._report_per_file(
            "optimizer-lr",
            node,
            f"`{receiver}.lr`: Keras 3 optimizers have no `lr` (Keras 2's alias), so this {effect}; "
            f"use `{receiver}.learning_rate` (a variable: `.assign(...)` to change it)",
        )

    def _report_per_file(self, cause: str, node: ast.AST, message: str, *, where: str = "file") -> None:
        """One finding per cause and file (or per `cause` key, e.g. one per class: `where="class"`), at the
        first use; each later use is counted in its message."""
        if cause not in self._grouped:
            self.report(node, message)
            self._grouped[cause] = (len(self.violations) - 1, 1)
            return
        index, count = self._grouped[cause]
        self._grouped[cause] = (index, count + 1)
        first = self.violations[index]
        self.violations[index] = dataclasses.replace(
            first, message=first.message.split(" (and ")[0] + f" (and {count} more in this {where})"
        )

    def _is_optimizer(self, receiver: ast.expr, at: ast.AST) -> bool:
        """A Keras optimizer: a name that says so (``optimizer``, ``self.g_optimizer``,
        ``model.optimizer``, ``opt``) or one bound to a ``keras.optimizers`` constructor."""
        name = self.context.dotted(receiver)
        if name is None:
            return False
        last = name.rsplit(".", 1)[-1].lower()
        if last.endswith("optimizer") or last in ("opt", "optim"):
            return True
        if name in ("self", "args", "FLAGS", "config") or "optimizers" not in self.context.source:
            return False  # a constructor of keras.optimizers is the only other way to know
        for value in self.context.bindings.values(name, at, self.context.scope.node):
            if isinstance(value, ast.Call):
                found = keras_name(self.context.qualname(value.func))
                if found is not None and found[1].startswith("optimizers."):
                    return True
        return False

    def _keras_layer_weight(self, value: ast.expr) -> bool:
        """``layer.kernel`` / ``self.conv.bias``: a weight attribute of a Keras layer built in this file."""
        if not isinstance(value, ast.Attribute) or value.attr not in _LAYER_WEIGHTS:
            return False
        owner = value.value
        if isinstance(owner, ast.Name):
            return self._is_layer(owner)
        if isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "self":
            klass = self.context.classes[-1] if self.context.classes else None
            return klass is not None and any(
                isinstance(target := statement.targets[0], ast.Attribute)
                and target.attr == owner.attr
                and (found := keras_name(qualname)) is not None
                and found[1].startswith("layers.")
                and found[1] != "layers.Input"
                for statement, qualname in self._self_assignments(klass)
            )
        return False

    def _comprehension_source(self, name: str) -> ast.expr | None:
        """What the innermost enclosing comprehension that binds ``name`` iterates over, if any."""
        for node in reversed(self.context.stack):
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                for generator in node.generators:
                    if any(isinstance(t, ast.Name) and t.id == name for t in ast.walk(generator.target)):
                        return generator.iter
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return None
        return None

    def _is_layer(self, receiver: ast.expr) -> bool:
        """A layer of a model: ``model.layers[i]``, ``model.get_layer(...)``, the loop variable of
        ``for layer in model.layers`` (or ``enumerate(model.layers)``), or a Keras layer built here."""
        if isinstance(receiver, ast.Subscript):
            return isinstance(receiver.value, ast.Attribute) and receiver.value.attr == "layers"
        if isinstance(receiver, ast.Call):
            return isinstance(receiver.func, ast.Attribute) and receiver.func.attr == "get_layer"
        if not isinstance(receiver, ast.Name):
            return False
        comprehension = self._comprehension_source(receiver.id)
        if comprehension is not None:
            # `[(i, l.output_shape) for i, l in enumerate(model.layers)]`: the comprehension's own variable
            return _iterates_layers(comprehension)
        for value in self.context.bindings.values(receiver.id, receiver, self.context.scope.node):
            if isinstance(value, LoopElement):
                # `for i, layer in enumerate(model.layers)`: an element of the model's layers
                if not (isinstance(value.iterable, ast.Attribute) and value.iterable.attr == "layers"):
                    return False
                continue
            if isinstance(value, ast.For):
                if _iterates_layers(value.iter):
                    continue
                return False
            if isinstance(value, ast.Call):
                found = keras_name(self.context.qualname(value.func))
                if found is not None and found[1].startswith("layers.") and found[1] != "layers.Input":
                    continue
                if isinstance(value.func, ast.Attribute) and value.func.attr == "get_layer":
                    continue
            return False
        return bool(self.context.bindings.values(receiver.id, receiver, self.context.scope.node))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if self._input_shape_is_int(node):
            self.report(
                node,
                "`Input(shape=<int>)`: Keras 3 takes only a tuple (ValueError \"Cannot convert '...' to a "
                'shape"; `(1)` is an int, not a tuple); write `shape=(n,)`',
            )
            return
        if self._check_keywords(node):
            return
        self._check_slash_name(node)
        self._check_true_division(node)
        if not isinstance(func, ast.Attribute):
            self._check_symbolic_op(node)
            return
        if func.attr in _TF_VARIABLE_ONLY_METHODS and self._keras_layer_weight(func.value):
            weight = ast.unparse(func.value)
            self.report(
                node,
                f"`{weight}.{func.attr}()`: a Keras 3 layer's weight is a keras.Variable, which has no `{func.attr}` "
                f"(AttributeError; tf.Variable had it); {_TF_VARIABLE_ONLY_METHODS[func.attr].format(weight)}",
            )
            return
        if func.attr == "load_weights" and self._check_by_name(node):
            return
        if func.attr == "__init__" and self._positional_layer_init(node):
            self.report(
                node,
                f"`{ast.unparse(func)}({ast.unparse(node.args[0])})`: Keras 3's Layer.__init__ takes keyword "
                "arguments only (TypeError: takes 1 positional argument); pass them as `**kwargs`",
            )
            return
        if func.attr == "add_weight" and self._keras_add_weight(node):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                self.report(
                    node,
                    f"`add_weight({ast.unparse(node.args[0])}, ...)`: Keras 3's add_weight takes `shape` first and "
                    'refuses a positional name (ValueError "`name` must be passed as a keyword argument"); write '
                    f"`add_weight(name={ast.unparse(node.args[0])}, shape=...)`",
                )
            # A second cause in the same call, reported where it is written: the keyword's own line.
            removed = next((k for k in node.keywords if k.arg in _KERAS2_ADD_WEIGHT_KEYWORDS), None)
            if removed is not None and removed.arg is not None:
                self.report(
                    removed,
                    f"`add_weight({removed.arg}=...)`: Keras 3's add_weight has no `{removed.arg}` argument (TypeError: "
                    f"unexpected keyword argument); {_KERAS2_ADD_WEIGHT_KEYWORDS[removed.arg]}",
                )
            return
        if func.attr == "predict_classes" and self._keras_predict_classes(func.value, node):
            self.report(
                node,
                "`.predict_classes()` was removed from Keras (TF 2.6; AttributeError in Keras 3): use "
                "`np.argmax(model.predict(x), axis=-1)` (or `(model.predict(x) > 0.5).astype('int32')` "
                "for a sigmoid output)",
            )
            return
        if func.attr in _LOSS_SCALE_METHODS and self._loss_scale_optimizer(func.value, node):
            self.report(
                node,
                f"`.{func.attr}()` was removed from Keras 3's LossScaleOptimizer (AttributeError): "
                f"{_LOSS_SCALE_METHODS[func.attr]}",
            )
            return
        if self._check_optimizer_method(node, func) or self._check_initial_state(node, func):
            return
        # the checks below judge Keras objects: a file that imports neither TF nor Keras has none
        if func.attr in _REMOVED_LAYER_METHODS and self.context.uses_tensorflow:
            self.report(
                node,
                f"`.{func.attr}()` was removed in Keras 3 (AttributeError): read "
                f"`{_REMOVED_LAYER_METHODS[func.attr]}` instead",
            )
            return
        if func.attr in _TRAINING_METHODS or func.attr in KERAS_REMOVED_METHODS:
            # `use_multiprocessing` / `max_queue_size` on fit/predict are Keras' own words: they say Keras in a
            # file whose model comes from another module of the project (it imports no TensorFlow itself)
            arguments = _WORKER_ARGUMENTS if self.context.uses_tensorflow else _KERAS_WORKER_WORDS
            for name in arguments:
                found = next((k for k in node.keywords if k.arg == name), None)
                if found is not None:
                    self.report(
                        found,  # the keyword: in a call over many lines, the line to change
                        f"`{func.attr}({name}=...)` was removed in Keras 3 (TypeError: unexpected keyword "
                        "argument): pass workers / use_multiprocessing / max_queue_size to a "
                        "keras.utils.PyDataset instead, or drop them",
                    )
                    break
        if self._may_switch and func.attr in _KERAS_RUNS and self._keras_model(func.value, node):
            self._keras_runs.append(node)
        if func.attr in _EAGER_SWITCHES and self.context.qualname(func) in _EAGER_OFF:
            self._eager_off = self._eager_off or node
            return
        if func.attr in KERAS2_PRIVATE_METHODS and self.context.uses_tensorflow and not node.args:
            self.report(
                node,
                f"`.{func.attr}()` is Keras 2's private function builder; Keras 3 models have no such "
                "method (AttributeError) and build their functions on first use: drop the call",
            )
            return
        if func.attr in _STATUS_METHODS and self.context.uses_tensorflow:
            inner = func.value
            if (
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Attribute)
                and inner.func.attr == "load_weights"
            ):
                self.report(
                    node,
                    f"`load_weights(...).{func.attr}()`: Keras 3's load_weights returns None "
                    "(AttributeError); drop the call (Keras 3 reads .weights.h5 files, not TF checkpoints)",
                )
            return
        if func.attr == "add_loss" and node.args and self._symbolic(node.args[0]):
            if self.context.current_class() is None or self.context.scope.node is self.context.tree:
                self.report(
                    node,
                    "`add_loss` of a symbolic tensor (a loss built from the functional model's "
                    "KerasTensors): Keras 3 raises NotImplementedError; compute the loss in a "
                    "custom train_step / compute_loss, or in a layer's call() with self.add_loss",
                )
            return
        self._check_symbolic_op(node)
        if isinstance(func, ast.Attribute) and func.attr in KERAS_REMOVED_METHODS:
            new = KERAS_REMOVED_METHODS[func.attr]
            self.report(
                node,
                f"`.{func.attr}()` was removed in Keras 3; `.{new}()` accepts generators and datasets",
                fix_data={"method": new, "description": f".{func.attr}() -> .{new}()"},
            )

    def _check_optimizer_method(self, node: ast.Call, func: ast.Attribute) -> bool:
        """``optimizer._create_slots(...)`` / ``optimizer.variables()`` on a Keras optimizer."""
        name = func.attr
        if name not in _OPTIMIZER_V2_METHODS and not (name == "variables" and not node.args and not node.keywords):
            return False
        if not self.context.uses_tensorflow or _TF1_OPTIMIZER.search(self.context.source):
            return False  # TF1's optimizers have these methods
        if not self._is_optimizer(func.value, node):
            return False
        cause = "optimizer-variables" if name == "variables" else "optimizer-v2-internals"
        receiver = ast.unparse(func.value)
        if name == "variables":
            message = (
                f"`{receiver}.variables()`: a Keras 3 optimizer's `variables` is a list, not a method "
                f"(TypeError: 'list' object is not callable); write `{receiver}.variables`"
            )
        else:
            message = (
                f"`{receiver}.{name}()`: Keras 2's OptimizerV2 internals are gone from Keras 3 optimizers "
                f"(AttributeError); {_OPTIMIZER_V2_METHODS[name]}"
            )
        self._report_per_file(cause, node, message)
        return True

    def _check_initial_state(self, node: ast.Call, func: ast.Attribute) -> bool:
        """``cell.get_initial_state(batch_size=..., dtype=...)`` on a Keras RNN cell or layer."""
        if func.attr != "get_initial_state" or not self.context.uses_tensorflow:
            return False
        extra = [k.arg for k in node.keywords if k.arg in ("dtype", "inputs")]
        if not extra:
            return False
        name = self.context.dotted(func.value)
        values = self.context.bindings.values(name, node, self.context.scope.node) if name else []
        if not values or not all(
            isinstance(value, ast.Call)
            and (found := keras_name(self.context.qualname(value.func))) is not None
            and found[1].split(".")[-1] in _RNN_LAYERS
            for value in values
        ):
            return False
        self._report_per_file(
            "initial-state-keywords",
            node,
            f"`{ast.unparse(func)}(..., {extra[0]}=...)`: Keras 3's get_initial_state takes only batch_size "
            f"(TypeError: unexpected keyword argument '{extra[0]}'); pass `batch_size` alone (the state is "
            "in the layer's dtype)",
        )
        return True

    def _self_assignments(self, klass: ast.ClassDef) -> list[tuple[ast.Assign, str]]:
        """``self.x = <call>`` in the class's own methods: (statement, the callee's qualified name)."""
        found = []
        for member in klass.body:
            if not isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for statement in walk_statements(member.body):
                if (
                    isinstance(statement, ast.Assign)
                    and isinstance(statement.value, ast.Call)
                    and len(statement.targets) == 1
                    and isinstance(target := statement.targets[0], ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    qualname = self.context.qualname(statement.value.func)
                    if qualname is not None:
                        found.append((statement, qualname))
        return found

    def _check_tracking(self, node: ast.ClassDef, kind: str) -> None:
        """Keras 3 and tf.Module no longer see each other's variables: a tf.Module's
        ``trainable_variables`` leaves out the Keras layers it holds, and a Keras layer does not
        track a raw ``tf.Variable``."""
        if kind == "tf-module":
            # Layers and models built here (not bindings.kind_of's wider KERAS: a pretrained
            # keras.applications base held by a tf.Module is a frozen feature extractor in practice)
            held = [
                ast.unparse(statement.targets[0])
                for statement, qualname in self._self_assignments(node)
                if (found := keras_name(qualname)) is not None
                and (found[1].startswith("layers.") or found[1] in _KERAS_MODEL_FACTORIES)
            ]
            if held:
                names = ", ".join(f"`{name}`" for name in dict.fromkeys(held[:3]))
                self._report_per_file(
                    "module-holds-keras",
                    node,
                    f"tf.Module `{node.name}` holds Keras layers ({names}): Keras 3 layers are no tf.Modules, so "
                    f"`{node.name}(...).trainable_variables` and `.variables` leave their weights out (a tape and "
                    "optimizer over them train nothing); subclass keras.Model or keras.layers.Layer instead",
                )
        elif kind in ("keras-model", "keras-layer"):
            for statement, qualname in self._self_assignments(node):
                if qualname == "tensorflow.Variable":
                    target = ast.unparse(statement.targets[0])
                    # One finding per class: each layer is its own fix (stylegan2 has six such layers in one file).
                    self._report_per_file(
                        f"raw-variable-in-layer:{node.name}",
                        statement,
                        f"`{target} = tf.Variable(...)` in a Keras {kind.split('-')[1]}: Keras 3 does not track a "
                        "tf.Variable, so it is missing from `trainable_variables` and `weights` (fit and an "
                        "optimizer over them never train it; save_weights leaves it out); create it with "
                        "`self.add_weight(...)`",
                        where="class",
                    )

    def _check_keras2_internals(self, node: ast.ClassDef) -> None:
        """``self._get_writer(...)`` in a subclass of Keras' TensorBoard: a private member of the
        Keras 2 class that neither Keras 3's class nor the subclass has (AttributeError)."""
        if len(node.bases) != 1 or "self._" not in self.context.source:
            return
        found = keras_name(self.context.qualname(node.bases[0]))
        base = found[1] if found is not None else ""
        known = KERAS3_PRIVATE.get(base)
        if known is None:
            return
        defined = {m.name for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        defined.update(
            t.id for m in node.body if isinstance(m, ast.Assign) for t in m.targets if isinstance(t, ast.Name)
        )
        reads: list[ast.Attribute] = []
        for inner in walk_nodes(node):
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "setattr":
                return  # names set by setattr cannot be known
            if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == "self":
                if isinstance(inner.ctx, ast.Load):
                    reads.append(inner)
                else:
                    defined.add(inner.attr)
        for read in sorted(reads, key=lambda r: (r.lineno, r.col_offset)):
            name = read.attr
            if name.startswith("_") and not name.startswith("__") and name not in defined and name not in known:
                self._report_per_file(
                    "keras2-internal",
                    read,
                    f"`self.{name}`: Keras 3's {base.split('.')[-1]} has no `{name}` (a Keras 2 internal) and "
                    f"`{node.name}` does not define it, so this raises AttributeError; use the public API "
                    "or keep the state in the subclass",
                )
                return

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if not self.context.uses_tensorflow:
            return
        kind = self.context.class_kind(node)
        self._check_tracking(node, kind)
        self._check_keras2_internals(node)
        if kind != "keras-model":
            return
        for member in node.body:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name in _MODEL_INIT_ATTRIBUTES:
                if any(self.context.dotted(d) in ("property", "cached_property") for d in member.decorator_list):
                    continue  # a property: Keras' assignment goes through it (or fails loudly at once)
                self.report(
                    member,
                    f"method `{member.name}` of a Keras Model: Keras 3's Model.__init__ sets "
                    f"`self.{member.name} = ...` on the instance, which hides the method "
                    f"(`self.{member.name}(...)` raises TypeError: 'NoneType' object is not callable); rename it",
                )

    def _input_shape_is_int(self, node: ast.Call) -> bool:
        """``keras.Input(shape=512)`` / ``Input((1))`` / ``Input(shape=self.z_dim)`` where every
        value the name holds is an int literal: Keras 2 took an int, Keras 3 needs a tuple."""
        func = node.func
        callee = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if callee != "Input" or not self._may_build or not self.context.uses_tensorflow:
            return False
        shape = next((k.value for k in node.keywords if k.arg == "shape"), node.args[0] if node.args else None)
        if shape is None:
            return False
        found = keras_name(self.context.qualname(node.func))
        if found is None or found[1] not in ("Input", "layers.Input"):
            return False
        if _is_int_valued(shape):
            return True
        name = self.context.dotted(shape)
        if name is None:
            return False
        if isinstance(shape, ast.Name):
            # the assignments that reach this use in its own scope decide, when they are all known
            # (cheaper than the bindings index, which a parameter or a module name read in a
            # function still needs)
            reaching, complete = reaching_values(shape.id, shape, self.context.scope.node)
            if complete and reaching:
                return all(_is_int_valued(value) for value in reaching)
        values = self.context.bindings.values(name, node, self.context.scope.node)
        return bool(values) and all(_is_int_valued(value) for value in values)

    def _check_keywords(self, node: ast.Call) -> bool:
        """Keywords Keras 3 refuses, on any call (`ModelCheckpoint(...)` imported by name too):
        ``reduction=Reduction.AUTO`` and a constructor keyword Keras 3 dropped. True when a
        dropped keyword was reported (the call needs nothing more)."""
        for keyword in node.keywords:
            if keyword.arg == "reduction" and self._reduction_auto(keyword.value):
                self._report_reduction_auto(keyword.value)
        if not any(keyword.arg in _REMOVED_KEYWORD_NAMES for keyword in node.keywords):
            return False  # the common case: no qualified name to resolve
        removed = self._removed_keyword(node)
        if removed is not None:
            self.report(removed[1], removed[0])  # at the keyword: in a call over many lines, the line to change
        return removed is not None

    def _check_slash_name(self, node: ast.Call) -> None:
        """``Conv2D(..., name='resample_p6/conv2d')`` (or ``name=f'{name}/bn'``): Keras 2 read the '/' as a name
        scope; Keras 3 refuses it in a layer's or model's name (ValueError "cannot contain character `/`",
        premise test), so the model cannot be built. One finding per file, at the first such name."""
        name = next((k.value for k in node.keywords if k.arg == "name"), None)
        if name is None or not _literal_slash(name):
            return
        found = keras_name(self.context.qualname(node.func) or "")
        if not is_layer_class(node.func, self.context) and (found is None or found[1] != "Input"):
            return
        self._report_per_file(
            "slash-name",
            name,
            f"`name={ast.unparse(name)}`: Keras 3 refuses '/' in a layer's or model's name (ValueError: cannot "
            "contain character `/`), which Keras 2 took as a name scope; use '_' or another separator",
        )

    def _check_true_division(self, node: ast.Call) -> None:
        """``Dense(units / 2)``, ``Embedding(n / 1, d)``, ``fit(..., steps_per_epoch=n / batch)``: a true
        division is a float, which Keras 2 cast and Keras 3 refuses (Dense and Embedding: ValueError
        "expected a positive integer"; fit's steps: TypeError; premise test). Conv and RNN sizes still cast."""
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("fit", "fit_generator", "evaluate", "predict"):
            for keyword in node.keywords:
                if keyword.arg in _STEP_COUNTS and self._float_count(keyword.value):
                    self._report_per_file(
                        "float-steps",
                        keyword,
                        f"`{func.attr}({keyword.arg}={ast.unparse(keyword.value)})` is a float: Keras 3 raises "
                        "TypeError ('float' object cannot be interpreted as an integer); use `//` or int(...)",
                    )
                    return
            return
        found = keras_name(self.context.qualname(func) or "")
        if found is None or not found[1].startswith("layers."):
            return
        layer = found[1].rpartition(".")[2]
        sizes = _INTEGER_SIZES.get(layer, ())
        given = [*zip(sizes, node.args, strict=False), *((k.arg, k.value) for k in node.keywords if k.arg in sizes)]
        for name, value in given:
            if self._float_count(value):
                self._report_per_file(
                    "float-size",
                    value,
                    f"`{layer}({name}={ast.unparse(value)})` is a float: Keras 3 raises ValueError (expected a "
                    "positive integer), where Keras 2 cast it; use `//` or int(...)",
                )
                return

    def _float_count(self, value: ast.AST) -> bool:
        """A true division, or a name every value bound to it before here is one (`steps = n / batch`)."""
        if _true_division(value):
            return True
        if not isinstance(value, ast.Name):
            return False
        if self._divided_names is None:
            self._divided_names = frozenset(
                match.group(1)
                for line in self.context.lines
                if "/" in line and "=" in line and (match := _ASSIGNED_NAME.match(line)) is not None
            )
        if value.id not in self._divided_names:
            return False  # never assigned a division: no binding index to build (most calls pass plain names)
        bound = self.context.bindings.values(value.id, value, self.context.scope.node)
        return bool(bound) and all(_true_division(v) for v in bound)

    def _reduction_auto(self, value: ast.AST | None) -> bool:
        """``tf.keras.losses.Reduction.AUTO`` (or ``Reduction.AUTO`` imported): tf.keras (Keras 3)
        keeps the enum, but its AUTO is "auto", which every Keras 3 loss refuses (ValueError
        "Invalid value for argument `reduction`"). Only where it is given as a reduction:
        comparing with it is harmless."""
        if not (isinstance(value, ast.Attribute) and value.attr == "AUTO"):
            return False
        found = keras_name(self.context.qualname(value) or "")
        return found is not None and found[1] == "losses.Reduction.AUTO"

    def _report_reduction_auto(self, value: ast.AST) -> None:
        self.report(
            value,
            f"`{ast.unparse(value)}` is 'auto', which Keras 3 losses refuse (ValueError); pass "
            "`reduction='sum_over_batch_size'` (what AUTO meant outside a distribution strategy)",
        )

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if not self._may_reduce:
            return
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        pairs = list(zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True))
        pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d is not None]
        for argument, default in pairs:
            if argument.arg == "reduction" and self._reduction_auto(default):
                self._report_reduction_auto(default)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _removed_keyword(self, node: ast.Call) -> tuple[str, ast.keyword] | None:
        """A keyword a Keras 2 constructor took and Keras 3's refuses (TypeError when the object
        is made): ``ModelCheckpoint(period=5)`` (premise test)."""
        found = keras_name(self.context.qualname(node.func) or "")
        if found is None:
            return None
        layer = found[1].startswith("layers.")
        for keyword in node.keywords:
            hint = _REMOVED_KEYWORDS.get((found[1].rpartition(".")[2], keyword.arg or ""))
            if hint is None and layer and found[1].rpartition(".")[2] not in _LAYERS_TAKING.get(keyword.arg or "", ()):
                hint = _REMOVED_LAYER_KEYWORDS.get(keyword.arg or "")
            if hint is not None:
                # layers check their **kwargs themselves; callbacks have none
                error = (
                    "ValueError: Unrecognized keyword arguments" if layer else "TypeError: unexpected keyword argument"
                )
                name = found[1].rpartition(".")[2]
                return f"`{name}({keyword.arg}=...)`: Keras 3 has no `{keyword.arg}` ({error}); {hint}", keyword
        return None

    def _check_by_name(self, node: ast.Call) -> bool:
        """``model.load_weights(path, by_name=...)``: Keras 3 takes ``by_name`` for legacy .h5 / .hdf5 files only
        and raises ValueError for any other file, whatever its value (``by_name=False`` included: premise test).
        Reported where the path is a literal of another kind, or where ``by_name`` is computed (the code expects
        files for which it is False, which Keras 2 read and Keras 3 refuses); ``by_name=True`` on a path this file
        does not show is left alone (Keras 2 read only .h5 by name either)."""
        by_name = keyword_of(node, "by_name")
        assert isinstance(node.func, ast.Attribute)
        if by_name is None or not is_keras_model_expr(node.func.value, self.context):
            return False
        target = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "filepath"), None)
        literals = path_literals(target, self.context) if target is not None else []
        # a path of a format Keras 3 cannot read at all is TFP406's (one finding per cause)
        other = next((path for path in literals if path.endswith((".weights.h5", ".keras", ".weights.json"))), None)
        if other is None and (literals or isinstance(by_name.value, ast.Constant)):
            return False
        why = f"on {other!r}" if other is not None else f"with `by_name={ast.unparse(by_name.value)}` computed per file"
        self.report(
            by_name,
            f"`load_weights(..., by_name=...)` {why}: Keras 3 takes `by_name` for legacy .h5 files only and raises "
            "ValueError for any other file, even with by_name=False; pass it only for .h5 files (or drop it and load "
            "matching .weights.h5 / .keras files)",
        )
        return True

    def _positional_layer_init(self, node: ast.Call) -> bool:
        """``super().__init__(kwargs)`` in a Keras Layer subclass (any positional argument) or a
        Model subclass (one: two are a functional model's inputs and outputs)."""
        receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        if not (isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super"):
            return False
        if not node.args or any(isinstance(a, ast.Starred) for a in node.args):
            return False
        klass = self.context.current_class()
        if klass is None or not klass.bases:
            return False
        # super() is the next class in the MRO: a class of the project in between (FastSpeech's
        # decoder passes `config` to its encoder's own __init__) takes what it declares.
        base = keras_name(self.context.qualname(klass.bases[0]) or "")
        if base is None:
            return False
        if base[1] in ("Sequential", "models.Sequential") and len(node.args) <= 3:
            # Sequential.__init__(layers=None, trainable=True, name=None) takes them positionally
            # (super().__init__([Conv2D(...), ...], name=...) builds and trains on Keras 3)
            return False
        kind = self.context.class_kind(klass)
        return kind == "keras-layer" or (kind == "keras-model" and len(node.args) == 1)

    def _keras_add_weight(self, node: ast.Call) -> bool:
        """``self.add_weight(...)`` in a Keras Layer or Model subclass. Keras 2's add_weight took the name first
        and TF-variable options (experimental_autocast, use_resource ...); Keras 3's takes shape first and
        refuses both."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
            return False
        klass = self.context.current_class()
        return klass is not None and self.context.class_kind(klass) in ("keras-layer", "keras-model")

    def _keras_model(self, receiver: ast.expr, at: ast.Call) -> bool:
        """The receiver holds a Keras model here (positive evidence, not merely unknown)."""
        name = self.context.dotted(receiver)
        if name is None or name == "self":
            return False
        values = self.context.bindings.values(name, at, self.context.scope.node)
        return any(self.context.bindings.kind_of(value) == KERAS for value in values)

    def _keras_predict_classes(self, receiver: ast.expr, at: ast.Call) -> bool:
        """``model.predict_classes(x)`` on what may be a Keras model: not the project's own method
        (a class of this file defining ``predict_classes``), not ``self``, not an instance of a
        class of this file that is no Keras model."""
        if not self.context.uses_tensorflow or self.context.function_defs("predict_classes"):
            return False
        name = self.context.dotted(receiver)
        if name is None or name == "self":
            return False
        kinds = {
            self.context.bindings.kind_of(v) for v in self.context.bindings.values(name, at, self.context.scope.node)
        }
        return not kinds or KERAS in kinds or kinds == {UNKNOWN}

    def _loss_scale_optimizer(self, receiver: ast.expr, at: ast.Call) -> bool:
        """The receiver is a Keras LossScaleOptimizer: built from one here, or the file names the
        class (``isinstance(self.optimizer, LossScaleOptimizer)``) and the receiver is an optimizer."""
        name = self.context.dotted(receiver)
        if name is None or not self.context.uses_tensorflow:
            return False
        for value in self.context.bindings.values(name, at, self.context.scope.node):
            if isinstance(value, ast.Call):
                found = keras_name(self.context.qualname(value.func))
                if found is not None and found[1].endswith("LossScaleOptimizer"):
                    return True
        return "LossScaleOptimizer" in self.context.source and "optimizer" in name.lower()

    def visit_Assign(self, node: ast.Assign) -> None:
        # `model = model.load_weights(path)`: rebinds the model to None in Keras 3
        value = node.value
        if not (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "load_weights"
        ):
            return
        receiver = self.context.dotted(value.func.value)
        if receiver is not None and any(self.context.dotted(target) == receiver for target in node.targets):
            self.report(
                value,
                f"`{receiver} = {receiver}.load_weights(...)`: Keras 3's load_weights returns None, "
                f"so `{receiver}` is None from here on; call it without assigning",
            )

    def _symbolic(self, node: ast.AST) -> bool:
        return is_symbolic(node, self.context, self.context.scope.node)

    def _check_symbolic_op(self, node: ast.Call) -> None:
        """`K.square(z_mean)` / `tf.concat([a, b], -1)` on a layer's output while the functional
        model is built: Keras 3 refuses TensorFlow ops on KerasTensors. One finding per function that builds
        (each builds its own model, a place to change of its own: CycleGAN's generator and discriminator)."""
        if not self._may_build or not node.args or not self._builds_functional_model():
            return
        op = is_tensorflow_op(node, self.context)
        if op is None:
            self._check_helper_of_other_module(node)
            return
        symbolic = first_symbolic_argument(node, self.context, self.context.scope.node)
        if symbolic is None:
            return
        self._report_symbolic(
            node,
            f"`{op}(...)` on a Keras symbolic tensor (`{ast.unparse(symbolic)}`, a layer output): Keras 3 raises "
            "'A KerasTensor cannot be used as input to a TensorFlow function'; use keras.ops "
            "(keras.ops.square) or move the computation into a Layer's call()",
        )

    def _report_symbolic(self, node: ast.AST, message: str) -> None:
        scope = self.context.scope.node
        where = "file" if isinstance(scope, ast.Module) else "function"
        self._report_per_file(f"symbolic-op-{id(scope)}", node, message, where=where)

    def _check_helper_of_other_module(self, node: ast.Call) -> None:
        """`x = blocks.conv_bn(x)` while the model is built, where `conv_bn` in another module of the project
        applies `tf.nn.relu` to its parameter: the op runs on this call's KerasTensor. Reported here, at the
        call that gives it one (the other module on its own cannot know what its callers pass)."""
        found = imported_project_function(self.context, node.func)
        if found is None:
            return
        function, other = found
        arguments = function.args
        positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
        for name in [*positional, *(a.arg for a in arguments.kwonlyargs)]:
            given = passed_argument(node, positional, name)
            if given is None or not symbolic_argument(given, self.context, self.context.scope.node):
                continue
            with assume_symbolic(function, name):
                hit = _op_on_symbolic(function, other)
            if hit is not None:
                op, line = hit
                where = f"{Path(other.path).name}:{line}"
                self._report_symbolic(
                    node,
                    f"`{ast.unparse(node.func)}(...)` gives the Keras symbolic tensor `{ast.unparse(given)}` to "
                    f"`{function.name}` ({where}), whose `{op}(...)` runs on it: Keras 3 raises 'A KerasTensor cannot "
                    "be used as input to a TensorFlow function'; use keras.ops there or wrap the helper in a Layer",
                )
                return

    def _builds_functional_model(self) -> bool:
        scope = self.context.scope.node
        known = self._functional_scopes.get(id(scope))
        if known is None:
            # a text test of the scope's lines (the module: the whole file, already tested)
            start, end = getattr(scope, "lineno", 0), getattr(scope, "end_lineno", 0)
            known = isinstance(scope, ast.Module) or any(
                "Input(" in line for line in self.context.lines[start - 1 : end]
            )
            if not known and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # a block helper (`def conv_block(x): ...`) that the model-building code calls on its tensors
                known = any(
                    symbolic_parameter(a.arg, scope, self.context)
                    for a in (*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs)
                )
            self._functional_scopes[id(scope)] = known
        return known

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        import libcst as cst

        from tfpilot.lint.cst_edits import expression, rename_method

        if "method" in data and isinstance(node, cst.Call):
            return rename_method(node, data["method"])
        if "replacement" in data and isinstance(node, cst.Attribute):
            return expression(data["replacement"]).with_changes(lpar=node.lpar, rpar=node.rpar)
        if "module" in data and isinstance(node, cst.ImportFrom):
            module = expression(data["module"])
            return node.with_changes(module=module)
        return None


def _op_on_symbolic(function: ast.FunctionDef | ast.AsyncFunctionDef, context: FileContext) -> tuple[str, int] | None:
    """The first TensorFlow op in ``function``'s own body (not its nested functions) that takes a value
    ``is_symbolic`` proves a KerasTensor there: (its name as written, its line)."""
    for node in walk_body(function.body):  # not inside its nested functions
        if not isinstance(node, ast.Call) or not node.args:
            continue
        op = is_tensorflow_op(node, context)
        if op is None:
            continue
        if first_symbolic_argument(node, context, function) is not None:
            return op, node.lineno
    return None


# Layer sizes Keras 3 checks are integers (Conv and RNN sizes are cast), by position then keyword.
_INTEGER_SIZES: dict[str, tuple[str, ...]] = {"Dense": ("units",), "Embedding": ("input_dim", "output_dim")}
_STEP_COUNTS = frozenset({"steps_per_epoch", "validation_steps", "steps"})


_ASSIGNED_NAME = re.compile(r"\s*(\w+)\s*=[^=]")


def _true_division(value: ast.AST) -> bool:
    return isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div)


def _literal_slash(value: ast.AST) -> bool:
    """A string literal, or the literal parts of an f-string, containing '/'."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str) and "/" in value.value
    if isinstance(value, ast.JoinedStr):
        return any(isinstance(part, ast.Constant) and "/" in str(part.value) for part in value.values)
    return False
