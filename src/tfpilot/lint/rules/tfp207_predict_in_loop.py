"""TFP207: `model.predict()` called once per step of a loop."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.apis import keras_name
from tfpilot.lint.bindings import KERAS, PLAIN_CLASS, PLAIN_FUNCTION, TF_MODULE
from tfpilot.lint.naming import is_model_name
from tfpilot.lint.rule import Invalid, Rule

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
# a loop written to run at most this many times is a few calls, not a per-step one
_FEW = 5


class PredictInLoop(Rule):
    """``model.predict(x)`` inside a loop pays predict's setup on every iteration.

    ``predict`` is built for many batches: each call wraps its input in a data adapter, builds
    (or looks up) the predict function, runs callbacks and converts the result to NumPy. On one
    state of an RL loop, one batch of an evaluation loop or one pixel of an autoregressive sampler
    that overhead is most of the time; Keras's documentation says to call the model directly
    there (``model(x, training=False)``). ``test_lint_tf_premises.py`` measures the gap on the
    installed Keras. Reported where the call is inside a loop of its function or a comprehension
    (not an epoch loop: one predict per epoch costs little), or inside a function the file calls
    from a loop. A note:
    whether the overhead matters depends on how long each step runs.
    """

    code = "TFP207"
    name = "predict-in-loop"
    message = "model.predict() inside a loop: call the model directly for small batches"
    fix_hint = (
        "Call the model: model(x, training=False) (add .numpy() if you need an array); keep predict() "
        "for whole datasets"
    )
    severity = Severity.INFO
    category = "training loop"
    tokens = (".predict(",)
    calls = frozenset({"predict"})
    VALID = [
        """
import keras

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
for state in range(100):
    q = model(state, training=False)
""",
        """
import keras

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
for epoch in range(10):
    model.fit(x, y)
    scores = model.predict(x_test)
""",
    ]
    INVALID = [
        Invalid(
            """
import keras

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
for state in states:
    q = model.predict(state)
""",
            line=6,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._ranges: list[tuple[int, int]] | None = None

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or not self.context.uses_tensorflow:
            return
        if not self._in_a_step(node) or not self._is_keras_model(func.value, node):
            return
        self.report(
            node,
            f"`{ast.unparse(func)}()` inside a loop: each call sets up a predict loop (data adapter, "
            "callbacks, NumPy conversion); for one state or batch call the model directly, "
            f"`{ast.unparse(func.value)}(x, training=False)`",
        )

    def _in_a_step(self, node: ast.Call) -> bool:
        if self._in_a_comprehension(node):
            return True
        loops = self.context.function_loops()
        if loops:
            innermost = loops[-1]
            if not isinstance(innermost, (ast.For, ast.AsyncFor)):
                return True
            target = ast.unparse(innermost.target)
            if "epoch" in target.lower():
                return False  # one predict per epoch costs little next to the epoch
            receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
            if receiver is not None and ast.unparse(receiver) in target.replace(" ", "").split(","):
                return False  # `for model in ensemble: model.predict(x)`: each model once
            return len(loops) > 1 or not _few_iterations(innermost.iter)
        function = self.context.scope.node
        return isinstance(function, _FUNCTIONS) and self._called_in_a_loop(function.name)

    def _in_a_comprehension(self, node: ast.Call) -> bool:
        """`[model.predict(p) for p in points]`: one predict per element, as in a loop."""
        inner: ast.AST = node
        for ancestor in self.context.ancestors():
            if isinstance(ancestor, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
                return False
            if isinstance(ancestor, ast.comprehension) and inner is ancestor.iter:
                return False  # `[f(x) for x in model.predict(batch)]`: what is iterated is computed once
            if isinstance(ancestor, _COMPREHENSIONS):
                iterated = [g.iter for g in ancestor.generators]
                targets = {n.id for g in ancestor.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
                receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
                if isinstance(receiver, ast.Name) and receiver.id in targets:
                    return False  # `[m.predict(x) for m in ensemble]`: each model once
                if inner not in iterated and not all(_few_iterations(i) for i in iterated):
                    return True
            inner = ancestor
        return False

    def _called_in_a_loop(self, function: str) -> bool:
        """The file calls ``function`` (``function(`` or ``.function(``) on a line inside a loop.

        A text search over the lines of the file's loops: walking every expression of the file
        for its calls cost more than the rest of the rule."""
        ranges = self._loop_ranges()
        if not ranges:
            return False
        needle = function + "("
        lines = self.context.lines
        for start, end in ranges:
            for text in lines[start - 1 : end]:
                index = text.find(needle)
                while index >= 0:
                    before = text[index - 1] if index else " "
                    if not (before.isalnum() or before == "_") and not text.lstrip().startswith("def "):
                        return True
                    index = text.find(needle, index + 1)
        return False

    def _loop_ranges(self) -> list[tuple[int, int]]:
        """(first, last) line of every loop of the file, from a walk of its statements only."""
        if self._ranges is None:
            ranges: list[tuple[int, int]] = []
            pending: list[ast.AST] = list(self.context.tree.body)
            while pending:
                statement = pending.pop()
                if isinstance(statement, _LOOPS):
                    ranges.append((statement.lineno, statement.end_lineno or statement.lineno))
                for field in ("body", "orelse", "finalbody", "handlers"):
                    block = getattr(statement, field, None)
                    if isinstance(block, list):
                        pending.extend(block)
            self._ranges = ranges
        return self._ranges

    def _is_keras_model(self, receiver: ast.expr, at: ast.Call) -> bool:
        """Bound to a Keras model here, or unbound with a model's name (``self.model``, ``generator``)."""
        name = self.context.dotted(receiver)
        if name is None:
            return False
        values = self.context.bindings.values(name, at, self.context.scope.node)
        method = at.func.attr if isinstance(at.func, ast.Attribute) else ""
        if any(self._overrides(value, method) for value in values):
            return False  # the class's own `predict` (a plain method): no Keras predict loop
        kinds = {self.context.bindings.kind_of(value) for value in values}
        if KERAS in kinds:
            return True
        if kinds & {TF_MODULE, PLAIN_FUNCTION, PLAIN_CLASS}:
            return False
        for value in values:
            qualname = self.context.qualname(value.func) if isinstance(value, ast.Call) else None
            if qualname is not None and keras_name(qualname) is None and not qualname.startswith("tensorflow"):
                return False  # built by another library (a scikit-learn estimator)
        return is_model_name(name.rsplit(".", 1)[-1])

    def _overrides(self, value: ast.AST, method: str) -> bool:
        """``value`` makes an instance of a class of this file (or of its local bases) that defines
        ``method`` itself."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
            return False
        pending, seen = list(self.context.class_defs(value.func.id)), set()
        while pending:
            klass = pending.pop()
            if id(klass) in seen:
                continue
            seen.add(id(klass))
            if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == method for n in klass.body):
                return True
            for base in klass.bases:
                if isinstance(base, ast.Name):
                    pending.extend(self.context.class_defs(base.id))
        return False


def _few_iterations(iterated: ast.expr) -> bool:
    """A loop that runs a handful of times, written so: ``range(3)``, ``ds.take(1)``, a literal
    list of a few items. Its predict calls are a few, not one per step."""
    if isinstance(iterated, (ast.List, ast.Tuple)):
        return len(iterated.elts) <= _FEW
    if isinstance(iterated, ast.Call) and len(iterated.args) == 1:
        argument = iterated.args[0]
        name = iterated.func.attr if isinstance(iterated.func, ast.Attribute) else getattr(iterated.func, "id", "")
        if name in ("range", "take") and isinstance(argument, ast.Constant) and isinstance(argument.value, int):
            return argument.value <= _FEW
    return False
