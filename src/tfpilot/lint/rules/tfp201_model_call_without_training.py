"""TFP201: a model called without `training=` inside a GradientTape block."""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.apis import keras_name
from tfpilot.lint.bindings import KERAS, PLAIN_CLASS, PLAIN_FUNCTION, TF_MODULE, UNKNOWN
from tfpilot.lint.local_modules import imported_class, imported_function
from tfpilot.lint.naming import is_frozen_model_name, is_model_name
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.patterns import (
    has_keyword,
    has_star_kwargs,
    is_constant,
    is_model_call,
    keyword,
    training_flag,
    walk_body,
)
from tfpilot.lint.rule import Invalid, Rule


def _takes_training(function: ast.FunctionDef) -> bool:
    arguments = function.args
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    return "training" in names or arguments.kwarg is not None


def _is_plain_class(klass: ast.ClassDef) -> bool:
    """A class of this file with no base (or only ``object``) whose ``__call__`` takes no
    ``training``: a hand-written model of matmuls, not a Keras object."""
    if any(not (isinstance(base, ast.Name) and base.id == "object") for base in klass.bases) or klass.keywords:
        return False
    calls = [n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name == "__call__"]
    return not any(_takes_training(call) for call in calls)


# Keras layers whose output does not depend on `training` (no dropout, noise or batch statistics).
_INVARIANT_LAYERS = frozenset(
    {
        "Dense",
        "EinsumDense",
        "Embedding",
        "StringLookup",
        "IntegerLookup",
        "Hashing",
        "CategoryEncoding",
        "TextVectorization",
        "Normalization",
        "Rescaling",
        "Conv1D",
        "Conv2D",
        "Conv3D",
        "Conv1DTranspose",
        "Conv2DTranspose",
        "SeparableConv2D",
        "DepthwiseConv2D",
        "Flatten",
        "Reshape",
        "Permute",
        "RepeatVector",
        "MaxPooling1D",
        "MaxPooling2D",
        "MaxPool2D",
        "AveragePooling1D",
        "AveragePooling2D",
        "GlobalAveragePooling1D",
        "GlobalAveragePooling2D",
        "GlobalMaxPooling1D",
        "GlobalMaxPooling2D",
        "UpSampling2D",
        "ZeroPadding2D",
        "Cropping2D",
        "InputLayer",
        "Input",
        "Activation",
        "ReLU",
        "LeakyReLU",
        "Softmax",
        "Concatenate",
        "Add",
        "Multiply",
        "Subtract",
        "Average",
        "Dot",
        "LayerNormalization",
        "Attention",
        "AdditiveAttention",
        "Lambda",
        # the functional forms of the merge layers
        "concatenate",
        "add",
        "multiply",
        "subtract",
        "average",
        "maximum",
        "minimum",
        "dot",
        "LSTM",
        "GRU",
        "SimpleRNN",
        "LSTMCell",
        "GRUCell",
    }
)
_RNN_DROPOUT = ("dropout", "recurrent_dropout")


def _layer_names(calls: list[ast.Call], context: Any) -> set[str] | None:
    """Class names of the Keras layers ``calls`` build; None when one may depend on training."""
    names: set[str] = set()
    for call in calls:
        path = context.keras_layer_path(call.func)
        if path is None:
            continue
        layer = path.rsplit(".", 1)[-1]
        if layer not in _INVARIANT_LAYERS:
            return None
        for item in call.keywords:
            if item.arg in _RNN_DROPOUT and not (isinstance(item.value, ast.Constant) and not item.value.value):
                return None
        names.add(layer)
    return names


def _invariant_set(values: list[Any], context: Any, seen: frozenset[int] = frozenset()) -> set[str] | None:
    """ "Dense, Embedding" when every value is a Keras model built only from layers that ignore
    ``training`` (a Sequential list, a Keras subclass of this file, a functional model whose
    scope builds no other kind of layer); "" when unknown or when one layer depends on it."""
    names: set[str] = set()
    for value in values:
        calls: list[ast.Call]
        if isinstance(value, ast.ClassDef):
            if id(value) in seen:
                continue  # a class that builds itself (`def clone(self): return Net()`)
            seen = seen | {id(value)}
            if context.class_kind(value) not in ("keras-model", "keras-layer"):
                return None
            if any(isinstance(n, ast.Name) and n.id == "training" for n in walk_nodes(value)) or any(
                isinstance(n, ast.keyword) and n.arg == "training" for n in walk_nodes(value)
            ):
                return None  # the class reads the flag itself (a `training` parameter it never reads is no use)
            calls = [n for n in walk_nodes(value) if isinstance(n, ast.Call)]
            # sub-layers that are classes of this file must be invariant too
            for call in calls:
                if isinstance(call.func, ast.Name) and context.class_defs(call.func.id):
                    inner = _invariant_set([context.class_defs(call.func.id)[-1]], context, seen)
                    if inner is None:
                        return None
                    names |= inner
        elif isinstance(value, ast.Call):
            found = keras_name(context.qualname(value.func))
            if found is not None and found[1] in ("Sequential", "models.Sequential"):
                layers = value.args[0] if value.args else None
                if isinstance(layers, ast.Name):
                    # `Sequential(conv_layers)`: the list the name was bound to
                    bound = context.bindings.values(layers.id, value, context.bindings.top_level_of(value))
                    layers = bound[0] if len(bound) == 1 else None
                if not isinstance(layers, ast.List):
                    return None
                if not all(isinstance(e, ast.Call) and keras_name(context.qualname(e.func)) for e in layers.elts):
                    return None
                calls = list(layers.elts)  # type: ignore[arg-type]
            elif found is not None and found[1] in ("Model", "models.Model"):
                # functional: every layer the same scope builds (the whole module at module level)
                scope = context.bindings.top_level_of(value)
                calls = [n for n in walk_nodes(scope) if isinstance(n, ast.Call)]
                if isinstance(scope, ast.Module):
                    # a notebook builds many models at module level: this one's layers are those
                    # built after the model before it
                    previous = max(
                        (
                            c.lineno
                            for c in calls
                            if c.lineno < value.lineno
                            and (keras_name(context.qualname(c.func)) or ("", ""))[1] in _KERAS_FACTORIES
                        ),
                        default=0,
                    )
                    calls = [c for c in calls if previous < c.lineno <= (value.end_lineno or value.lineno)]
                for call in calls:
                    if isinstance(call.func, ast.Name) and context.class_defs(call.func.id):
                        inner = _invariant_set([context.class_defs(call.func.id)[-1]], context, seen)
                        if inner is None:
                            return None  # a custom layer of this file that may depend on training
                        names |= inner
                    elif _factory_method(call, context) is not None:
                        # `x = self.conv_block(64)(x)`: the layers a method of the class builds
                        inner = _invariant_set([call], context, seen)
                        if inner is None:
                            return None
                        names |= inner
            elif isinstance(value.func, ast.Name) and context.class_defs(value.func.id):
                inner = _invariant_set([context.class_defs(value.func.id)[-1]], context, seen)
                if inner is None:
                    return None
                names |= inner
                continue
            elif isinstance(value.func, ast.Name) and imported_class(context, value.func.id) is not None:
                klass, other = imported_class(context, value.func.id)  # type: ignore[misc]
                inner = _invariant_set([klass], other, seen)  # judged in its own file
                if inner is None:
                    return None
                names |= inner
                continue
            elif (isinstance(value.func, ast.Name) and context.function_defs(value.func.id)) or (
                _factory_method(value, context) is not None
            ):
                # `model = build_model()`, `self.model = self.create_model()`: the layers the
                # factory of this file builds
                factory = (
                    context.function_defs(value.func.id)[-1]
                    if isinstance(value.func, ast.Name)
                    else _factory_method(value, context)
                )
                if factory is None or id(factory) in seen:
                    return None
                seen = seen | {id(factory)}
                calls = [n for n in walk_nodes(factory) if isinstance(n, ast.Call)]
                if not any(keras_name(context.qualname(call.func)) for call in calls):
                    return None  # builds nothing Keras can be seen building: unknown
                for call in calls:
                    if (
                        isinstance(call.func, ast.Name)
                        and (context.class_defs(call.func.id) or context.function_defs(call.func.id))
                    ) or (call is not value and _factory_method(call, context) is not None):
                        inner = _invariant_set([call], context, seen)
                        if inner is None:
                            return None
                        names |= inner
            else:
                return None
        else:
            return None
        found_names = _layer_names(calls, context)
        if found_names is None:
            return None
        if not found_names and isinstance(value, ast.ClassDef) and not names:
            found_names = {"TF ops"}  # a Keras subclass of matmuls and activations, no sub-layers
        names |= found_names
    return names if values else None


# Keras layers whose output depends on `training` (dropout, noise, batch statistics, augmentation).
_DEPENDENT_LAYERS = frozenset(
    {
        "Dropout",
        "SpatialDropout1D",
        "SpatialDropout2D",
        "SpatialDropout3D",
        "AlphaDropout",
        "GaussianDropout",
        "GaussianNoise",
        "BatchNormalization",
        "SyncBatchNormalization",
        "RandomFlip",
        "RandomRotation",
        "RandomZoom",
        "RandomCrop",
        "RandomTranslation",
        "RandomContrast",
        "RandomBrightness",
        "RandomHeight",
        "RandomWidth",
    }
)
# keras.applications without BatchNormalization or Dropout
_INVARIANT_APPLICATIONS = frozenset({"VGG16", "VGG19"})


def _reads_training(function: ast.AST) -> bool:
    """``call`` uses its ``training`` flag (reads the name, or passes ``training=`` on)."""
    return any(
        (isinstance(n, ast.Name) and n.id == "training" and isinstance(n.ctx, ast.Load))
        or (isinstance(n, ast.keyword) and n.arg == "training")
        for n in walk_nodes(function)
    )


def _depends_on_training(values: list[Any], context: Any, seen: frozenset[int] = frozenset()) -> bool:
    """Some value is a model the linter resolves to a layer that behaves differently in training
    (Dropout, BatchNormalization, noise, augmentation, an RNN with dropout) or to a Keras class of
    the project whose ``call`` reads ``training``. False when none is seen (or nothing resolves)."""
    for value in values:
        if id(value) in seen:
            continue
        seen = seen | {id(value)}
        if isinstance(value, ast.ClassDef):
            if _class_depends(value, context, seen):
                return True
        elif isinstance(value, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _body_depends(value, context, seen):
                return True
        elif isinstance(value, ast.Call):
            found = keras_name(context.qualname(value.func))
            if found is not None and found[1] in ("Sequential", "models.Sequential"):
                layers: Any = value.args[0] if value.args else None
                if isinstance(layers, ast.Name):
                    bound = context.bindings.values(layers.id, value, context.bindings.top_level_of(value))
                    layers = bound[0] if len(bound) == 1 else None
                if layers is not None and _body_depends(layers, context, seen):
                    return True
            elif found is not None and found[1] in ("Model", "models.Model"):
                scope = context.bindings.top_level_of(value)
                if not isinstance(scope, ast.Module) and _body_depends(scope, context, seen):
                    return True
            elif _call_depends(value, context, seen):
                return True
    return False


def _class_depends(klass: ast.ClassDef, context: Any, seen: frozenset[int]) -> bool:
    if context.class_kind(klass) not in ("keras-model", "keras-layer"):
        return False
    calls = [n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name in ("call", "__call__")]
    if any(_reads_training(call) for call in calls):
        return True
    for base in klass.bases:
        if isinstance(base, ast.Name):
            if context.class_defs(base.id):
                if _depends_on_training([context.class_defs(base.id)[-1]], context, seen):
                    return True
            elif (imported := imported_class(context, base.id)) is not None:
                if _depends_on_training([imported[0]], imported[1], seen):
                    return True
    return _body_depends(klass, context, seen)


def _body_depends(node: ast.AST, context: Any, seen: frozenset[int]) -> bool:
    return any(isinstance(n, ast.Call) and _call_depends(n, context, seen) for n in walk_nodes(node))


def _call_depends(call: ast.Call, context: Any, seen: frozenset[int]) -> bool:
    """One constructor call builds a training-dependent layer (directly or through a class or
    factory of the project)."""
    found = keras_name(context.qualname(call.func))
    if found is None and (alias := context.keras_layer_path(call.func)) is not None:
        found = ("", alias)  # `BatchNormalization = tf.keras.layers.BatchNormalization` in the file
    if found is not None:
        path = found[1]
        last = path.rsplit(".", 1)[-1]
        if path.startswith("layers."):
            if last in _DEPENDENT_LAYERS:
                return True
            return any(
                item.arg in _RNN_DROPOUT and not (isinstance(item.value, ast.Constant) and not item.value.value)
                for item in call.keywords
            )
        if path.startswith("applications."):
            return last not in _INVARIANT_APPLICATIONS and last[:1].isupper()
        return False
    if isinstance(call.func, ast.Name):
        name = call.func.id
        if context.class_defs(name):
            return _depends_on_training([context.class_defs(name)[-1]], context, seen)
        if context.function_defs(name):
            return _depends_on_training([context.function_defs(name)[-1]], context, seen)
        if (imported := imported_class(context, name)) is not None:
            return _depends_on_training([imported[0]], imported[1], seen)
        if (factory := imported_function(context, name)) is not None:
            return _depends_on_training([factory[0]], factory[1], seen)
    method = _factory_method(call, context)
    return method is not None and _depends_on_training([method], context, seen)


def _factory_method(call: ast.Call, context: Any) -> ast.AST | None:
    """``self.create_model()``: the method of the class holding the call, else None."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return None
    line = call.lineno
    classes: list[tuple[ast.ClassDef, dict[str, ast.AST]]] | None = context.__dict__.get("_tfp201_class_methods")
    if classes is None:
        # every class of the file in walk order with its last method of each name, collected once
        classes = [
            (klass, {d.name: d for d in klass.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))})
            for klass in walk_nodes(context.tree)
            if isinstance(klass, ast.ClassDef)
        ]
        context.__dict__["_tfp201_class_methods"] = classes
    for klass, methods in classes:
        if klass.lineno <= line <= (klass.end_lineno or klass.lineno):
            method = methods.get(func.attr)
            if method is not None:
                return method
    return None


def _invariant_layers(values: list[Any], context: Any) -> str:
    """ "Dense, Embedding": the layers of a model whose every layer ignores ``training``; ""
    when unknown, when one layer depends on it, or when no layer is seen at all."""
    names = _invariant_set(values, context)
    return ", ".join(sorted(names)) if names else ""


_VARIABLE_ATTRIBUTES = frozenset({"trainable_variables", "trainable_weights", "variables", "weights"})
_UPDATES = frozenset({"apply_gradients", "minimize", "apply", "assign_sub", "assign_add"})


def _is_test_file(path: str) -> bool:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.startswith("test_") or name.endswith(("_test.py", "_tests.py"))


def _updates_weights(function: ast.AST) -> bool:
    """The function applies an update (an optimizer step or a variable assignment)."""
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _UPDATES
        for node in walk_nodes(function)
    )


# Keras factories whose result certainly accepts `training=` (the fix is only offered for these).
_KERAS_FACTORIES = frozenset(
    {"Sequential", "models.Sequential", "Model", "models.Model", "models.clone_model", "models.load_model"}
)


class ModelCallWithoutTraining(Rule):
    """Inside a GradientTape the model must be called with ``training=True``.

    Without it, Keras runs the call in inference mode: Dropout is off and BatchNormalization
    normalises with its moving statistics and never updates them. The model still trains, but
    it is a different model from the one you designed, and validation numbers drift from
    training numbers for no visible reason. (A frozen teacher or target network is called with
    ``training=False`` on purpose: say so explicitly.)

    Plain ``tf.Module`` objects take no ``training`` argument and frozen feature extractors
    (``base.trainable = False``) are meant to run in inference mode, so neither is flagged.
    ``--fix`` adds ``training=True`` only where the callee is certainly a Keras model (built by
    a Keras factory or a Keras subclass in this file); elsewhere the finding is left to a person.
    """

    code = "TFP201"
    name = "model-call-without-training"
    message = "model called inside a GradientTape block without training="
    fix_hint = "Call the model as model(x, training=True) in the training step (training=False for frozen models)"
    category = "training loop"
    tokens = ("GradientTape",)
    fixable = True
    VALID = [
        """
import tensorflow as tf

def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = tf.reduce_mean(tf.square(logits - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
""",
        """
import tensorflow as tf

def evaluate(model, x):
    return model(x)
""",
        """
import tensorflow as tf

restored_model = tf.saved_model.load("exported/1")
with tf.GradientTape() as tape:
    loss = restored_model(tf.constant(2.0))
""",
        # A tf.Module's __call__ has no `training` parameter.
        """
import tensorflow as tf

class Linear(tf.Module):
    def __init__(self):
        self.w = tf.Variable(1.0)

    def __call__(self, x):
        return self.w * x

model = Linear()
with tf.GradientTape() as tape:
    loss = model(tf.constant(2.0))
""",
        # A frozen feature extractor runs in inference mode on purpose.
        """
import keras
import tensorflow as tf

base_model = keras.applications.MobileNetV2(include_top=False, weights=None)
base_model.trainable = False
head = keras.layers.Dense(10)

def train_step(x, y):
    with tf.GradientTape() as tape:
        features = base_model(x)
        loss = tf.reduce_mean(tf.square(head(features) - y))
    return tape.gradient(loss, head.trainable_variables)
""",
        # `model` is a plain function when the loop runs; the name is rebound to Keras later
        """
import keras
import tensorflow as tf

W = tf.Variable(1.0)

def model(inputs):
    return W * inputs

def training_step(inputs, targets):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(targets - model(inputs)))
    W.assign_sub(0.1 * tape.gradient(loss, W))

for step in range(10):
    training_step(tf.ones(3), tf.zeros(3))

model = keras.Sequential([keras.layers.Dense(1)])
""",
        # the model parameter only ever receives a tf.Module
        """
import tensorflow as tf

class MLP(tf.Module):
    def __init__(self):
        self.w = tf.Variable(1.0)

    def __call__(self, x):
        return self.w * x

@tf.function
def train_step(model, x):
    with tf.GradientTape() as tape:
        loss = model(x)
    return tape.gradient(loss, model.trainable_variables)

mlp_model = MLP()
train_step(mlp_model, tf.constant(2.0))
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        logits = model(x)
        loss = tf.reduce_mean(tf.square(logits - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
""",
            line=6,
        ),
        Invalid(
            """
import keras
import tensorflow as tf

model = keras.Sequential([keras.layers.Dense(1)])

def train_step(optimizer, x, y):
    with tf.GradientTape() as tape:
        logits = model(x)
        loss = tf.reduce_mean(tf.square(logits - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
""",
            line=9,
            fixed="""
import keras
import tensorflow as tf

model = keras.Sequential([keras.layers.Dense(1)])

def train_step(optimizer, x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = tf.reduce_mean(tf.square(logits - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
""",
        ),
        Invalid(
            """
import keras
import tensorflow as tf

class Classifier(keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = self.compute_loss(y=y, y_pred=self(x))
        return {"loss": loss}
""",
            line=9,
        ),
        # a Keras model reaches the step through its parameter: certain, so --fix adds training=
        Invalid(
            """
import keras
import tensorflow as tf

@tf.function
def train_step(net, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(net(x))
    return tape.gradient(loss, net.trainable_variables)

classifier = keras.Sequential([keras.layers.Dense(1)])
train_step(classifier, tf.ones((2, 3)))
""",
            line=8,
            fixed="""
import keras
import tensorflow as tf

@tf.function
def train_step(net, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(net(x, training=True))
    return tape.gradient(loss, net.trainable_variables)

classifier = keras.Sequential([keras.layers.Dense(1)])
train_step(classifier, tf.ones((2, 3)))
""",
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        # What each name (`model`, `self.encoder`) was bound to anywhere in the file: a call is
        # judged in finish(), once every binding is known (the def often precedes the binding).
        self._bindings: dict[str, list[ast.Call]] = {}  # name -> the calls it was assigned from
        self._frozen: set[str] = set()
        # `d.trainable = True` somewhere too: frozen only for a while (a GAN's discriminator is frozen
        # to compile the combined model and unfrozen for its own step), so trained after all
        self._unfrozen: set[str] = set()
        # Per reported call: (callee, for `self(...)`: whether the class is certainly Keras,
        # the call, the function it is in).
        self._callees: list[tuple[str, bool | None, ast.Call, ast.AST, ast.ClassDef | None]] = []
        self._trained: dict[int, set[str]] = {}  # per function: what its tapes differentiate
        self._tapes: dict[int, list[ast.With]] = {}  # per reported call: the tape blocks around it

    def visit_Assign(self, node: ast.Assign) -> None:
        value = node.value
        for target in node.targets:
            name = self.context.dotted(target)
            if name is None:
                continue
            if name.endswith(".trainable") and is_constant(value, False):
                self._frozen.add(name[: -len(".trainable")])  # `base_model.trainable = False`
            elif name.endswith(".trainable") and is_constant(value, True):
                self._unfrozen.add(name[: -len(".trainable")])
            elif isinstance(value, ast.Call):
                self._bindings.setdefault(name, []).append(value)  # judged lazily, in finish()

    def _instance_kind(self, call: ast.Call) -> str:
        flag = keyword(call, "trainable")
        if flag is not None and is_constant(flag.value, False):
            return "frozen"  # hub.KerasLayer(url, trainable=False) and friends
        found = keras_name(self.context.qualname(call.func))
        if found is not None and found[1] in _KERAS_FACTORIES:
            return "keras"
        if found is not None and found[1].startswith("applications."):
            return "keras"
        if isinstance(call.func, ast.Name):
            kind = self.context.class_kind(call.func.id)
            if kind in ("keras-model", "keras-layer"):
                return "keras"
            if kind == "tf-module":
                return "tf-module"
            definitions = self.context.class_defs(call.func.id)
            if definitions and _is_plain_class(definitions[-1]):
                return "plain"
        return "other"

    def _bound_kinds(self, callee: str, call: ast.Call, function: ast.AST) -> set[str]:
        """Kinds of what ``callee`` holds at ``call`` by the binding layer (empty: unknown)."""
        kinds: set[str] = set()
        for value in self.context.bindings.values(callee, call, function):
            if isinstance(value, ast.FunctionDef):
                kinds.add(UNKNOWN if _takes_training(value) else PLAIN_FUNCTION)
            elif isinstance(value, ast.Call) and self._instance_kind(value) == "frozen":
                kinds.add("frozen")
            else:
                kinds.add(self.context.bindings.kind_of(value))
        return set() if UNKNOWN in kinds else kinds

    def _plain_function(self, callee: str) -> bool:
        """``callee`` names only functions defined in this file, none taking ``training``."""
        if "." in callee or callee in self._bindings or self.context.class_defs(callee):
            return False
        definitions = [d for d in self.context.function_defs(callee) if isinstance(d, ast.FunctionDef)]
        return bool(definitions) and not any(_takes_training(d) for d in definitions)

    def visit_Call(self, node: ast.Call) -> None:
        context = self.context
        if not context.tapes or context.tapes[-1].scope is not context.scope:
            return
        if isinstance(node.func, ast.Name) and not is_model_call(node, context):
            self._through_helper(node)
        if not node.args or has_keyword(node, "training") or has_star_kwargs(node):
            return
        if any(item.arg and "training" in item.arg for item in node.keywords):
            return  # `net(x, is_training=True)`: the model's own training flag, passed
        if any(training_flag(argument) is not None for argument in node.args[1:]):
            return  # `generator(z, is_training)`: the flag passed positionally
        if not is_model_call(node, context) and not self._differentiated_here(node.func):
            return
        callee = context.dotted(node.func) or "model"
        keras_self = None
        if callee == "self":
            kind = context.class_kind(context.current_class())
            if kind == "tf-module":
                return
            keras_self = kind in ("keras-model", "keras-layer")
        self._record_tapes(node)
        self._callees.append((callee, keras_self, node, context.scope.node, context.current_class()))
        self.report(
            node,
            f"`{callee}(...)` inside a GradientTape block without `training=`: Dropout and "
            "BatchNormalization run in inference mode",
            fix_data={"description": "training=True added"},
        )

    def _differentiated_here(self, func: ast.expr) -> bool:
        """``self.G(z)`` in a tape whose function also takes ``self.G.trainable_variables``: whatever it is
        called, what the step differentiates and calls is the model being trained (GANs' G and D)."""
        name = self.context.dotted(func)
        if name is None or name == "self" or name in self.context.assigned_calls:
            # Built here from a call (`layer = Dense(2)`, `model = build_model()`): the other checks judge
            # what it is; this one is for what arrives from outside (`self.G = generator`).
            return False
        scope = self.context.scope.node
        cached = self._trained.get(id(scope))
        if cached is None:
            cached = {
                key
                for inner in walk_nodes(scope)
                if isinstance(inner, ast.Attribute)
                and inner.attr in ("trainable_variables", "trainable_weights")
                and (key := self.context.dotted(inner.value)) is not None
            }
            self._trained[id(scope)] = cached
        return name in cached

    def _through_helper(self, node: ast.Call) -> None:
        """``loss_value = loss(model, x, y)`` in the tape, ``y_ = model(x)`` in ``loss``: the
        forward pass one call away (TensorFlow's own custom-training walkthrough has this
        shape). The model call inside the helper is reported, where the fix goes."""
        assert isinstance(node.func, ast.Name)
        helper = self.context.resolve_function(node.func.id, node)
        if not isinstance(helper, ast.FunctionDef) or _takes_training(helper):
            return
        parameters = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
        passed: dict[str, ast.expr] = dict(zip(parameters, node.args, strict=False))
        passed.update({k.arg: k.value for k in node.keywords if k.arg})
        for inner in walk_body(helper.body):
            if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.args):
                continue
            if has_keyword(inner, "training") or has_star_kwargs(inner):
                continue
            if any(item.arg and "training" in item.arg for item in inner.keywords) or any(
                training_flag(argument) is not None for argument in inner.args[1:]
            ):
                continue  # the model's own flag, passed by keyword or position
            name = inner.func.id
            argument = passed.get(name)
            if name in parameters:
                # the helper's parameter holds what the tape passes: a model by name or binding
                if not isinstance(argument, ast.Name) or not (
                    is_model_name(argument.id)
                    or self._bound_kinds(argument.id, node, self.context.scope.node) == {KERAS}
                ):
                    continue
                callee = argument.id
            elif is_model_name(name) and self.context.bindings.kinds(name, node, None) == {KERAS}:
                callee = name  # a module-level Keras model the helper reads
            else:
                continue
            self._record_tapes(node)
            self._callees.append((callee, None, node, self.context.scope.node, None))
            self.report(
                inner,
                f"`{name}(...)` without `training=` runs the forward pass of the GradientTape block at line "
                f"{node.lineno} (through {helper.name}()): Dropout and BatchNormalization run in inference mode",
            )

    def finish(self) -> None:
        kept = []
        test_file = _is_test_file(self.context.path)
        for violation, (callee, keras_self, call, function, klass) in zip(self.violations, self._callees, strict=True):
            if test_file and not _updates_weights(function):
                continue  # a test taking reference gradients (Dropout must stay off to compare)
            bound = self._bound_kinds(callee, call, function) if callee != "self" else set()
            if bound and bound <= {TF_MODULE, PLAIN_FUNCTION, PLAIN_CLASS, "frozen"}:
                continue  # what the name holds here takes no `training` (or is frozen on purpose)
            kinds = {self._instance_kind(call) for call in self._bindings.get(callee, ())}
            if bound == {KERAS}:
                kinds = {"keras"}
            if (
                "tf-module" in kinds
                or "frozen" in kinds
                or "plain" in kinds
                or callee in self._frozen.difference(self._unfrozen)
            ):
                continue  # no `training` parameter, or inference mode on purpose
            if not kinds and self._plain_function(callee):
                continue  # `def model(inputs): ...`: a plain function of tf ops
            # The rewrite is only provably right on a Keras model; a tf.Module or a plain
            # function would raise TypeError on the unexpected keyword.
            certain = keras_self if keras_self is not None else kinds == {"keras"}
            if not certain or is_frozen_model_name(callee):
                violation = dataclasses.replace(violation, fix_data=None)
            values: list[ast.AST] | None = [klass] if callee == "self" and klass is not None else None
            if values is None:
                values = self.context.bindings.values(callee, call, function)
            if self._only_other_models_trained(callee, call, function):
                continue  # scores another model's output (a critic in the actor update): inference is right
            layers = _invariant_layers(values, self.context)
            if layers:
                # right in letter, but nothing in this model behaves differently in training
                violation = dataclasses.replace(
                    violation,
                    severity=Severity.INFO,
                    message=f"{violation.message}; a note here: the model is built from {layers} only, "
                    "which ignore training= (add it before adding Dropout or BatchNormalization)",
                )
            elif not _depends_on_training(values or self._same_name_at_module_level(callee, call), self.context):
                # a warning is earned by a layer that behaves differently in training; here none is seen
                violation = dataclasses.replace(
                    violation,
                    severity=Severity.INFO,
                    message=f"{violation.message}; a note here: no layer of this model that depends on "
                    "training (Dropout, BatchNormalization, ...) could be seen",
                )
            kept.append(violation)
        self.violations = kept

    def _same_name_at_module_level(self, callee: str, call: ast.Call) -> list[ast.AST]:
        """``def grad(model, ...)`` never called in the file: the module's ``model`` is the one a
        tutorial passes (the parameter is named after it)."""
        if "." in callee or callee == "self":
            return []
        return self.context.bindings.values(callee, call, None)

    def _record_tapes(self, node: ast.Call) -> None:
        self._tapes[id(node)] = [tape.node for tape in self.context.tapes if tape.scope is self.context.scope]

    def _only_other_models_trained(self, callee: str, call: ast.Call, function: ast.AST) -> bool:
        """Every ``tape.gradient(loss, sources)`` of ``function`` differentiates the variables of
        named models, and ``callee`` is none of them nor one of their attributes: the call scores
        what the trained model produced (the critic in an actor update, the actor computing the
        TD target's next actions), and inference mode is what it needs."""
        if callee == "self" or isinstance(function, ast.Module):
            return False
        owners: set[str] = set()
        gradients = self._gradient_calls(call, function)
        watched_only = 0
        for node in gradients:
            sources: Any = node.args[1] if len(node.args) > 1 else keyword(node, "sources")
            if isinstance(sources, ast.keyword):
                sources = sources.value
            if sources is not None and self._watched_inputs(node, sources, function):
                watched_only += 1  # `tape.gradient(q, actions)` after `tape.watch(actions)`: no model trains
                continue
            found = self._variable_owners(sources, function, 0) if sources is not None else None
            if not found:
                return False
            owners |= found
        if gradients and watched_only == len(gradients):
            # every gradient is taken with respect to input tensors the tape watches (DDPG's action
            # gradient, a saliency map): no model is trained in this tape, inference is what it needs
            return True
        if not owners or "self" in owners:
            return False
        return not any(callee == owner or callee.startswith(owner + ".") for owner in owners)

    def _watched_inputs(self, gradient: ast.Call, sources: ast.AST, function: ast.AST) -> bool:
        """Every source of ``tape.gradient(target, sources)`` is a tensor that the same tape
        ``watch``-es in ``function`` (input gradients, no variable among them)."""
        tape = gradient.func.value  # type: ignore[attr-defined]
        if not isinstance(tape, ast.Name):
            return False
        parts = list(sources.elts) if isinstance(sources, (ast.List, ast.Tuple)) else [sources]
        # plain names of tensors, none of them bound to a model's variables (`tape.watch(weights)`)
        if not parts or not all(
            isinstance(part, ast.Name) and self._variable_owners(part, function, 0) is None for part in parts
        ):
            return False
        names = [part.id for part in parts]  # type: ignore[attr-defined]
        watched = {
            node.args[0].id
            for node in walk_nodes(function)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "watch"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == tape.id
            and node.args
            and isinstance(node.args[0], ast.Name)
        }
        return all(name in watched for name in names)

    def _gradient_calls(self, call: ast.Call, function: ast.AST) -> list[ast.Call]:
        """The ``tape.gradient(...)`` calls of the tapes around ``call``: on their names, after
        their ``with``, before the name is bound to another tape."""
        withs, gradients = self._tape_nodes(function)
        found: list[ast.Call] = []
        for block in self._tapes.get(id(call), []):
            for item in block.items:
                if not isinstance(item.optional_vars, ast.Name):
                    continue
                name = item.optional_vars.id
                rebound = min(
                    (
                        other.lineno
                        for other in withs
                        if other.lineno > block.lineno
                        and any(
                            isinstance(i.optional_vars, ast.Name) and i.optional_vars.id == name for i in other.items
                        )
                    ),
                    default=None,
                )
                for node in gradients:
                    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
                    if (
                        isinstance(receiver, ast.Name)
                        and receiver.id == name
                        and node.lineno > block.lineno
                        and (rebound is None or node.lineno < rebound)
                    ):
                        found.append(node)
        return found

    def _tape_nodes(self, function: ast.AST) -> tuple[list[ast.With], list[ast.Call]]:
        """The ``with`` blocks and the ``x.gradient(...)`` calls of ``function``, in walk order:
        one walk per function, however many model calls its tapes hold."""
        cache: dict[int, tuple[list[ast.With], list[ast.Call]]] = self.__dict__.setdefault("_tape_nodes_cache", {})
        known = cache.get(id(function))
        if known is None:
            withs: list[ast.With] = []
            gradients: list[ast.Call] = []
            for node in walk_nodes(function):
                if isinstance(node, ast.With):
                    withs.append(node)
                elif (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "gradient"
                ):
                    gradients.append(node)
            known = cache[id(function)] = (withs, gradients)
        return known

    def _variable_owners(self, node: ast.AST, function: ast.AST, depth: int) -> set[str] | None:
        """``a.trainable_variables + b.trainable_variables`` -> {"a", "b"}; None when some source is
        not a named model's variables."""
        if isinstance(node, ast.Attribute) and node.attr in _VARIABLE_ATTRIBUTES:
            owner = self.context.dotted(node.value)
            return {owner} if owner else None
        parts: list[ast.AST]
        if isinstance(node, (ast.List, ast.Tuple)):
            parts = list(node.elts)
        elif isinstance(node, ast.Starred):
            parts = [node.value]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            parts = [node.left, node.right]
        elif isinstance(node, ast.Name) and depth < 3:
            parts = [
                statement.value
                for statement in walk_nodes(function)
                if isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and statement.targets[0].id == node.id
            ]
            depth += 1
        else:
            return None
        if not parts:
            return None
        owners: set[str] = set()
        for part in parts:
            found = self._variable_owners(part, function, depth)
            if found is None:
                return None
            owners |= found
        return owners

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import add_keyword

        return add_keyword(node, "training", "True")
