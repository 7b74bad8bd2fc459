"""TFP305: tf.py_function / numpy_function in a tf.data map, and Dataset.from_generator."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.rule import Invalid, Rule

_PY_FUNCTIONS = frozenset(
    {
        "tensorflow.py_function",
        "tensorflow.numpy_function",
        "tensorflow.compat.v1.py_func",
        "tensorflow.compat.v1.py_function",
        "tensorflow.compat.v1.numpy_function",
    }
)
_GENERATOR = frozenset({"tensorflow.data.Dataset.from_generator"})
_MAP_METHODS = frozenset({"map", "flat_map", "filter", "interleave"})


class PythonFunctionInPipeline(Rule):
    """Python code inside tf.data runs under the GIL, one element at a time.

    ``tf.py_function`` in a map and ``Dataset.from_generator`` call back into Python for every
    element: num_parallel_calls cannot parallelise them, the pipeline cannot be saved or
    served, and the data cannot be sharded across workers. TF ops (tf.io, tf.image,
    tf.strings) or a source such as from_tensor_slices / TFRecordDataset usually do the job.
    ``from_generator`` is a note (info), not a defect claim: it is the documented way in for data
    only Python can read (OpenCV video frames, soundfile audio, a Python-side simulator), and the
    cost only matters when the generator, not the model, is the bottleneck. A py_function in a
    map stays a warning: it sits in the per-element hot path that num_parallel_calls cannot
    parallelise.
    """

    code = "TFP305"
    name = "python-function-in-pipeline"
    message = "Python callback in a tf.data pipeline: serialised under the GIL"
    fix_hint = (
        "Express the transform with TF ops (tf.io, tf.image, tf.strings); for in-memory data use "
        "Dataset.from_tensor_slices, for files TFRecordDataset / TextLineDataset"
    )
    category = "tf.data"
    tokens = ("py_function", "numpy_function", "py_func", "from_generator")
    # every call: a `@tf.py_function` def is reported where a map uses it, under any name
    VALID = [
        """
import tensorflow as tf

ds = tf.data.Dataset.from_tensor_slices(["a.png"]).map(
    lambda path: tf.io.decode_png(tf.io.read_file(path)), num_parallel_calls=tf.data.AUTOTUNE
)
""",
        """
import tensorflow as tf

def debug(x):
    return tf.py_function(print, [x], [])
""",
        # the decorator form called eagerly, outside any pipeline
        """
import tensorflow as tf

@tf.py_function(Tout=tf.float32)
def slow_double(x):
    return x * 2.0

print(slow_double(tf.constant(1.0)))
""",
    ]
    INVALID = [
        # a receiver whose name proves nothing: the TF callback in the map's function does
        Invalid(
            """
import tensorflow as tf

def make(train):
    return train.map(lambda x, y: (tf.py_function(load, [x], tf.float32), y))
""",
            line=5,
        ),
        Invalid(
            """
import tensorflow as tf
from PIL import Image

def load(path):
    return tf.py_function(lambda p: Image.open(p.numpy()), [path], tf.uint8)

ds = tf.data.Dataset.from_tensor_slices(["a.png"]).map(load)
""",
            line=6,
        ),
        Invalid(
            """
import tensorflow as tf

def rows():
    for i in range(10):
        yield i

ds = tf.data.Dataset.from_generator(rows, output_signature=tf.TensorSpec([], tf.int32))
""",
            line=8,
        ),
        # the decorator form, used by a dataset map
        Invalid(
            """
import tensorflow as tf

@tf.py_function(Tout=tf.float32)
def slow_double(x):
    return x * 2.0

ds = tf.data.Dataset.range(3).map(slow_double)
""",
            line=4,
        ),
    ]

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        # `@tf.py_function(Tout=...)` decorated defs: name -> (decorator, qualname); reported
        # once a dataset map uses the function (directly or from its map function)
        self._decorated: dict[str, tuple[ast.Call, str]] = {}
        self._used: set[str] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call):
                qualname = self.context.qualname(decorator.func)
                if qualname in _PY_FUNCTIONS:
                    self._decorated[node.name] = (decorator, qualname)

    def finish(self) -> None:
        for name in sorted(self._used):
            decorator, qualname = self._decorated[name]
            self.report(
                decorator,
                f"@{qualname.rsplit('.', 1)[-1]} on {name}(), which a tf.data map uses: Python under the GIL per element",
            )

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if self._decorated:
            if isinstance(func, ast.Name) and func.id in self._decorated and self._in_pipeline():
                self._used.add(func.id)
            elif isinstance(func, ast.Attribute) and func.attr in _MAP_METHODS and node.args:
                first = node.args[0]
                if (
                    isinstance(first, ast.Name)
                    and first.id in self._decorated
                    and self.context.pipeline(func.value).is_dataset
                ):
                    self._used.add(first.id)
        qualname = self.context.qualname(node.func)
        if qualname in _GENERATOR:
            self.report(
                node,
                "Dataset.from_generator runs a Python generator under the GIL for every element: fine for "
                "data only Python can read, a bottleneck when the generator does the heavy work",
                severity=Severity.INFO,
            )
        elif qualname in _PY_FUNCTIONS and self._in_pipeline():
            self.report(node, f"{qualname.rsplit('.', 1)[-1]} in a tf.data map runs Python under the GIL per element")

    def _in_pipeline(self) -> bool:
        if self.context.scope.graph_reason == "tf.data map function":
            return True
        inner: ast.AST = self.context.stack[-1]
        for ancestor in self.context.ancestors():
            if (
                isinstance(ancestor, ast.Call)
                and isinstance(ancestor.func, ast.Attribute)
                and ancestor.func.attr in _MAP_METHODS
                # a TF Python callback inside the map's own function argument is tf.data code,
                # whatever the receiver is called (`train.map(lambda x: tf.py_function(...))`)
                and (inner is not ancestor.func or self.context.pipeline(ancestor.func.value).is_dataset)
            ):
                return True
            inner = ancestor
        return False
