"""TFP613: tensorflow.examples.tutorials (the MNIST input_data loader), no longer shipped."""

from __future__ import annotations

from tfpilot.findings import Severity
from tfpilot.lint.removed_modules import RemovedModuleRule
from tfpilot.lint.rule import Invalid


class TfExamplesTutorials(RemovedModuleRule):
    """``tensorflow.examples.tutorials`` is not part of TensorFlow 2; the import fails.

    TF1 tutorials loaded MNIST with ``from tensorflow.examples.tutorials.mnist import
    input_data`` and ``input_data.read_data_sets(...)``. TF2 wheels ship no
    ``tensorflow.examples`` package at all (``ModuleNotFoundError`` on TF 2.21). Load the data
    with ``keras.datasets.mnist.load_data()`` (NumPy arrays) or ``tensorflow_datasets``
    (``tfds.load("mnist")``, a tf.data pipeline), and batch it with tf.data.
    """

    code = "TFP613"
    name = "tf-examples-tutorials"
    message = "tensorflow.examples.tutorials is not shipped with TensorFlow 2"
    fix_hint = (
        "Load MNIST with keras.datasets.mnist.load_data() or tensorflow_datasets (tfds.load('mnist')), "
        "then tf.data.Dataset.from_tensor_slices(...).shuffle().batch() instead of next_batch()"
    )
    severity = Severity.ERROR
    category = "tf1 -> tf2"
    tokens = ("examples",)
    removed = ("tensorflow.examples",)
    VALID = [
        """
import keras

(x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
""",
    ]
    INVALID = [
        Invalid(
            """
from tensorflow.examples.tutorials.mnist import input_data

mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)
""",
            line=2,
        ),
        Invalid(
            """
import tensorflow.examples.tutorials.mnist.input_data as input_data
""",
            line=2,
        ),
        Invalid(
            """
import tensorflow as tf

mnist = tf.examples.tutorials.mnist.input_data.read_data_sets("MNIST_data/")
""",
            line=4,
        ),
    ]

    def describe(self, name: str, shown: str) -> str:
        dataset = "MNIST" if ".mnist" in name else "the data"
        return (
            f"TensorFlow 2 ships no tensorflow.examples; load {dataset} with keras.datasets "
            "(keras.datasets.mnist.load_data()) or tensorflow_datasets"
        )
