"""tf.data pipelines as chains of method calls, followed through simple reassignments.

``ds = tf.data.TFRecordDataset(files)``, then ``ds = ds.map(parse).batch(32)`` is one pipeline
with steps [map, batch]. Rules ask "does a shuffle come after a batch?" or "does the pipeline
that reaches ``model.fit`` end with prefetch?" against these steps.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import TYPE_CHECKING

from tfpilot.lint.apis import is_dataset_constructor
from tfpilot.lint.naming import is_dataset_name

if TYPE_CHECKING:
    from tfpilot.lint.context import FileContext

__all__ = ["Step", "Pipeline", "method_steps", "resolve_pipeline", "DISTINCTIVE_DATASET_METHODS"]

# Methods that (almost) only tf.data.Dataset has: a chain using one of them is a dataset.
DISTINCTIVE_DATASET_METHODS = frozenset(
    {
        "prefetch",
        "padded_batch",
        "unbatch",
        "interleave",
        "with_options",
        "ragged_batch",
        "bucket_by_sequence_length",
        "rebatch",
        "shard",
        "flat_map",
        "map_with_legacy_function",
    }
)


@dataclasses.dataclass(frozen=True)
class Step:
    method: str
    call: ast.Call


@dataclasses.dataclass(frozen=True)
class Pipeline:
    steps: tuple[Step, ...]
    is_dataset: bool
    # The expression last assigned to the pipeline's name (where a fix like prefetch goes).
    origin: ast.expr | None = None
    # Built from a known constructor in this scope, so ``steps`` is the whole pipeline (a
    # dataset passed in may already have been batched and prefetched upstream).
    rooted: bool = False

    def methods(self) -> list[str]:
        return [step.method for step in self.steps]

    def index(self, method: str, *, before: int | None = None) -> int | None:
        """Index of the last ``method`` step (before position ``before``), or None."""
        limit = len(self.steps) if before is None else before
        for position in range(limit - 1, -1, -1):
            if self.steps[position].method == method:
                return position
        return None


def method_steps(expr: ast.expr) -> tuple[ast.expr, list[Step]]:
    """``a.b(x).c(y)`` -> (``a``, [Step('b'), Step('c')]) in source order."""
    steps: list[Step] = []
    node = expr
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        steps.append(Step(node.func.attr, node))
        node = node.func.value
    steps.reverse()
    return node, steps


def resolve_pipeline(expr: ast.expr, context: FileContext) -> Pipeline:
    """The pipeline ``expr`` denotes, prefixed by what its root name was assigned earlier."""
    root, steps = method_steps(expr)
    if isinstance(root, ast.Name):
        known = context.scope.pipelines.get(root.id)
        if known is not None:
            return Pipeline(known.steps + tuple(steps), known.is_dataset, known.origin, known.rooted)
        if root.id in context.imports:
            # `tf.data.Dataset.range(3).map(...)`: the first step is the constructor.
            first = steps[0] if steps else None
            if first is not None and is_dataset_constructor(context.qualname(first.call.func)):
                return Pipeline(tuple(steps[1:]), True, rooted=True)
            return Pipeline(tuple(steps), False)
        is_dataset = is_dataset_name(root.id)
    elif isinstance(root, ast.Attribute):
        first = steps[0] if steps else None
        if first is not None and is_dataset_constructor(context.qualname(first.call.func)):
            return Pipeline(tuple(steps[1:]), True, rooted=True)
        is_dataset = is_dataset_name(root.attr)
    elif isinstance(root, ast.Call):
        if is_dataset_constructor(context.qualname(root.func)):
            return Pipeline(tuple(steps), True, rooted=True)
        # `make_dataset(files).map(f)`, `ArtificialDataset().map(f)`: a dataset from this file
        is_dataset = isinstance(root.func, ast.Name) and context.returns_dataset(root.func.id)
    else:
        is_dataset = False
    if not is_dataset:
        is_dataset = any(step.method in DISTINCTIVE_DATASET_METHODS for step in steps)
    return Pipeline(tuple(steps), is_dataset)
