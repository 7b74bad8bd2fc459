"""TFP509: imports of Keras 2 code that cannot work next to Keras 3."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.apis import PRIVATE_KERAS
from tfpilot.lint.context import PRIVATE_KERAS_REASON
from tfpilot.lint.rule import Invalid, Rule

# top-level module -> (what it is, why it fails on TF 2.16+ / Keras 3)
_LIBRARIES: dict[str, tuple[str, str]] = {
    PRIVATE_KERAS: (
        "TensorFlow's private, frozen copy of Keras 2",
        "its models are not Keras 3 models: keras.Sequential refuses its layers, compile() refuses a "
        "Keras 3 optimizer and fit() raises AttributeError on TF 2.21; import from `keras` instead",
    ),
    "tensorflow_addons": (
        "TensorFlow Addons, which ended in 2024 (last release 0.23, for TF 2.13-2.15)",
        "on TF 2.16+ its import fails (ModuleNotFoundError: No module named 'keras.src.engine', a Keras 2 "
        "module). Keras 3 has most of it: keras.layers.GroupNormalization (InstanceNormalization is "
        "groups=-1), keras.optimizers.AdamW, keras.losses / keras.metrics, keras.ops for image ops",
    ),
    # Third-party Keras 2 model zoos, each installed from PyPI and run on Keras 3.15 (2026-12-07):
    # classification_models and keras_self_attention do work there and are not listed.
    "keras_resnet": (
        "keras-resnet (last release 0.2.0, 2019), written for Keras 2",
        "on Keras 3 building its ResNets fails (its BatchNormalization subclass reaches Keras 3's build "
        "without an input shape: TypeError); use keras.applications.ResNet50 (or ResNet50V2) instead",
    ),
    # Never released on PyPI; read from keras-team/keras-contrib 3fc5ef7 (the last commit, 2019) and run
    # on Keras 3.15 from that source (2026-12-07): the import works, the first call fails.
    "keras_contrib": (
        "keras-contrib (keras-team's Keras 2 add-ons, archived since 2019, never released on PyPI)",
        "on Keras 3 its layers fail when first called (InstanceNormalization: AttributeError: module "
        "'keras.backend' has no attribute 'int_shape'), and its save_load_utils imports keras.engine, which "
        "Keras 3 does not have; InstanceNormalization is keras.layers.GroupNormalization(groups=-1)",
    ),
    "keras_vggface": (
        "keras-vggface (last release 0.6, 2019), written for Keras 2",
        "on Keras 3 its import fails (ImportError: cannot import name 'layer_utils' from 'keras.utils'); "
        "build the VGG16 / ResNet50 backbone from keras.applications and load the weights by hand",
    ),
}


class Keras2OnlyLibrary(Rule):
    """Keras 2 code imported into a Keras 3 program fails where the two meet.

    ``tensorflow.python.keras`` is TensorFlow's private, frozen copy of Keras 2 (public Keras
    moved out of TensorFlow): a model built from its layers is no Keras 3 model, and on TF 2.21
    its own ``fit()`` fails (``test_lint_tf_premises.py`` runs this). TensorFlow Addons ended in
    2024 with a last release for TF 2.13-2.15; on TF 2.16+ its import stops at a Keras 2 module
    Keras 3 does not have (``keras.src.engine``, checked on the installed Keras). One finding per file
    and library, at its first import; a note in a file that runs on Keras 2 (tf_keras), and not
    reported inside a ``try`` that catches ImportError (an optional dependency).
    """

    code = "TFP509"
    name = "keras2-only-library"
    message = "Keras 2-only library imported; it does not work with Keras 3"
    fix_hint = (
        "Import layers and models from `keras` (Keras 3); replace tensorflow_addons with its Keras 3 "
        "counterparts (GroupNormalization, keras.optimizers.AdamW, ...)"
    )
    severity = Severity.ERROR
    category = "keras 3"
    keras3_only = True
    # `from tensorflow.python import keras` spells the private copy without its full name
    tokens = ("tensorflow.python", *(name for name in _LIBRARIES if name != PRIVATE_KERAS))
    VALID = [
        """
import keras
from keras.layers import Conv2D, GroupNormalization

norm = GroupNormalization(groups=-1)
""",
        """
try:
    import tensorflow_addons as tfa
except ImportError:
    tfa = None
""",
    ]
    INVALID = [
        Invalid(
            """
from tensorflow.python.keras.layers import Conv2D, Input
from tensorflow.python.keras.models import Model
""",
            line=2,
        ),
        Invalid(
            """
import tensorflow as tf
from tensorflow.python import keras

class Block(keras.layers.Layer):
    pass
""",
            line=3,
        ),
        Invalid(
            """
import tensorflow as tf
import tensorflow_addons as tfa

norm = tfa.layers.InstanceNormalization()
""",
            line=3,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._reported: set[str] = set()

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return
        if node.module == "tensorflow.python" and any(alias.name == "keras" for alias in node.names):
            self._check(node, PRIVATE_KERAS)  # `from tensorflow.python import keras`: the private copy, by another path
        else:
            self._check(node, node.module)

    def _check(self, node: ast.stmt, module: str) -> None:
        library = next((name for name in _LIBRARIES if module == name or module.startswith(name + ".")), None)
        if library is None or library in self._reported or self._in_optional_import():
            return
        self._reported.add(library)
        what, why = _LIBRARIES[library]
        # The private copy is itself why the file runs on Keras 2 (FileContext.keras2_reason): that stays an error.
        itself = library == PRIVATE_KERAS and self.context.keras2_reason == PRIVATE_KERAS_REASON
        self.report(node, f"`{module}` is {what}: {why}", severity=self.severity if itself else None)

    def _in_optional_import(self) -> bool:
        """Inside the body of a ``try`` whose handlers catch ImportError (or everything)."""
        for ancestor in self.context.ancestors():
            if isinstance(ancestor, ast.Try):
                for handler in ancestor.handlers:
                    caught = handler.type
                    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
                    if caught is None or any(
                        isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError", "Exception")
                        for n in names
                    ):
                        return True
        return False
