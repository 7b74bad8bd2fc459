"""TFP504: Keras 2 APIs that Keras 3 removed."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.apis import KERAS_REMOVED_METHODS, find_keras_removal, keras_name
from tfpilot.lint.rule import Invalid, Rule


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
    tokens = ("keras", "_generator")
    calls = frozenset(KERAS_REMOVED_METHODS)
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
        if node.level or not module:
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
            found = keras_name(alias.name)
            if found is not None and find_keras_removal(*found) is not None:
                entry = find_keras_removal(*found)
                self.report(node, f"`{alias.name}` was removed in Keras 3: {entry.hint}")  # type: ignore[union-attr]
                return

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in KERAS_REMOVED_METHODS:
            new = KERAS_REMOVED_METHODS[func.attr]
            self.report(
                node,
                f"`.{func.attr}()` was removed in Keras 3; `.{new}()` accepts generators and datasets",
                fix_data={"method": new, "description": f".{func.attr}() -> .{new}()"},
            )

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
