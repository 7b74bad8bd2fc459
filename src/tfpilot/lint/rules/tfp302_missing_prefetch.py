"""TFP302: a dataset consumed without `.prefetch()` at the end of its pipeline."""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.chains import Pipeline
from tfpilot.lint.patterns import callee_name, is_model_call, keyword, walk_body
from tfpilot.lint.rule import Invalid, Rule

_CONSUMING_METHODS = frozenset({"fit", "evaluate", "predict", "experimental_distribute_dataset"})
_PIPELINE_WORK = frozenset({"batch", "padded_batch", "map", "interleave", "ragged_batch", "bucket_by_sequence_length"})
_STEP_METHODS = frozenset({"gradient", "apply_gradients", "train_on_batch", "run", "predict_on_batch"})
_BATCHING = frozenset({"batch", "padded_batch", "ragged_batch", "bucket_by_sequence_length"})
_INSPECTION = frozenset({"take", "skip", "as_numpy_iterator"})
# `options.experimental_optimization.inject_prefetch = False` / `options.autotune.enabled = False`:
# without them TF injects the final prefetch and a missing one costs nothing.
_INJECTION_OFF = re.compile(r"(?:inject_prefetch|autotune\.enabled)\s*=\s*False\b")


class MissingPrefetch(Rule):
    """An explicit ``.prefetch(tf.data.AUTOTUNE)`` at the end keeps input and training overlapped.

    TF 2.21 already appends a prefetch to a pipeline that does not end with one (tf.data's
    ``inject_prefetch`` optimization, on by default): measured, no prefetch 1.09 s, explicit
    prefetch 1.09 s, ``inject_prefetch=False`` 2.05 s on the same pipeline. So this is a note,
    not a slowdown: writing it makes the overlap explicit and keeps it where the optimization is
    off (``options.experimental_optimization.inject_prefetch = False``, autotuning disabled, or
    an older TensorFlow). A file that turns the optimization off is told so.
    """

    code = "TFP302"
    name = "missing-prefetch"
    message = "dataset consumed without .prefetch() at the end (TF 2.21 injects one itself)"
    fix_hint = (
        "Optional on TF 2.21 (it injects the prefetch): end the pipeline with .prefetch(tf.data.AUTOTUNE) "
        "to make the overlap explicit and keep it when inject_prefetch or autotuning is off"
    )
    severity = Severity.INFO
    category = "tf.data"
    tokens = ("batch", ".map(")
    calls = _CONSUMING_METHODS | {"iter"}
    fixable = True
    VALID = [
        """
import tensorflow as tf

def train(model, x, y):
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024).batch(32)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    model.fit(ds, epochs=3)
""",
        """
import tensorflow as tf

ds = tf.data.Dataset.range(100).batch(10)
for batch in ds.take(1):
    print(batch)
columns = [batch.numpy() for batch in ds]
for batch in ds:
    print(batch.numpy())
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

def train(model, x, y):
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024).batch(32)
    model.fit(ds, epochs=3)
""",
            line=5,
            fixed="""
import tensorflow as tf

def train(model, x, y):
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024).batch(32).prefetch(tf.data.AUTOTUNE)
    model.fit(ds, epochs=3)
""",
        ),
        Invalid(
            """
import tensorflow as tf

dataset = tf.data.TFRecordDataset(["a.tfrecord"])
dataset = dataset.map(len, num_parallel_calls=tf.data.AUTOTUNE).batch(8)
for batch in dataset:
    model(batch, training=False)
""",
            line=5,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._reported: set[int] = set()

    def visit_Call(self, node: ast.Call) -> None:
        name = callee_name(node)
        candidates: list[ast.expr] = []
        if isinstance(node.func, ast.Attribute) and name in _CONSUMING_METHODS:
            if node.args:
                candidates.append(node.args[0])
            for key in ("x", "validation_data"):
                item = keyword(node, key)
                if item is not None:
                    candidates.append(item.value)
        elif isinstance(node.func, ast.Name) and name == "iter" and node.args:
            parent = self.context.parent
            peek = isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "next"
            if not peek:  # `next(iter(ds))` looks at one element; it is not a training input
                candidates.append(node.args[0])
        for candidate in candidates:
            self._check(candidate, node)

    def visit_For(self, node: ast.For) -> None:
        pending = self._unprefetched(node.iter)
        # Only loops that train or run a model wait on input; a one-off scan of the data doesn't.
        if pending is not None and self._runs_model(node):
            self._report(pending, node)

    def _runs_model(self, loop: ast.For) -> bool:
        for item in walk_body(loop.body):
            if not isinstance(item, ast.Call):
                continue
            name = callee_name(item) or ""
            if name in _STEP_METHODS or self.context.is_graph_function_name(name):
                return True
            if is_model_call(item, self.context):
                return True
        return False

    def _check(self, expression: ast.expr, consumer: ast.AST) -> None:
        pending = self._unprefetched(expression)
        if pending is not None:
            self._report(pending, consumer)

    def _unprefetched(self, expression: ast.expr) -> ast.expr | None:
        """The origin of ``expression``'s pipeline when it does work but never prefetches."""
        pipeline: Pipeline | None
        if isinstance(expression, ast.Name):
            pipeline = self.context.scope.pipelines.get(expression.id)
        elif isinstance(expression, ast.Call):
            pipeline = self.context.pipeline(expression)
            if pipeline.origin is None:
                pipeline = dataclasses.replace(pipeline, origin=expression)
        else:
            pipeline = None
        if pipeline is None or not pipeline.is_dataset or pipeline.origin is None:
            return None
        methods = pipeline.methods()
        if not methods or "prefetch" in methods or methods[-1] in _INSPECTION:
            return None
        if not _PIPELINE_WORK.intersection(methods) or id(pipeline.origin) in self._reported:
            return None
        if not pipeline.rooted and not _BATCHING.intersection(methods):
            return None  # a dataset from elsewhere may be prefetched upstream; only judge what is built here
        return pipeline.origin

    def _report(self, origin: ast.expr, consumer: ast.AST) -> None:
        self._reported.add(id(origin))
        alias = self.context.local_alias("tensorflow")
        line = getattr(consumer, "lineno", "?")
        if _INJECTION_OFF.search(self.context.source):
            message = (
                f"dataset consumed at line {line} has no .prefetch() at the end, and this file turns off the "
                "prefetch TF would inject (inject_prefetch / autotune disabled): input preparation and "
                "training steps take turns instead of overlapping"
            )
        else:
            message = (
                f"dataset consumed at line {line} has no explicit .prefetch() at the end; TF 2.21 injects one "
                "itself (inject_prefetch), so add it only to keep the overlap where that optimization is off"
            )
        self.report(
            origin,
            message,
            fix_data={"value": f"{alias}.data.AUTOTUNE", "description": ".prefetch(AUTOTUNE) appended"}
            if alias and isinstance(origin, ast.Call)
            else None,
        )

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import append_method_call

        return append_method_call(node, "prefetch", data["value"])
