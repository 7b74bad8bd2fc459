"""Tiny SavedModels in TF Serving's classic shapes, for trying the server, tests and benchmarks.

``write_half_plus_two`` mirrors TF Serving's half_plus_two test model (y = 0.5 x + 2) with its
predict, classify and regress signatures. TF2 has no public way to give a signature the
classify/regress method_name, so :func:`set_method_names` rewrites it in saved_model.pb; the
TF2 loader and TF Serving both accept the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tfpilot import _tf_private
from tfpilot.atomic import atomic_directory
from tfpilot.savedmodel.method_names import set_method_names

__all__ = [
    "set_method_names",
    "write_half_plus_two",
    "write_multi_io_model",
    "write_string_model",
    "write_classifier_model",
    "write_sleep_model",
    "write_corrupt_version",
]


def _save(
    module: Any, base_path: str | Path, version: int, signatures: dict[str, Any], methods: dict[str, str] | None = None
) -> Path:
    import tensorflow as tf

    final = Path(base_path) / str(version)
    # Written to a hidden sibling and renamed, so a polling server never sees a partial version.
    with atomic_directory(final, overwrite=True) as tmp:
        tf.saved_model.save(module, str(tmp), signatures=signatures)
        if methods:
            set_method_names(tmp, methods)
    return final


def _x_feature(inputs: Any) -> Any:
    import tensorflow as tf

    features = tf.io.parse_example(inputs, {"x": tf.io.FixedLenFeature([1], tf.float32)})
    return features["x"]


def write_half_plus_two(base_path: str | Path, version: int = 1, *, slope: float = 0.5, offset: float = 2.0) -> Path:
    """y = slope * x + offset; signatures serving_default (x -> y), classify_x_to_y, regress_x_to_y."""
    import tensorflow as tf

    class HalfPlusTwo(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.slope = tf.Variable(slope, dtype=tf.float32)
            self.offset = tf.Variable(offset, dtype=tf.float32)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
        def predict(self, x: Any) -> Any:
            return {"y": self.slope * x + self.offset}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def classify(self, inputs: Any) -> Any:
            return {"scores": self.slope * _x_feature(inputs) + self.offset}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def regress(self, inputs: Any) -> Any:
            return {"outputs": self.slope * _x_feature(inputs) + self.offset}

    module = HalfPlusTwo()
    signatures = {
        "serving_default": module.predict,
        "classify_x_to_y": module.classify,
        "regress_x_to_y": module.regress,
    }
    methods = {"classify_x_to_y": "tensorflow/serving/classify", "regress_x_to_y": "tensorflow/serving/regress"}
    return _save(module, base_path, version, signatures, methods)


def write_multi_io_model(base_path: str | Path, version: int = 1) -> Path:
    """Inputs a float32 [-1,2], b int64 [-1]; outputs total float32 [-1], scaled float32 [-1,2]."""
    import tensorflow as tf

    class MultiIO(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = tf.Variable(3.0)

        @tf.function(
            input_signature=[tf.TensorSpec([None, 2], tf.float32, name="a"), tf.TensorSpec([None], tf.int64, name="b")]
        )
        def serve(self, a: Any, b: Any) -> Any:
            return {"total": tf.reduce_sum(a, axis=1) + tf.cast(b, tf.float32), "scaled": a * self.scale}

    module = MultiIO()
    return _save(module, base_path, version, {"serving_default": module.serve})


def write_string_model(base_path: str | Path, version: int = 1) -> Path:
    """serving_default: text string [-1] -> length int32, echo_bytes string (b64 out);
    image: image_bytes string [-1] (PNG) -> mean float32, height int32."""
    import tensorflow as tf

    class Strings(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.unit = tf.Variable(1.0)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def text(self, text: Any) -> Any:
            return {"length": tf.strings.length(text), "echo_bytes": text}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="image_bytes")])
        def image(self, image_bytes: Any) -> Any:
            def describe(data: Any) -> Any:
                pixels = tf.cast(tf.io.decode_png(data, channels=1), tf.float32)
                return tf.reduce_mean(pixels) * self.unit, tf.shape(pixels)[0]

            mean, height = tf.map_fn(describe, image_bytes, fn_output_signature=(tf.float32, tf.int32))
            return {"mean": mean, "height": height}

    module = Strings()
    return _save(module, base_path, version, {"serving_default": module.text, "image": module.image})


def write_classifier_model(base_path: str | Path, version: int = 1) -> Path:
    """classify (default): tf.Example feature x -> classes [neg, pos], scores softmax([-x, x]);
    regress: x -> 3x."""
    import tensorflow as tf

    class Classifier(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weights = tf.Variable([[-1.0, 1.0]])

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def classify(self, inputs: Any) -> Any:
            scores = tf.nn.softmax(tf.matmul(_x_feature(inputs), self.weights))
            classes = tf.tile(tf.constant([["neg", "pos"]]), [tf.shape(inputs)[0], 1])
            return {"classes": classes, "scores": scores}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def regress(self, inputs: Any) -> Any:
            return {"outputs": _x_feature(inputs)[:, 0] * 3.0}

    module = Classifier()
    signatures = {"serving_default": module.classify, "regress": module.regress}
    methods = {"serving_default": "tensorflow/serving/classify", "regress": "tensorflow/serving/regress"}
    return _save(module, base_path, version, signatures, methods)


def write_sleep_model(base_path: str | Path, version: int = 1) -> Path:
    """x float32 [-1] -> y = x, after sleeping max(x) milliseconds inside the graph (a slow model
    whose duration does not depend on the machine, for deadline and queue tests)."""
    import tensorflow as tf

    data_testing = _tf_private.sleep_dataset_op()

    class Sleep(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.unit = tf.Variable(1.0)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
        def serve(self, x: Any) -> Any:
            micros = tf.cast(tf.maximum(tf.reduce_max(x), 0.0) * 1000.0, tf.int64)
            # take(1): without it the dataset sleeps again before reporting its end.
            slept = tf.data.Dataset.range(1).apply(data_testing.sleep(micros)).take(1)
            zero = slept.reduce(tf.constant(0, tf.int64), lambda total, item: total + item)
            return {"y": x * self.unit + tf.cast(zero, tf.float32)}

    module = Sleep()
    return _save(module, base_path, version, {"serving_default": module.serve})


def write_corrupt_version(base_path: str | Path, version: int) -> Path:
    """A version directory that looks complete but cannot load (garbage graph, empty variables)."""
    final = Path(base_path) / str(version)
    with atomic_directory(final, overwrite=True) as tmp:
        (tmp / "variables").mkdir()
        (tmp / "saved_model.pb").write_bytes(b"\x08this is not a SavedModel protocol buffer")
    return final
