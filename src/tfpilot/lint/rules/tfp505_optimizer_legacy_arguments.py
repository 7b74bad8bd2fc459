"""TFP505: `lr=` and `decay=` on Keras 3 optimizers."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.lint.apis import keras_name
from tfpilot.lint.patterns import has_keyword
from tfpilot.lint.rule import Invalid, Rule


class OptimizerLegacyArguments(Rule):
    """Keras 3 optimizers reject ``lr=`` and silently ignore ``decay=``.

    ``Adam(lr=1e-3)`` raises "Argument(s) not recognized: {'lr': ...}". Worse, ``decay=1e-4``
    only logs a warning and is ignored, so training runs without the learning-rate decay the
    code asks for. Use ``learning_rate=`` and a ``keras.optimizers.schedules`` schedule.
    """

    code = "TFP505"
    name = "optimizer-legacy-arguments"
    message = "Keras 3 optimizers reject lr= and ignore decay="
    fix_hint = (
        "Rename lr= to learning_rate=; replace decay= with "
        "learning_rate=keras.optimizers.schedules.InverseTimeDecay(...) or another schedule"
    )
    category = "keras 3"
    keras3_only = True
    tokens = ("lr=", "decay=")
    fixable = True
    VALID = [
        """
import keras

schedule = keras.optimizers.schedules.ExponentialDecay(1e-3, decay_steps=1000, decay_rate=0.9)
optimizer = keras.optimizers.Adam(learning_rate=schedule)
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

optimizer = keras.optimizers.Adam(lr=1e-3)
""",
            line=4,
            fixed="""
import keras

optimizer = keras.optimizers.Adam(learning_rate=1e-3)
""",
        ),
        Invalid(
            """
from tensorflow.keras.optimizers import SGD

optimizer = SGD(learning_rate=0.1, decay=1e-4)
""",
            line=4,
        ),
    ]

    def visit_keyword(self, keyword: ast.keyword) -> None:
        if keyword.arg not in ("lr", "decay"):
            return
        call = self.context.parent
        if not isinstance(call, ast.Call):
            return
        found = keras_name(self.context.qualname(call.func))
        if found is None:
            return
        path = found[1]
        if not path.startswith("optimizers.") or path.startswith("optimizers.schedules."):
            return
        if not path.rsplit(".", 1)[-1][:1].isupper():
            return
        if keyword.arg == "lr":
            self.report(
                keyword,
                "`lr=` raises ValueError in Keras 3 optimizers; it is `learning_rate=`",
                fix_data=None if has_keyword(call, "learning_rate") else {"description": "lr= -> learning_rate="},
            )
        else:
            self.report(
                keyword,
                "`decay=` is ignored by Keras 3 optimizers (only a warning): training runs without decay",
            )

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import rename_keyword

        return rename_keyword(node, "learning_rate")
