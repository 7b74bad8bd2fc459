"""TFP302: a dataset consumed without `.prefetch()` at the end of its pipeline."""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from tfpilot.lint.chains import Pipeline
from tfpilot.lint.patterns import callee_name, is_model_call, keyword, walk_body
from tfpilot.lint.rule import Invalid, Rule

_CONSUMING_METHODS = frozenset({"fit", "evaluate", "predict", "experimental_distribute_dataset"})
_PIPELINE_WORK = frozenset({"batch", "padded_batch", "map", "interleave", "ragged_batch", "bucket_by_sequence_length"})
_STEP_METHODS = frozenset({"gradient", "apply_gradients", "train_on_batch", "run", "predict_on_batch"})
_BATCHING = frozenset({"batch", "padded_batch", "ragged_batch", "bucket_by_sequence_length"})
_INSPECTION = frozenset({"take", "skip", "as_numpy_iterator"})


class MissingPrefetch(Rule):
    """A tf.data pipeline should end with ``.prefetch(tf.data.AUTOTUNE)``.

    Without prefetch, the input pipeline and the training step take turns: the accelerator
    idles while the next batch is read, decoded and batched. Prefetch overlaps the two, so the
    step time becomes max(input, compute) instead of their sum.
    """

    code = "TFP302"
    name = "missing-prefetch"
    message = "dataset consumed without .prefetch() at the end of its pipeline"
    fix_hint = "End the pipeline with .prefetch(tf.data.AUTOTUNE)"
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
        self.report(
            origin,
            f"dataset consumed at line {getattr(consumer, 'lineno', '?')} has no .prefetch() at the end: input "
            "preparation and training steps take turns instead of overlapping",
            fix_data={"value": f"{alias}.data.AUTOTUNE", "description": ".prefetch(AUTOTUNE) appended"}
            if alias and isinstance(origin, ast.Call)
            else None,
        )

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import append_method_call

        return append_method_call(node, "prefetch", data["value"])
