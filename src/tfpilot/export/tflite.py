"""TFLite variants of the core model (preprocessed float input -> logits).

The TFLite graph starts after preprocessing: string lookups, vocabularies and CSV parsing stay
in tfpilot's preprocessor (preprocessing.json), because string ops would need the Flex delegate,
which no interpreter here has. For images the preprocessing is a /255 scale, so int8
calibration sees [0, 1] floats drawn from the real training pipeline.

Variants (TFLite's post-training quantization guide):
  tflite          float32
  tflite-dynamic  int8 weights, float activations (dynamic range)
  tflite-int8     int8 weights and activations, int8 input/output, calibrated on training batches
  tflite-fp16     float16 weights
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import keras
import numpy as np

from tfpilot.errors import ExportError

__all__ = ["TFLITE_VARIANTS", "tflite_filename", "convert_tflite", "export_core_saved_model"]

TFLITE_VARIANTS = ("tflite", "tflite-dynamic", "tflite-int8", "tflite-fp16")
_FLEX_HINT = re.compile(r"(Flex|Select TF|SELECT_TF_OPS|tf\.\w*String\w*|tf\.\w*Lookup\w*|custom ops)", re.IGNORECASE)


def tflite_filename(variant: str) -> str:
    return "model.tflite" if variant == "tflite" else f"model-{variant.removeprefix('tflite-')}.tflite"


def export_core_saved_model(
    model: keras.Model, path: str | Path, *, input_shape: tuple[int, ...], input_dtype: str = "float32"
) -> Path:
    """The converter's input: the core model alone, written through ExportArchive (a plain
    tf.saved_model.save of a Keras 3 model converts to a TFLite file that outputs NaN)."""
    import tensorflow as tf

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        "serving_default",
        lambda x: {"logits": tf.cast(model(x, training=False), tf.float32)},
        input_signature=[tf.TensorSpec([None, *input_shape], tf.as_dtype(input_dtype), name="input")],
    )
    archive.write_out(str(path), verbose=False)
    return Path(path)


def convert_tflite(
    model: keras.Model,
    *,
    variant: str,
    input_shape: tuple[int, ...],
    representative_batches: Callable[[], Iterable[np.ndarray]] | None = None,
    input_dtype: str = "float32",
) -> bytes:
    """Convert ``model`` to one TFLite variant; int8 needs ``representative_batches`` (a callable
    returning an iterable of preprocessed input batches)."""
    import tensorflow as tf

    if variant not in TFLITE_VARIANTS:
        raise ExportError(f"unknown TFLite variant `{variant}`; expected one of {list(TFLITE_VARIANTS)}", exit_code=2)
    if input_dtype == "string":
        raise ExportError(
            "the model's own input is a string tensor; TFLite would need the Flex delegate for string ops, which no "
            "interpreter here has; move tokenisation/lookups into tfpilot's preprocessor (data.text) so the model takes ids"
        )
    with tempfile.TemporaryDirectory(prefix="tfpilot-tflite-") as tmp:
        core = export_core_saved_model(model, Path(tmp) / "core", input_shape=input_shape, input_dtype=input_dtype)
        converter = tf.lite.TFLiteConverter.from_saved_model(str(core))
        # Builtins only: a Flex op would make the file unusable with the interpreters we ship to.
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        if variant != "tflite":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if variant == "tflite-fp16":
            converter.target_spec.supported_types = [tf.float16]
        if variant == "tflite-int8":
            if representative_batches is None:
                raise ExportError("tflite-int8 needs representative batches from the training pipeline", exit_code=2)

            def dataset():
                for batch in representative_batches():
                    yield [np.asarray(batch, np.float32)]

            converter.representative_dataset = dataset
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            converter.inference_input_type = tf.int8
            converter.inference_output_type = tf.int8
        try:
            return converter.convert()
        except Exception as exc:
            text = str(exc)
            if _FLEX_HINT.search(text):
                ops = sorted(set(re.findall(r"tf\.[A-Za-z0-9_]+", text)))[:6]
                raise ExportError(
                    f"{variant}: the model uses TensorFlow ops with no TFLite builtin ({', '.join(ops) or 'see converter log'}); "
                    "they would need the Flex delegate, which no interpreter here has; keep string preprocessing in tfpilot's "
                    "preprocessor (outside the model) or replace the op"
                ) from None
            first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
            raise ExportError(f"{variant}: TFLite conversion failed ({first})") from None
