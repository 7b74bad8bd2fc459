"""TFP107: deprecated tf.function arguments."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.apis import TF_FUNCTION_QUALNAMES
from tfpilot.lint.rule import Invalid, Rule

_RENAMED = {"experimental_relax_shapes": "reduce_retracing", "experimental_compile": "jit_compile"}
# The TensorFlow 2 minor version that introduced each new name: a project pinned below it has only
# the old one (TensorSpeech/TensorFlowTTS pins tensorflow-gpu==2.7.0 and uses experimental_relax_shapes).
_NEW_SINCE = {"reduce_retracing": 9, "jit_compile": 5}


class DeprecatedTfFunctionArguments(Rule):
    """``experimental_relax_shapes`` and ``experimental_compile`` are old names.

    ``experimental_relax_shapes`` became ``reduce_retracing`` and ``experimental_compile``
    became ``jit_compile``. The old names are deprecated (they log warnings and are slated for
    removal), and readers searching the docs for them find nothing current.
    """

    code = "TFP107"
    name = "deprecated-tf-function-argument"
    message = "deprecated tf.function argument"
    fix_hint = "Rename experimental_relax_shapes -> reduce_retracing, experimental_compile -> jit_compile"
    category = "tf.function"
    tokens = ("experimental_relax_shapes", "experimental_compile")
    fixable = True
    VALID = [
        """
import tensorflow as tf

@tf.function(reduce_retracing=True, jit_compile=True)
def step(x):
    return x
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

@tf.function(experimental_relax_shapes=True)
def step(x):
    return x
""",
            line=4,
            fixed="""
import tensorflow as tf

@tf.function(reduce_retracing=True)
def step(x):
    return x
""",
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        if self.context.qualname(node.func) not in TF_FUNCTION_QUALNAMES:
            return
        for keyword in node.keywords:
            new_name = _RENAMED.get(keyword.arg or "")
            if new_name is None:
                continue
            message = f"tf.function(`{keyword.arg}`=...) is deprecated; it is now `{new_name}`"
            newest = self.context.project.newest_tf
            if newest is not None and newest[0] < _NEW_SINCE[new_name]:
                # The rename would break the project on the TensorFlow it pins; TF 2.21 still takes
                # the old name. A note for the day the pin moves, never rewritten by --fix.
                self.report(
                    keyword,
                    f"{message} (since TF 2.{_NEW_SINCE[new_name]}); {newest[1]} pins TF 2.{newest[0]} or older, "
                    "which has only the old name, and TF 2.21 still accepts it: rename it when the pin moves",
                    severity=Severity.INFO,
                )
                continue
            self.report(keyword, message, fix_data={"rename": new_name, "description": f"{keyword.arg} -> {new_name}"})

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import rename_keyword

        return rename_keyword(node, data["rename"])
