"""TFP301: `dataset.map()` / `interleave()` without num_parallel_calls."""

from __future__ import annotations

import ast
from typing import Any

from tfpilot.findings import Severity
from tfpilot.lint.patterns import has_keyword, has_star_kwargs
from tfpilot.lint.rule import Invalid, Rule
from tfpilot.lint.statefulness import stateful_use

# Position of num_parallel_calls among positional arguments.
_PARALLEL_POSITION = {"map": 1, "interleave": 3}


class MapWithoutParallelism(Rule):
    """A ``dataset.map(fn)`` that TensorFlow cannot parallelise by itself, without ``num_parallel_calls``.

    TF 2.21 rewrites a map whose function is stateless into a parallel map on its own (the
    ``map_parallelization`` optimization, on by default), so most maps need no argument. It
    leaves a map sequential when the function is stateful: ``tf.py_function``/``numpy_function``,
    stateful random ops (``tf.random.uniform``, ``tf.image.random_*``), lookup tables, and Keras
    layers built on them (``StringLookup``, ``TextVectorization``, ``RandomFlip`` and the other
    augmentation layers). Such a map runs on one element at a time while the accelerator waits.
    ``interleave`` is never parallelised automatically: without ``num_parallel_calls`` it reads
    its files one after another. Only these cases are reported, where the function can be read
    (a lambda, a function or Keras layer of this file); a function imported from elsewhere is
    not judged.
    """

    code = "TFP301"
    name = "map-without-parallelism"
    message = "dataset.map() over a stateful function without num_parallel_calls stays sequential"
    fix_hint = "Pass num_parallel_calls=tf.data.AUTOTUNE"
    category = "tf.data"
    tokens = (".map(", ".interleave(")
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
        # stateless functions: TF 2.21's map_parallelization makes these parallel maps by itself
        """
import tensorflow as tf

def decode(path):
    image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
    return tf.image.resize(image, [128, 128]) / 255.0

images = tf.data.Dataset.list_files("*.jpg").map(decode)
texts = tf.data.TextLineDataset("reviews.txt").map(lambda x: tf.strings.regex_replace(x, "<br />", " "))
flipped = images.map(lambda x: tf.image.stateless_random_flip_left_right(x, seed=(1, 2)))
""",
        # a Hugging Face / pandas map is no tf.data map, whatever the function does
        """
import random

dataset = load_dataset("imdb")
dataset = dataset.map(lambda row: {"n": random.random()})
frame["label"] = frame["label"].map(lambda v: random.random())
""",
        # a function from another module: not judged
        """
import tensorflow as tf
from preprocessing import augment

train_ds = tf.data.Dataset.list_files("*.jpg").map(augment)
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

def augment(image, label):
    image = tf.image.random_flip_left_right(image)
    return image, label

ds = tf.data.Dataset.from_tensor_slices((images, labels)).map(augment)
""",
            line=8,
        ),
        Invalid(
            """
import tensorflow as tf

ds = tf.data.Dataset.range(10).map(lambda x: x + tf.random.uniform([], 0, 5, tf.int64))
""",
            line=4,
            fixed="""
import tensorflow as tf

ds = tf.data.Dataset.range(10).map(lambda x: x + tf.random.uniform([], 0, 5, tf.int64), num_parallel_calls=tf.data.AUTOTUNE)
""",
        ),
        # the keras-io pattern: an augmentation Sequential applied in the pipeline
        Invalid(
            """
import keras
import tensorflow as tf

data_augmentation = keras.Sequential([keras.layers.RandomFlip("horizontal"), keras.layers.RandomRotation(0.1)])

def make(train_ds):
    return train_ds.map(lambda x, y: (data_augmentation(x, training=True), y))
""",
            line=8,
        ),
        Invalid(
            """
import tensorflow as tf

vectorize_layer = tf.keras.layers.TextVectorization(max_tokens=1000)

def vectorize_text(text, label):
    return vectorize_layer(tf.expand_dims(text, -1)), label

train_ds = raw_train_ds.map(vectorize_text)
""",
            line=9,
        ),
        # interleave is never parallelised by the optimizer
        Invalid(
            """
import tensorflow as tf

files = tf.data.Dataset.list_files("shards/*.tfrecord")
records = files.interleave(tf.data.TFRecordDataset, cycle_length=4)
""",
            line=5,
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
        pipeline = self.context.pipeline(func.value)
        alias = self.context.local_alias("tensorflow")
        fix_data = (
            {"value": f"{alias}.data.AUTOTUNE", "description": "num_parallel_calls=AUTOTUNE added"} if alias else None
        )
        if func.attr == "interleave":
            # a dataset by construction only: `interleave` is also a plain-Python helper's name
            if pipeline.is_dataset and pipeline.rooted:
                self.report(
                    node,
                    "dataset.interleave() without num_parallel_calls reads its inputs one after another: "
                    "tf.data never parallelises it by itself",
                    fix_data=fix_data,
                )
            return
        function = (
            node.args[0] if node.args else next((k.value for k in node.keywords if k.arg in ("map_func", "func")), None)
        )
        use = stateful_use(function, self.context, node)
        # a stateful TF function is tf.data code even when the receiver's name proves nothing more
        if use is None or not (pipeline.is_dataset or _named_like_data(func.value)):
            return
        if any(name in use.what for name in ("py_function", "numpy_function", "py_func")):
            # One cause, one claim: TFP305 warns about the Python callback itself, and num_parallel_calls
            # buys little for Python that holds the GIL (only I/O or NumPy that releases it runs in parallel).
            self.report(
                node,
                f"dataset.map() without num_parallel_calls over a Python callback ({use.what}, line {use.line}); "
                "a note beside TFP305: parallel calls help only where the callback releases the GIL (I/O, NumPy)",
                fix_data=fix_data,
                severity=Severity.INFO,
            )
            return
        self.report(
            node,
            f"dataset.map() without num_parallel_calls over a stateful function ({use.what}, line {use.line}) "
            "runs on one element at a time: TF 2.21 parallelises only stateless map functions by itself",
            fix_data=fix_data,
        )

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        from tfpilot.lint.cst_edits import add_keyword

        return add_keyword(node, "num_parallel_calls", data["value"])


def _named_like_data(receiver: ast.expr) -> bool:
    """`train`, `raw_train_ds`, `self.ds`: a plain name the caller's pipeline chain could not prove."""
    root = receiver
    while isinstance(root, (ast.Call, ast.Attribute, ast.Subscript)):
        root = root.func if isinstance(root, ast.Call) else root.value
    return isinstance(root, ast.Name)
