"""TFP512: a Keras 2 optimizer's positional `name`, which Keras 3 takes as `weight_decay`."""

from __future__ import annotations

import ast

from tfpilot.lint.apis import keras_name
from tfpilot.lint.rule import Invalid, Rule

# Keras 2's position of `name` in each optimizer's signature; Keras 3 put `weight_decay` there
# (test_lint_tf_premises.py reads the installed signatures).
NAME_POSITION = {
    "SGD": 3,
    "Adagrad": 3,
    "Adadelta": 3,
    "Adamax": 4,
    "Nadam": 4,
    "Adam": 5,
    "RMSprop": 5,
}


class OptimizerPositionalName(Rule):
    """``Adam(lr, beta_1, beta_2, epsilon, amsgrad, "Adam")``: Keras 3 reads the name as weight decay.

    Keras 2's optimizers took ``name`` right after their hyperparameters; Keras 3 put
    ``weight_decay`` in that place. The string is accepted when the optimizer is made and fails
    at the first update (UnimplementedError casting it to a float), far from the call that caused
    it (TensorFlowTTS's AdamWeightDecay passes its name that way to ``super().__init__``). Reported
    where a string sits at Keras 2's name position of a Keras optimizer's constructor, called
    directly or through ``super().__init__`` of a subclass.
    """

    code = "TFP512"
    name = "optimizer-positional-name"
    message = "a positional optimizer name lands in Keras 3's weight_decay"
    fix_hint = "Pass the name by keyword: name='Adam' (and weight_decay=... by keyword where one is meant)"
    category = "keras 3"
    keras3_only = True
    tokens = ("optimizers",)
    VALID = [
        """
import keras

optimizer = keras.optimizers.Adam(0.001, 0.9, 0.999, 1e-7, False, 0.004, name="adam")
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

optimizer = keras.optimizers.Adam(0.001, 0.9, 0.999, 1e-7, False, "adam")
""",
            line=4,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        kind = self._optimizer_class(node)
        if kind is None:
            return
        position = NAME_POSITION[kind]
        if len(node.args) <= position:
            return
        argument = node.args[position]
        if any(isinstance(arg, ast.Starred) for arg in node.args[: position + 1]):
            return
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str) or self._is_name_param(argument):
            self.report(
                node,
                f"`{ast.unparse(argument)}` is argument {position + 1} of {kind}: Keras 2's `name`, Keras 3's "
                "`weight_decay` (the string fails at the first update); pass it as name=...",
            )

    def _optimizer_class(self, node: ast.Call) -> str | None:
        found = keras_name(self.context.qualname(node.func))
        if found is not None:
            short = found[1].rsplit(".", 1)[-1]
            return short if found[1].startswith("optimizers.") and short in NAME_POSITION else None
        # super().__init__(...) in a subclass of a Keras optimizer
        func = node.func
        if not (
            isinstance(func, ast.Attribute)
            and func.attr == "__init__"
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "super"
        ):
            return None
        klass = self.context.current_class()
        for base in klass.bases if klass is not None else []:
            found = keras_name(self.context.qualname(base))
            if found is not None and found[1].startswith("optimizers."):
                short = found[1].rsplit(".", 1)[-1]
                if short in NAME_POSITION:
                    return short
        return None

    def _is_name_param(self, node: ast.expr) -> bool:
        """The enclosing function's own `name` parameter passed on positionally."""
        if not isinstance(node, ast.Name) or node.id != "name":
            return False
        function = self.context.scope.node
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        return any(arg.arg == "name" for arg in function.args.args + function.args.kwonlyargs)
