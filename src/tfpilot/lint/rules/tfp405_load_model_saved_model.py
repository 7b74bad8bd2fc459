"""TFP405: keras load_model() on a SavedModel directory."""

from __future__ import annotations

import ast

from tfpilot.findings import Severity
from tfpilot.lint.apis import is_keras_path
from tfpilot.lint.patterns import keyword, path_literals
from tfpilot.lint.rule import Invalid, Rule

_LOADABLE_SUFFIXES = (".keras", ".h5", ".hdf5", ".zip")


class LoadModelSavedModel(Rule):
    """Keras 3 ``load_model`` reads ``.keras`` and ``.h5`` files only.

    Given a SavedModel directory it raises ValueError ("File format not supported"). Keras 2
    code that reloads its own ``model.save("dir")`` output breaks at load time. A SavedModel is
    reloaded for inference with ``keras.layers.TFSMLayer`` or ``tf.saved_model.load``.
    """

    code = "TFP405"
    name = "load-model-saved-model"
    message = "keras load_model() cannot read a SavedModel directory in Keras 3"
    fix_hint = (
        "Re-save the model as .keras, or load the SavedModel with "
        "keras.layers.TFSMLayer(path, call_endpoint='serving_default') / tf.saved_model.load(path)"
    )
    severity = Severity.ERROR
    category = "saving"
    keras3_only = True
    tokens = ("load_model",)
    calls = frozenset({"load_model"})
    VALID = [
        """
import keras

model = keras.models.load_model("model.keras")
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

model = keras.models.load_model("exported/1")
""",
            line=4,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        if not is_keras_path(self.context.qualname(node.func), "models.load_model", "saving.load_model"):
            return
        target = node.args[0] if node.args else getattr(keyword(node, "filepath"), "value", None)
        for path in path_literals(target, self.context):
            if not path.endswith(_LOADABLE_SUFFIXES):
                self.report(
                    node, f"load_model({path!r}): Keras 3 reads .keras/.h5 files only, not SavedModel directories"
                )
                return
