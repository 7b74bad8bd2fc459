"""TFP606: tf.add_check_numerics_ops."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.lint.apis import TF1_CHECK_NUMERICS, tf1_match
from tfpilot.lint.rule import Invalid, Rule


class AddCheckNumericsOps(Rule):
    """``tf.add_check_numerics_ops`` needs a TF1 graph and a session to run its op.

    TF2's ``tf.debugging.enable_check_numerics()`` instruments every op eagerly and in
    tf.functions and names the op and the Python line that produced the first NaN or Inf.
    It roughly doubles step time, so enable it to replay a failing step, not for whole runs.
    """

    code = "TFP606"
    name = "tf1-add-check-numerics-ops"
    message = "tf.add_check_numerics_ops is TF1-only"
    fix_hint = "Call tf.debugging.enable_check_numerics() once before the step that produces NaN/Inf"
    category = "tf1 -> tf2"
    tokens = ("add_check_numerics_ops",)
    fixable = True
    VALID = [
        """
import tensorflow as tf

tf.debugging.enable_check_numerics()
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

tf.add_check_numerics_ops()
""",
            line=4,
            fixed="""
import tensorflow as tf

tf.debugging.enable_check_numerics()
""",
        ),
        Invalid(
            """
import tensorflow as tf

check_op = tf.add_check_numerics_ops()
""",
            line=4,
        ),
    ]

    def on_reference(self, node: ast.AST, qualname: str) -> None:
        if tf1_match(qualname, TF1_CHECK_NUMERICS) is None:
            return
        parent = self.context.parent
        if not (isinstance(parent, ast.Call) and parent.func is node):
            self.report(node)
            return
        statement = self.context.stack[-3] if len(self.context.stack) > 2 else None
        alias = self.context.local_alias("tensorflow")
        # Only a bare statement is fixed mechanically: code that runs the returned op needs a person.
        unused_result = isinstance(statement, ast.Expr) and not parent.args and not parent.keywords
        self.report(
            parent,
            "tf.add_check_numerics_ops is TF1-only; TF2 has tf.debugging.enable_check_numerics()",
            fix_data={"tf": alias, "description": "-> tf.debugging.enable_check_numerics()"}
            if alias and unused_result
            else None,
        )

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import expression

        return expression(f"{data['tf']}.debugging.enable_check_numerics()")
