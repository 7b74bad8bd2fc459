"""TFP301: `dataset.map()` / `interleave()` without num_parallel_calls."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.lint.patterns import has_keyword, has_star_kwargs
from tfpilot.lint.rule import Invalid, Rule

# Position of num_parallel_calls among positional arguments.
_PARALLEL_POSITION = {"map": 1, "interleave": 3}


class MapWithoutParallelism(Rule):
    """``dataset.map(fn)`` without ``num_parallel_calls`` runs ``fn`` on one element at a time.

    Decoding and augmentation then use a single core while the accelerator waits for input;
    parallel map is typically 2x or more faster on decode-heavy pipelines. ``tf.data.AUTOTUNE``
    lets tf.data pick the parallelism. (Element order is still deterministic by default.)
    """

    code = "TFP301"
    name = "map-without-parallelism"
    message = "dataset.map() without num_parallel_calls runs on one core"
    fix_hint = "Pass num_parallel_calls=tf.data.AUTOTUNE"
    category = "tf.data"
    tokens = (".map(", ".interleave(", "map(")
    calls = frozenset(_PARALLEL_POSITION)
    fixable = True
    VALID = [
        """
import tensorflow as tf

ds = tf.data.Dataset.range(10).map(lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE)
pairs = tf.data.Dataset.range(10).enumerate().map(lambda index, value: value)
""",
        """
results = list(map(str, [1, 2]))
squares = {1: 2}.items()
pool_results = executor.map(str, [1, 2])
""",
        # slicing, projecting and reshaping cost less than handing elements between threads
        """
import tensorflow as tf

windows = tf.data.Dataset.range(100).window(5, shift=1).flat_map(lambda w: w.batch(5))
pairs = windows.map(lambda window: (window[:-1], window[-1]))
specs = pairs.map(map_func=lambda spec, label: spec)
grids = tf.data.Dataset.from_tensor_slices(tf.zeros((8, 16))).map(lambda x: tf.reshape(x, (4, 4)))
""",
    ]
    INVALID = [
        # a string op per element is real work
        Invalid(
            """
import tensorflow as tf

texts = tf.data.TextLineDataset("reviews.txt")
texts = texts.map(lambda x: tf.strings.regex_replace(x, "<br />", " "))
""",
            line=5,
        ),
        Invalid(
            """
import tensorflow as tf

ds = tf.data.Dataset.range(10).map(lambda x: x * 2)
""",
            line=4,
            fixed="""
import tensorflow as tf

ds = tf.data.Dataset.range(10).map(lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE)
""",
        ),
        Invalid(
            """
import tensorflow as tf

def make(files):
    dataset = tf.data.TFRecordDataset(files)
    dataset = dataset.map(parse)
    return dataset
""",
            line=6,
        ),
        Invalid(
            """
def augment_pipeline(train_ds):
    return train_ds.map(augment)
""",
            line=3,
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in _PARALLEL_POSITION:
            return
        if has_keyword(node, "num_parallel_calls") or has_star_kwargs(node):
            return
        if len(node.args) > _PARALLEL_POSITION[func.attr]:
            return
        function = (
            node.args[0] if node.args else next((k.value for k in node.keywords if k.arg in ("map_func", "func")), None)
        )
        if function is not None and _is_projection(function, self.context):
            return  # `lambda x, y: x` only restructures elements: nothing to parallelise
        if not self.context.pipeline(func.value).is_dataset:
            return
        alias = self.context.local_alias("tensorflow")
        self.report(
            node,
            f"dataset.{func.attr}() without num_parallel_calls runs the function on one element at a time",
            fix_data={"value": f"{alias}.data.AUTOTUNE", "description": "num_parallel_calls=AUTOTUNE added"}
            if alias
            else None,
        )

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import add_keyword

        return add_keyword(node, "num_parallel_calls", data["value"])


# Ops that only reshape, regroup or retype a tensor: a map of nothing but these costs less than
# the hand-off between parallel map threads (tf.data's guide: vectorise cheap functions instead).
_RESHAPING_OPS = frozenset(
    {"reshape", "expand_dims", "squeeze", "concat", "stack", "cast", "identity", "ensure_shape", "transpose"}
)
_STRUCTURE = (
    ast.Name,
    ast.Tuple,
    ast.List,
    ast.Dict,
    ast.Subscript,
    ast.Slice,
    ast.Constant,
    ast.UnaryOp,
    ast.expr_context,
    ast.unaryop,
    ast.keyword,
)


def _is_projection(function: ast.expr, context: Any) -> bool:
    """A lambda that only selects, regroups or reshapes its arguments (names, tuples, constant
    indexing and slicing, tf.reshape / tf.concat / tf.cast & co.)."""
    if not isinstance(function, ast.Lambda):
        return False
    for node in ast.walk(function.body):
        if isinstance(node, ast.Call):
            qualname = context.qualname(node.func) or ""
            if not qualname.startswith("tensorflow.") or qualname.rsplit(".", 1)[-1] not in _RESHAPING_OPS:
                return False
        elif isinstance(node, ast.Attribute):
            if not isinstance(node.ctx, ast.Load) or context.qualname(node) is None:
                return False  # `x.shape` & co. are fine only as part of a tf.* callee
        elif not isinstance(node, _STRUCTURE):
            return False
    return True
