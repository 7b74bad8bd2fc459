"""TFP403: `model.save(path)` without a .keras / .h5 extension."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.apis import is_keras_path
from tfpilot.lint.bindings import KERAS, PLAIN_CLASS, TF_MODULE
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.paths import MODEL_NAME_TAIL, possible_tails
from tfpilot.lint.patterns import has_keyword, is_constant, is_keras_model_expr, keyword, path_literals
from tfpilot.lint.rule import Invalid, Rule

_KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")


class KerasSaveExtension(Rule):
    """Keras 3 ``model.save`` needs a ``.keras`` (or legacy ``.h5``) file name.

    Keras 2 wrote a SavedModel directory for any other path; Keras 3 raises ValueError
    ("Invalid filepath extension for saving"). Code written for Keras 2 that saved
    ``model.save("exported_model")`` stops at the end of training, after the expensive part.
    """

    code = "TFP403"
    name = "keras-save-extension"
    message = "model.save() path without .keras/.h5 extension raises ValueError in Keras 3"
    fix_hint = "Save to 'name.keras' for the Keras format, or call model.export(dir) for a SavedModel"
    severity = Severity.ERROR
    category = "saving"
    keras3_only = True
    tokens = ("save", "ModelCheckpoint")
    calls = frozenset({"save", "save_model", "ModelCheckpoint"})
    VALID = [
        """
import keras


class Actor:
    def __init__(self):
        self.model = keras.Sequential([keras.layers.Dense(1)])

    def save(self, model_dir, version=1):
        self.model.export(f"{model_dir}/actor/{version}")


class Agent:
    def __init__(self):
        self.actor = Actor()

    def save(self, model_dir, version=1):
        self.actor.save(model_dir, version)
""",
        """
import keras

model = keras.Sequential([keras.layers.Dense(1)])
model.save("model.keras")
model.export("serving/1")
""",
        """
import tensorflow as tf

checkpoint = tf.train.Checkpoint(step=tf.Variable(1))
checkpoint.save("ckpt/prefix")
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

best = keras.callbacks.ModelCheckpoint("checkpoints/best_model", save_best_only=True)
""",
            line=4,
        ),
        Invalid(
            """
import keras

model = keras.Sequential([keras.layers.Dense(1)])
model.save("saved_model_dir")
""",
            line=5,
        ),
        Invalid(
            """
import os
import tensorflow as tf

def save(model, root):
    tf.keras.models.save_model(model, os.path.join(root, "model"))
""",
            line=6,
        ),
    ]

    def _holds_own_class(self, receiver: ast.expr, at: ast.AST) -> bool:
        """``self.actor = Actor(...)`` with ``class Actor:`` (no Keras base) defined here: its
        ``save`` is the project's own method (which may call Keras' inside), not Model.save."""
        name = self.context.dotted(receiver)
        if name is None:
            return False
        bindings = self.context.bindings
        values = bindings.values(name, at, self.context.scope.node)
        return bool(values) and all(bindings.kind_of(value) in (PLAIN_CLASS, TF_MODULE) for value in values)

    def _model_in_container(self, node: ast.expr) -> bool:
        """``self.blocks[i]`` where every ``self.blocks[...] = ...`` of the file stores a Keras model
        (a Keras factory, or a function / method of this file that returns one)."""
        if not isinstance(node, ast.Subscript):
            return False
        key = self.context.dotted(node.value)
        if key is None:
            return False
        cache: dict[str, bool] = self.__dict__.setdefault("_containers", {})
        if key not in cache and f"{key}[" not in self.context.source:
            cache[key] = False  # never stored into by subscript: no need to walk the file
        if key not in cache:
            stored = [
                (statement.value, statement)
                for statement in walk_nodes(self.context.tree)
                if isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Subscript)
                and self.context.dotted(statement.targets[0].value) == key
            ]
            cache[key] = bool(stored) and all(self._stores_model(value, at) for value, at in stored)
        return cache[key]

    def _stores_model(self, value: ast.expr, at: ast.stmt) -> bool:
        bindings = self.context.bindings
        if bindings.kind_of(value) == KERAS:
            return True
        func = value.func if isinstance(value, ast.Call) else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            # `self.build_block(...)`: a method of the class holding the assignment
            for klass in walk_nodes(self.context.tree):
                if isinstance(klass, ast.ClassDef) and klass.lineno <= at.lineno <= (klass.end_lineno or klass.lineno):
                    methods = [
                        d
                        for d in klass.body
                        if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == func.attr
                    ]
                    if methods:
                        return bindings.returned_kind(methods[-1], 1) == KERAS
        return False

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        own_class_receiver: ast.expr | None = None
        if has_keyword(node, "save_format"):
            return  # TFP402 reports it
        if isinstance(func, ast.Attribute) and func.attr == "save" and node.args:
            if not is_keras_model_expr(func.value, self.context) and not self._model_in_container(func.value):
                return
            if "keras" not in self.context.source.lower() and "Session" in self.context.source:
                # a TF1 graph program that never names Keras: its `model` is its own object, whose save()
                # wraps a tf.train.Saver (openai/glow's `model.save(logdir + "model_best_loss.ckpt")`)
                return
            target = node.args[0]
            own_class_receiver = func.value
        elif (
            is_keras_path(self.context.qualname(func), "models.save_model", "saving.save_model") and len(node.args) > 1
        ):
            target = node.args[1]
        elif is_keras_path(self.context.qualname(func), "callbacks.ModelCheckpoint"):
            flag = keyword(node, "save_weights_only")
            if flag is not None and not is_constant(flag.value, False):
                return  # weights only (TFP406's), or a flag this file computes
            filepath = (
                node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "filepath"), None)
            )
            literals = path_literals(filepath, self.context)
            for path in literals:
                if not path.endswith(_KERAS_SUFFIXES):
                    self.report(
                        node,
                        f"ModelCheckpoint({path!r}) saves whole models: Keras 3 raises ValueError when the "
                        "callback is built unless the name ends in .keras",
                    )
                    return
            if not literals and filepath is not None:
                # `ModelCheckpoint(os.path.join(root, model_name))` with every caller passing `model.name`
                tails = possible_tails(filepath, self.context)
                if tails and all(t is not None and not t.endswith(_KERAS_SUFFIXES) for t in tails):
                    shown = "the model's own name" if MODEL_NAME_TAIL in tails else f"...{tails[0]!r}"
                    self.report(
                        node,
                        f"ModelCheckpoint(`{ast.unparse(filepath)}`) ({shown}) saves whole models: Keras 3 raises "
                        "ValueError when the callback is built unless the name ends in .keras",
                    )
            return
        else:
            return
        # The receiver's bindings (one walk of the file) are asked only once a path would be reported.
        for path in path_literals(target, self.context):
            if not path.endswith(_KERAS_SUFFIXES):
                if own_class_receiver is None or not self._holds_own_class(own_class_receiver, node):
                    self.report(node, f"saving to {path!r} without a .keras/.h5 extension raises ValueError in Keras 3")
                return
        if isinstance(target, ast.Attribute):
            # `model.save(FLAGS.output)`: the absl / argparse default (lint/paths.py, as TFP406 reads it)
            for tail in possible_tails(target, self.context):
                if tail is not None and not tail.endswith(_KERAS_SUFFIXES):
                    if own_class_receiver is not None and self._holds_own_class(own_class_receiver, node):
                        return
                    shown = "the model's own name" if tail == MODEL_NAME_TAIL else f"default ...{tail!r}"
                    self.report(
                        node,
                        f"saving to `{ast.unparse(target)}` ({shown}) without a .keras/.h5 extension "
                        "raises ValueError in Keras 3",
                    )
                    return
