"""TFP206: `from_logits=True` on a model whose last layer already applies softmax."""

from __future__ import annotations

import ast
import re
from typing import Any, TypeVar

from tfpilot.findings import Severity
from tfpilot.lint.apis import keras_name
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.patterns import is_constant, keyword, string_value, walk_body
from tfpilot.lint.rule import Invalid, Rule

_PROBABILITY_ACTIVATIONS = frozenset({"softmax", "sigmoid"})
# a probability layer or activation anywhere in the file: only then is following bindings worth it
_PROBABILITY_TEXT = re.compile(r"""['"](?:softmax|sigmoid)['"]|Softmax\(|\.(?:softmax|sigmoid)\b""")
# Every finding needs a probability output, and each kind the rule recognises names softmax or
# sigmoid in this file's text (`Softmax()`, `activation="softmax"`, `tf.nn.sigmoid`, an import of
# `softmax`); `sparse_softmax_cross_entropy_with_logits` is not one.
_PROBABILITY_WORD = re.compile(r"(?:softmax|sigmoid)(?![A-Za-z0-9_])|Softmax")


def _names_probability(source: str) -> bool:
    # the word's start is checked by hand: a leading lookbehind would make the regex scan 20x slower
    for match in _PROBABILITY_WORD.finditer(source):
        start = match.start()
        if match.group() == "Softmax" or start == 0:
            return True
        before = source[start - 1]
        if not (before.isalnum() or before == "_"):
            return True
    return False


_T = TypeVar("_T")


class SoftmaxWithFromLogits(Rule):
    """A loss with ``from_logits=True`` on softmax outputs applies softmax twice.

    The loss expects raw scores; given probabilities it squashes them again, so gradients are
    tiny and training plateaus early at a worse accuracy, with no error anywhere. Either end
    the model with a linear layer (logits) or keep the softmax and use ``from_logits=False``.
    """

    code = "TFP206"
    name = "softmax-with-from-logits"
    message = "from_logits=True on a model that already ends in softmax/sigmoid"
    fix_hint = "Drop the final softmax (output logits) or set from_logits=False"
    severity = Severity.ERROR
    category = "training loop"
    tokens = ("from_logits",)
    requires = _names_probability
    VALID = [
        # The softmax belongs to an inference wrapper built after training, not the trained model.
        """
import keras

model = keras.Sequential([keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x_train, y_train, epochs=5)
probability_model = keras.Sequential([model, keras.layers.Softmax()])
predictions = probability_model.predict(x_test)
""",
        # Each function's `model` is its own variable.
        """
import keras


def build_classifier():
    model = keras.Sequential([keras.layers.Dense(10, activation="softmax")])
    model.compile(loss="sparse_categorical_crossentropy")
    return model


def build_scorer():
    model = keras.Sequential([keras.layers.Dense(10)])
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
""",
        # A loss that is never compiled with, nor applied to, the softmax model.
        """
import tensorflow as tf

inputs = tf.keras.Input((4,))
outputs = tf.keras.layers.Dense(3, activation="softmax")(inputs)
model = tf.keras.Model(inputs, outputs)
loss_fn = tf.keras.losses.CategoricalCrossentropy(from_logits=True)
""",
        """
import keras

model = keras.Sequential([keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
""",
        """
import keras

model = keras.Sequential([keras.layers.Dense(10, activation="softmax")])
model.compile(loss=keras.losses.SparseCategoricalCrossentropy())
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

model = keras.Sequential([keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10, activation="softmax")])
model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
""",
            line=5,
        ),
        Invalid(
            """
import tensorflow as tf

inputs = tf.keras.Input((4,))
outputs = tf.keras.layers.Dense(3, activation="softmax")(inputs)
model = tf.keras.Model(inputs, outputs)
loss_fn = tf.keras.losses.CategoricalCrossentropy(from_logits=True)
model.compile(optimizer="adam", loss=loss_fn)
""",
            line=7,
        ),
        Invalid(
            """
import keras
import tensorflow as tf

model = keras.Sequential([keras.layers.Dense(10), keras.layers.Softmax()])
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        predictions = model(x, training=True)
        loss = loss_fn(y, predictions)
    return tape.gradient(loss, model.trainable_variables)
""",
            line=6,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        # (scope key, variable) -> line of the softmax/sigmoid that ends the model bound to it.
        self._softmax_models: dict[tuple[int, str], int] = {}
        # Names bound to a probability output: `outputs = Dense(3, activation="softmax")(x)`.
        self._probability_names: dict[tuple[int, str], int] = {}
        # Names bound to what a softmax model returned: `predictions = model(x)` -> softmax line.
        self._softmax_outputs: dict[tuple[int, str], int] = {}
        # Names bound to a loss object built with from_logits=True -> that keyword.
        self._logit_losses: dict[tuple[int, str], ast.keyword] = {}
        # from_logits=True keyword -> the loss constructor holding it (where a finding points)
        self._flag_calls: dict[int, ast.Call] = {}
        self._all_definitions: list[ast.AST] | None = None
        self._has_probability = _PROBABILITY_TEXT.search(context.source) is not None

    # --- bindings: each name lives in its function (or `self.x` in its class), latest wins ------

    def _key(self, name: str) -> tuple[int, str]:
        if name.startswith("self."):
            klass = self.context.current_class()
            return id(klass) if klass is not None else 0, name
        return id(self.context.scope.node), name

    def _lookup(self, table: dict[tuple[int, str], _T], name: str | None) -> _T | None:
        """The binding of ``name`` in the current scope, else the module's (a global)."""
        if name is None or not table:
            return None
        key = self._key(name)
        if key in table:
            return table[key]
        found = table.get((id(self.context.tree), name))
        if found is None or name.startswith("self."):
            return None
        scope = self.context.scope
        if scope.node is not self.context.tree and name.split(".")[0] in scope.local_names():
            return None  # a local of this function, bound to something else (or not yet)
        return found

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            name = self.context.dotted(target)
            if name is None:
                continue
            key = self._key(name)
            # Rebinding a name forgets what it meant before: an inference wrapper assigned later
            # never changes the model that an earlier compile call trained.
            for table in (self._softmax_models, self._probability_names, self._softmax_outputs, self._logit_losses):
                if table:
                    table.pop(key, None)
            value = node.value
            if not isinstance(value, ast.Call):
                continue
            softmax_line = self._model_softmax_line(value)
            if softmax_line is None and self._has_probability:
                softmax_line = self._factory_softmax_line(value)
            if softmax_line is not None:
                self._softmax_models[key] = softmax_line
                continue
            probability = self._probability_line(value)
            if probability is not None:
                self._probability_names[key] = probability
                continue
            flag = self._logits_flag(value)
            if flag is not None:
                self._logit_losses[key] = flag
                continue
            model_line = self._lookup(self._softmax_models, self.context.dotted(value.func))
            if model_line is not None:
                self._softmax_outputs[key] = model_line

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute):
            self._check_application(node)
            return
        attr = func.attr
        if attr != "add" and attr != "compile":
            self._check_application(node)
            return
        receiver = self.context.dotted(func.value)
        if attr == "add" and receiver is not None and node.args:
            # `model.add(layer)`: the last layer added decides what the model outputs.
            line = self._layer_probability_line(node.args[0])
            if line is not None:
                self._softmax_models[self._key(receiver)] = line
            else:
                self._softmax_models.pop(self._key(receiver), None)
            return
        if attr == "compile":
            model_line = self._lookup(self._softmax_models, receiver)
            if model_line is None:
                return
            loss = node.args[1] if len(node.args) > 1 else getattr(keyword(node, "loss"), "value", None)
            flag = self._loss_flag(loss)
            if flag is not None:
                self._flag(flag, model_line, f"`{receiver}` is compiled with it on line {node.lineno}")
            return
        self._check_application(node)

    def _check_application(self, node: ast.Call) -> None:
        """`loss_fn(y, model(x))` or `loss_fn(y, predictions)` with predictions from the model."""
        # the predictions first: most calls have none, and then nothing else needs looking up
        predictions = node.args[1] if len(node.args) > 1 else getattr(keyword(node, "y_pred"), "value", None)
        if predictions is None:
            return
        flag = self._loss_flag(node.func) if not isinstance(node.func, ast.Call) else self._logits_flag(node.func)
        if flag is None:
            direct = keyword(node, "from_logits")
            if direct is None or not is_constant(direct.value, True):
                return
            found = keras_name(self.context.qualname(node.func))
            if found is None or not found[1].startswith("losses."):
                return
            flag = direct  # keras.losses.sparse_categorical_crossentropy(y, p, from_logits=True)
            self._flag_calls[id(flag)] = node
        if isinstance(predictions, ast.Call):
            model_line = self._lookup(self._softmax_models, self.context.dotted(predictions.func))
        else:
            model_line = self._lookup(self._softmax_outputs, self.context.dotted(predictions))
        if model_line is None and self._has_probability:
            model_line = self._bound_softmax_output(predictions, node)
        if model_line is not None:
            self._flag(flag, model_line, f"it is applied to the model's output on line {node.lineno}")

    # --- through the binding layer: models made by factories, outputs passed to helpers ----------

    def _bound_softmax_output(self, predictions: ast.expr, at: ast.AST) -> int | None:
        """`ce(actions, logits)` in a helper whose every caller passes `self.model(states)`, with
        `self.model = self.create_model()` ending in softmax: the softmax line, else None.
        Every value the name may hold must be such an output, so a helper also fed logits is left
        alone."""
        if isinstance(predictions, ast.Call):
            values: list[ast.AST] = [predictions]
        else:
            name = self.context.dotted(predictions)
            if name is None:
                return None
            values = self.context.bindings.values(name, at, self.context.scope.node)
        lines: list[int | None] = []
        for value in values:
            if not isinstance(value, ast.Call) or value.args == [] and not value.keywords:
                return None
            lines.append(self._softmax_model_line(value.func, value))
        return lines[0] if lines and all(line is not None for line in lines) and len(set(lines)) == 1 else None

    def _softmax_model_line(self, model: ast.expr, at: ast.AST) -> int | None:
        """The softmax line of the model every binding of ``model`` holds, else None."""
        name = self.context.dotted(model)
        if name is None:
            return None
        known = self._lookup(self._softmax_models, name)
        if known is not None:
            return known
        owner = self._function_holding(at)
        values = self.context.bindings.values(name, at, owner)
        lines = [self._built_softmax_line(v, 0) if isinstance(v, ast.Call) else None for v in values]
        return lines[0] if lines and all(line is not None for line in lines) else None

    def _built_softmax_line(self, call: ast.Call, depth: int) -> int | None:
        """A Keras Sequential / Model built here, or a factory of this file returning one."""
        line = self._model_softmax_line(call)
        return line if line is not None else self._factory_softmax_line(call, depth)

    def _factory_softmax_line(self, call: ast.Call, depth: int = 0) -> int | None:
        """`build_model()` / `self.create_model()` of this file whose every return is a model
        ending in softmax: that line, else None."""
        if depth > 3:
            return None
        definition = self._factory_definition(call)
        if definition is None:
            return None
        lines: list[int | None] = []
        for node in walk_body(definition.body):
            if not isinstance(node, ast.Return) or node.value is None:
                continue
            value = node.value
            if isinstance(value, ast.Call):
                lines.append(self._built_softmax_line(value, depth + 1))
            elif isinstance(value, ast.Name):
                bound = self.context.bindings.values(value.id, value, definition)
                found = [self._built_softmax_line(v, depth + 1) if isinstance(v, ast.Call) else None for v in bound]
                lines.append(found[-1] if found and all(line is not None for line in found) else None)
            else:
                lines.append(None)
        return lines[0] if lines and all(line is not None for line in lines) else None

    def _factory_definition(self, call: ast.Call) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        func = call.func
        if isinstance(func, ast.Name):
            found = [
                d
                for d in self.context.tree.body
                if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == func.id
            ]
            return found[-1] if found else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            klass = self.context.current_class() if self.context.stack else None
            if klass is None or not (klass.lineno <= call.lineno <= (klass.end_lineno or 0)):
                klass = self._class_holding(call)
            if klass is None:
                return None
            methods = [d for d in klass.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))]
            found = [d for d in methods if d.name == func.attr]
            return found[-1] if found else None
        return None

    def _definitions(self) -> list[ast.AST]:
        """Every class and function of the file, in walk order (collected once)."""
        if self._all_definitions is None:
            self._all_definitions = [
                n
                for n in walk_nodes(self.context.tree)
                if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            ]
        return self._all_definitions

    def _class_holding(self, node: ast.AST) -> ast.ClassDef | None:
        line = getattr(node, "lineno", 0)
        holding = None
        for candidate in self._definitions():
            if isinstance(candidate, ast.ClassDef) and candidate.lineno <= line <= (candidate.end_lineno or 0):
                holding = candidate
        return holding

    def _function_holding(self, node: ast.AST) -> ast.AST | None:
        line = getattr(node, "lineno", 0)
        holding: ast.AST | None = None
        for candidate in self._definitions():
            if isinstance(candidate, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                candidate.lineno < line <= (candidate.end_lineno or 0)
            ):
                if holding is None or candidate.lineno > getattr(holding, "lineno", 0):
                    holding = candidate
        return holding

    def _flag(self, flag: ast.keyword, softmax_line: int, link: str) -> None:
        self.report(
            self._flag_calls.get(id(flag), flag),
            f"from_logits=True but {link}, and that model's last layer (line {softmax_line}) already "
            "applies softmax/sigmoid: the loss squashes probabilities a second time",
        )

    # --- what an expression is ---------------------------------------------------------------

    def _loss_flag(self, loss: ast.AST | None) -> ast.keyword | None:
        """The from_logits=True keyword of a loss given inline or through a name bound to it."""
        if isinstance(loss, ast.Call):
            return self._logits_flag(loss)
        if not self._logit_losses:
            return None
        return self._lookup(self._logit_losses, self.context.dotted(loss))

    def _logits_flag(self, call: ast.Call) -> ast.keyword | None:
        flag = keyword(call, "from_logits")
        if flag is None or not is_constant(flag.value, True):
            return None
        found = keras_name(self.context.qualname(call.func))
        if found is None or not found[1].startswith("losses."):
            return None
        self._flag_calls[id(flag)] = call
        return flag

    def _model_softmax_line(self, call: ast.Call) -> int | None:
        """Line of the probability layer that ends a Sequential / functional Model built here."""
        found = keras_name(self.context.qualname(call.func))
        if found is None:
            return None
        path = found[1]
        if path in ("Sequential", "models.Sequential"):
            layers = node_list(call.args[0] if call.args else getattr(keyword(call, "layers"), "value", None))
            return self._layer_probability_line(layers[-1]) if layers else None
        if path in ("Model", "models.Model"):
            outputs = call.args[1] if len(call.args) > 1 else getattr(keyword(call, "outputs"), "value", None)
            if isinstance(outputs, ast.Call):
                return self._probability_line(outputs)
            found_line = self._lookup(self._probability_names, self.context.dotted(outputs))
            if found_line is None and isinstance(outputs, ast.Name) and self._has_probability:
                found_line = self._output_line(outputs, call)
            return found_line
        return None

    def _output_line(self, outputs: ast.Name, at: ast.Call) -> int | None:
        """``Model(img, validity)`` with ``validity = model(img)`` a few lines up in the same
        factory and ``model`` a Sequential whose last ``add`` is a sigmoid/softmax layer (the
        wrapper a GAN's ``build_discriminator`` returns): that layer's line, read from the bindings
        (the walk has not reached the factory when a loss helper above it asks)."""
        owner = self._function_holding(at)
        if owner is None:
            return None
        values = self.context.bindings.values(outputs.id, at, owner)
        if len(values) != 1 or not isinstance(values[0], ast.Call):
            return None
        value = values[0]
        line = self._probability_line(value)
        if line is not None or not isinstance(value.func, ast.Name):
            return line
        models = self.context.bindings.values(value.func.id, value, owner)
        if len(models) != 1 or not isinstance(models[0], ast.Call):
            return None
        model = models[0]
        found = keras_name(self.context.qualname(model.func))
        if found is None or found[1] not in ("Sequential", "models.Sequential"):
            return None
        if model.args or model.keywords:
            return self._model_softmax_line(model)
        adds = [
            node
            for node in walk_nodes(owner)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == value.func.id
            and node.args
            and node.lineno < value.lineno
        ]
        if not adds:
            return None
        last = max(adds, key=lambda node: (node.lineno, node.col_offset))
        return self._layer_probability_line(last.args[0])

    def _probability_line(self, call: ast.Call) -> int | None:
        """`Dense(3, activation="softmax")(x)`, `Softmax()(x)` or `tf.nn.softmax(x)`."""
        if isinstance(call.func, ast.Call):
            return self._layer_probability_line(call.func)
        qualname = self.context.qualname(call.func) or ""
        if qualname.rsplit(".", 1)[-1] in _PROBABILITY_ACTIVATIONS and (
            qualname.startswith(("tensorflow.nn.", "tensorflow.math.")) or ".activations." in qualname
        ):
            return call.lineno
        return None

    def _layer_probability_line(self, layer: ast.AST) -> int | None:
        if isinstance(layer, ast.Call) and self._is_probability_layer(layer):
            return layer.lineno
        return None

    def _is_probability_layer(self, call: ast.Call) -> bool:
        found = keras_name(self.context.qualname(call.func))
        if found is None:
            return False
        layer = found[1].rsplit(".", 1)[-1]
        if layer == "Softmax":
            return True
        activation = keyword(call, "activation")
        if activation is not None:
            return string_value(activation.value) in _PROBABILITY_ACTIVATIONS
        if layer == "Activation" and call.args:
            return string_value(call.args[0]) in _PROBABILITY_ACTIVATIONS
        if layer == "Dense" and len(call.args) > 1:
            return string_value(call.args[1]) in _PROBABILITY_ACTIVATIONS
        return False


def node_list(node: ast.AST | None) -> list[ast.expr]:
    return list(node.elts) if isinstance(node, (ast.List, ast.Tuple)) else []
