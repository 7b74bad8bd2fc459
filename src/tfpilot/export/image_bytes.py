"""The `image_bytes` signature: encoded JPEG/PNG strings in, predictions out.

Most TF Serving image clients send the file bytes (`{"image_bytes": {"b64": "..."}}` over REST,
a DT_STRING tensor over gRPC), not pre-resized pixels. Decoding and resizing happen inside the
graph with the same function the training pipeline used (tfpilot.data.image_resize), so a
served JPEG is treated exactly like a training file. Add `image_bytes` to export.signatures.
"""

from __future__ import annotations

from collections.abc import Callable

import keras
import tensorflow as tf

from tfpilot.data.image_resize import decode_and_resize
from tfpilot.data.preprocessing import Preprocessor
from tfpilot.errors import ExportError
from tfpilot.export.saved_model import register_endpoint
from tfpilot.export.signatures import class_logits, serving_outputs

__all__ = ["IMAGE_BYTES_INPUT", "make_image_bytes_fn", "add_image_bytes_endpoint"]

IMAGE_BYTES_INPUT = "image_bytes"


def make_image_bytes_fn(model: keras.Model, preprocessor: Preprocessor, class_names: list[str]) -> Callable:
    if preprocessor.kind != "image" or "image" not in preprocessor.feature_spec:
        raise ExportError(
            f"the `image_bytes` signature needs an image model, got `{preprocessor.kind}` data; remove "
            "`image_bytes` from export.signatures",
            exit_code=2,
        )
    height, width, channels = (int(d) for d in preprocessor.feature_spec["image"]["shape"])
    mode = str(preprocessor.extra.get("resize", "stretch"))

    def serve(encoded: tf.Tensor) -> dict[str, tf.Tensor]:
        images = tf.map_fn(
            lambda data: decode_and_resize(data, height=height, width=width, channels=channels, mode=mode),
            encoded,
            fn_output_signature=tf.TensorSpec([height, width, channels], tf.uint8),
        )
        # Binary: the one logit z as [0, z], as serving_default serves it.
        logits = class_logits(model(preprocessor({"image": images}), training=False), preprocessor)
        return serving_outputs(logits, class_names)

    return serve


def add_image_bytes_endpoint(
    archive: keras.export.ExportArchive, model: keras.Model, preprocessor: Preprocessor, class_names: list[str]
) -> None:
    archive.add_endpoint(
        IMAGE_BYTES_INPUT,
        make_image_bytes_fn(model, preprocessor, class_names),
        input_signature=[tf.TensorSpec([None], tf.string, name=IMAGE_BYTES_INPUT)],
    )


register_endpoint(IMAGE_BYTES_INPUT, add_image_bytes_endpoint)
