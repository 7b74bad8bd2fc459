"""TFP506: tf.random.set_seed without keras.utils.set_random_seed in Keras code."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.lint.apis import is_keras_path, keras_name
from tfpilot.lint.local_modules import imported_class
from tfpilot.lint.naming import is_model_name
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.rule import Invalid, Rule

# Libraries whose `model = lib.make(...)` is no Keras model (or one a TF seed does seed).
_NOT_KERAS_FACTORIES = (
    "tensorflow.",
    "numpy.",
    "tensorflow_hub.",
    "sklearn.",
    "joblib.",
    "pickle.",
    "torch.",
    "xgboost.",
    "lightgbm.",
    "jax.",
)
_KERAS_MODELS = frozenset({"Sequential", "models.Sequential", "Model", "models.Model"})


def _builds_keras(context: Any, name: str) -> bool:
    """``name`` is a class of the project's other modules whose methods build Keras models or
    layers (a model builder the entry point instantiates)."""
    found = imported_class(context, name)
    if found is None:
        return False
    klass, other = found
    for node in walk_nodes(klass):
        if isinstance(node, ast.Call):
            path = keras_name(other.qualname(node.func))
            if path is not None and (path[1].startswith(("layers.", "applications.")) or path[1] in _KERAS_MODELS):
                return True
    return False


class KerasSeed(Rule):
    """``tf.random.set_seed`` alone does not make Keras 3 reproducible.

    Keras 3 layers draw their initializer and dropout seeds from Keras' own seed generator,
    which falls back to Python's ``random`` module; only ``keras.utils.set_random_seed(seed)``
    seeds Python, NumPy and the backend together. With just the TF seed, two runs start from
    different weights.
    """

    code = "TFP506"
    name = "keras-seed"
    message = "tf.random.set_seed alone does not seed Keras 3 initializers and dropout"
    fix_hint = "Call keras.utils.set_random_seed(seed): it seeds Python, NumPy and TensorFlow together"
    category = "keras 3"
    keras3_only = True
    tokens = ("set_seed",)
    # every call: the Keras constructions after the seed decide whether it matters
    fixable = True
    VALID = [
        """
import keras

keras.utils.set_random_seed(42)
model = keras.Sequential([keras.layers.Dense(1)])
""",
        """
import tensorflow as tf

tf.random.set_seed(0)
noise = tf.random.normal([3])
""",
    ]
    INVALID = [
        Invalid(
            """
import keras
import tensorflow as tf

tf.random.set_seed(42)
model = keras.Sequential([keras.layers.Dense(1)])
""",
            line=5,
            fixed="""
import keras
import tensorflow as tf

keras.utils.set_random_seed(42)
model = keras.Sequential([keras.layers.Dense(1)])
""",
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._tf_seeds: list[ast.Call] = []
        self._keras_seeded = False
        self._uses_keras = False
        self._keras_lines: list[int] = []  # module-level Keras constructions
        self._keras_in_functions = False

    def visit_Call(self, node: ast.Call) -> None:
        qualname = self.context.qualname(node.func)
        if qualname == "tensorflow.random.set_seed":
            self._tf_seeds.append(node)
        elif is_keras_path(qualname, "utils.set_random_seed"):
            self._keras_seeded = True
        elif self._builds_keras_state(node, qualname):
            # what the seed is for: weights and dropout masks Keras draws from its own generator
            if len(self.context.scopes) > 1:
                self._keras_in_functions = True
            else:
                self._keras_lines.append(node.lineno)

    def _builds_keras_state(self, node: ast.Call, qualname: str | None) -> bool:
        found = keras_name(qualname)
        if found is not None:
            return found[1].startswith(("layers.", "initializers.", "applications.")) or found[1] in _KERAS_MODELS
        func = node.func
        if isinstance(func, ast.Name) and self.context.class_kind(func.id) in ("keras-model", "keras-layer"):
            return True
        if (
            isinstance(func, ast.Name)
            and func.id in self.context.local_imports
            and _builds_keras(self.context, func.id)
        ):
            self._uses_keras = (
                True  # `ModelBuilder(params)`: a class of the project's other modules builds Keras models
            )
            return True
        # `model = ub.models.wide_resnet(...)`: a model factory of another module (its Keras
        # initializers draw from Keras' generator just the same)
        parent = self.context.parent
        return (
            isinstance(parent, ast.Assign)
            and parent.value is node
            and any(isinstance(t, ast.Name) and is_model_name(t.id) for t in parent.targets)
            and not (qualname or "").startswith(_NOT_KERAS_FACTORIES)
        )

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        if qualname.startswith(("keras.", "tensorflow.keras.")) or qualname in ("keras", "tensorflow.keras"):
            self._uses_keras = True

    def finish(self) -> None:
        if self._keras_seeded or not self._uses_keras:
            return
        tops = {value.split(".")[0] for value in self.context.imports.values()}
        if tops & {"jax", "flax", "torch"}:
            return  # the model is JAX or PyTorch; TF (and its seed) only feeds tf.data
            return
        keras_alias = self.context.local_alias("keras") or self.context.local_alias("tensorflow.keras")
        if keras_alias is None:
            tf_alias = self.context.local_alias("tensorflow")
            keras_alias = f"{tf_alias}.keras" if tf_alias else None
        # one cause, one finding: the file never seeds Keras; its first tf seed is where to fix it
        # a seed matters to Keras only if Keras builds weights or dropout after it; a seed that
        # only feeds tf.data shuffles or tf.random ops is what tf.random.set_seed is for
        seeds = [
            call
            for call in self._tf_seeds
            if self._keras_in_functions or any(line > call.lineno for line in self._keras_lines)
        ]
        for call in seeds[:1]:
            more = len(seeds) - 1
            self.report(
                call,
                f"{self.message} (and {more} more tf.random.set_seed call(s) in this file)" if more else None,
                fix_data={"keras": keras_alias, "description": "tf.random.set_seed -> keras.utils.set_random_seed"}
                if keras_alias and len(call.args) == 1 and not call.keywords
                else None,
            )

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import expression

        return node.with_changes(func=expression(f"{data['keras']}.utils.set_random_seed"))
