"""TFP203: `.numpy()` / float(loss) on every step of a training loop."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.naming import is_training_step_name
from tfpilot.lint.nodes import child_nodes, walk_nodes
from tfpilot.lint.patterns import callee_name
from tfpilot.lint.rule import Invalid, Rule

_STEP_METHODS = frozenset({"gradient", "apply_gradients", "train_on_batch"})
_CONVERSIONS = frozenset({"float", "int"})


class HostSyncEveryStep(Rule):
    """Reading a tensor's value every training step makes the host wait for the device.

    ``loss.numpy()`` or ``float(loss)`` blocks until the step has finished, so TensorFlow
    cannot queue the next step while the current one runs; on an accelerator this is often the
    largest single slowdown of a custom loop. Accumulate into a metric and read it every N steps
    or once per epoch.

    A training loop here is a loop that computes gradients, applies them, or calls a
    tf.function named like a training step (``train_step``, ``distributed_step``); loops that
    only run inference to collect predictions need the values on the host anyway.

    A note (info), never a warning: whether the read costs anything depends on how long the
    step runs, which source code does not show (on real code bases most such reads were a
    progress print or a counter read once per long collect-and-train iteration: 0 of 3 warnings
    on the tuning corpora were worth acting on). ``tfpilot doctor`` measures the stall and warns
    when it is a material share of the step. Where the loop runs the step eagerly the note says
    the sync is small next to the eager loop's per-op dispatch.
    """

    code = "TFP203"
    name = "host-sync-every-step"
    severity = Severity.INFO
    message = "tensor value read on every step of a training loop"
    fix_hint = (
        "Accumulate in a keras.metrics.Mean (or a tf.Variable) and read it every N steps or once "
        "per epoch; guard per-step logging with `if step % N == 0`"
    )
    category = "training loop"
    tokens = ("numpy()", "float(", "int(")
    calls = frozenset({"numpy", "float", "int"})
    VALID = [
        """
import tensorflow as tf

@tf.function
def train_step(x):
    return tf.reduce_mean(x)

for step, x in enumerate([tf.ones(3)] * 10):
    loss = train_step(x)
    if step % 100 == 0:
        print(step, float(loss))
""",
        """
import tensorflow as tf

predictions = []
for x in [tf.ones(3)] * 10:
    predictions.append(tf.reduce_sum(x).numpy())
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

@tf.function
def train_step(x):
    return tf.reduce_mean(x)

history = []
for x in [tf.ones(3)] * 10:
    loss = train_step(x)
    history.append(loss.numpy())
""",
            line=11,
        ),
        Invalid(
            """
import tensorflow as tf

def fit(model, optimizer, dataset):
    for x, y in dataset:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        print(float(loss))
""",
            line=10,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._hot: dict[int, tuple[bool, set[str], bool]] = {}

    def visit_Call(self, node: ast.Call) -> None:
        scope = self.context.scope
        if scope.is_graph:
            return  # inside a tf.function TFP102 applies instead
        func = node.func
        is_numpy = isinstance(func, ast.Attribute) and func.attr == "numpy" and not node.args
        is_conversion = (
            isinstance(func, ast.Name) and func.id in _CONVERSIONS and len(node.args) == 1 and not node.keywords
        )
        if not is_numpy and not is_conversion:
            return
        loops = self.context.function_loops()
        if not loops:
            return
        hot, step_results, compiled = self._training_loop(loops[-1])
        if not hot:
            return
        if is_conversion and not _reads(node.args[0], step_results):
            return
        for ancestor in self.context.ancestors():
            if ancestor is loops[-1]:
                break
            if isinstance(ancestor, ast.If) and any(isinstance(n, ast.Mod) for n in walk_nodes(ancestor.test)):
                return  # periodic logging: `if step % 100 == 0`
        what = ".numpy()" if is_numpy else f"{getattr(func, 'id', 'float')}()"
        if compiled:
            self.report(node, f"{what} on every step of a training loop blocks until the step finishes")
        else:
            self.report(
                node,
                f"{what} on every step of an eager training loop: a host sync per step (small next to "
                "the eager loop's per-op dispatch; it matters once the step is a tf.function)",
                severity=Severity.INFO,
            )

    def _training_loop(self, loop: ast.AST) -> tuple[bool, set[str], bool]:
        """Is ``loop`` a training loop, which names hold its step's results, and is the step
        compiled (a tf.function, strategy.run, train_on_batch) rather than run eagerly?"""
        cached = self._hot.get(id(loop))
        if cached is not None:
            return cached
        hot = compiled = False
        results: set[str] = set()
        for node in _walk_loop_body(loop):
            if isinstance(node, ast.Call):
                name = callee_name(node) or ""
                if name in _STEP_METHODS:
                    hot = True
                    compiled = compiled or name == "train_on_batch"
                elif self.context.is_graph_function_name(name) and is_training_step_name(name):
                    hot = compiled = True
                elif name == "run" and "strategy" in (self.context.dotted(node.func) or "").lower():
                    step = node.args[0] if node.args else None
                    if is_training_step_name(callee_name_of(step)):
                        hot = compiled = True
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                for target in node.targets:
                    results.update(n.id for n in walk_nodes(target) if isinstance(n, ast.Name))
        self._hot[id(loop)] = (hot, results, compiled)
        return hot, results, compiled


def _walk_loop_body(loop: ast.AST) -> list[ast.AST]:
    """Nodes of the loop body, not descending into nested loops or functions.

    The epoch loop around a step loop is not itself a per-step loop.
    """
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(getattr(loop, "body", []))
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        stack.extend(child_nodes(node))
    return found


def callee_name_of(node: ast.AST | None) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _reads(node: ast.AST, names: set[str]) -> bool:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return isinstance(node, ast.Name) and node.id in names
