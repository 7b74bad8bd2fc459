"""TF Serving warmup records: assets.extra/tf_serving_warmup_requests.

TF Serving (and tfpilot serve) replays this TFRecord file of PredictionLog protos when a version
loads, so the first user request does not pay for graph initialisation. The requests are real
validation examples, batch 1, on serving_default; when classify/regress/image_bytes were exported
one request of each is added (image_bytes: a real example encoded as PNG), so those signatures are
warm too. TF Serving reads at most 1000 records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tfpilot.data.names import signature_key
from tfpilot.savedmodel.warmup import MAX_WARMUP_RECORDS, WARMUP_PATH, read_warmup_records, write_warmup_records

# The file's location, limit, reader and writer belong to tfpilot.savedmodel (the server reads the
# same file); they are re-exported here because export's callers have always found them here.
__all__ = [
    "WARMUP_PATH",
    "MAX_WARMUP_RECORDS",
    "build_warmup_records",
    "write_warmup_records",
    "read_warmup_records",
    "warmup_hook",
]

DEFAULT_WARMUP_REQUESTS = 10
# Examples per classify/regress warmup request: enough to exercise the batched parse path.
EXAMPLES_PER_REQUEST = 4


def build_warmup_records(
    *, features: dict[str, np.ndarray], count: int, signatures: list[str], model_name: str = ""
) -> list[Any]:
    """PredictionLog protos: ``count`` batch-1 predict requests cycling through the rows of ``features``."""
    import tensorflow as tf
    from tensorflow_serving.apis import (
        classification_pb2,
        input_pb2,
        model_pb2,
        predict_pb2,
        prediction_log_pb2,
        regression_pb2,
    )

    from tfpilot.export.tf_example import to_examples

    rows = len(next(iter(features.values())))
    records = []
    for index in range(min(count, MAX_WARMUP_RECORDS)):
        row = index % rows
        request = predict_pb2.PredictRequest(
            model_spec=model_pb2.ModelSpec(name=model_name, signature_name="serving_default")
        )
        for name, values in features.items():
            request.inputs[signature_key(name)].CopyFrom(tf.make_tensor_proto(np.asarray(values[row : row + 1])))
        records.append(prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request)))
    if count == 0:
        return records
    if "image_bytes" in signatures and "image" in features and len(records) < MAX_WARMUP_RECORDS:
        # The encoded-image signature decodes and resizes inside the graph: warm that path with a PNG
        # of a real example, as an image client would send it.
        png = tf.io.encode_png(np.asarray(features["image"][0], dtype=np.uint8)).numpy()
        request = predict_pb2.PredictRequest(
            model_spec=model_pb2.ModelSpec(name=model_name, signature_name="image_bytes")
        )
        request.inputs["image_bytes"].CopyFrom(tf.make_tensor_proto([png], dtype=tf.string))
        records.append(prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request)))
    head = {name: np.asarray(values[:EXAMPLES_PER_REQUEST]) for name, values in features.items()}
    examples = input_pb2.Input(
        example_list=input_pb2.ExampleList(examples=[tf.train.Example.FromString(e) for e in to_examples(head)])
    )
    if "classify" in signatures and len(records) < MAX_WARMUP_RECORDS:
        request = classification_pb2.ClassificationRequest(
            model_spec=model_pb2.ModelSpec(name=model_name, signature_name="classify"), input=examples
        )
        records.append(prediction_log_pb2.PredictionLog(classify_log=prediction_log_pb2.ClassifyLog(request=request)))
    if "regress" in signatures and len(records) < MAX_WARMUP_RECORDS:
        request = regression_pb2.RegressionRequest(
            model_spec=model_pb2.ModelSpec(name=model_name, signature_name="regress"), input=examples
        )
        records.append(prediction_log_pb2.PredictionLog(regress_log=prediction_log_pb2.RegressLog(request=request)))
    return records


def _validation_features(trained: Any, count: int) -> dict[str, np.ndarray] | None:
    pipeline = trained.pipeline
    split = "validation" if pipeline.num_examples("validation") else "train"
    rows = list(pipeline.raw(split).take(max(count, EXAMPLES_PER_REQUEST)))
    if not rows:
        return None
    return {
        name: np.stack([features[name].numpy() for features, _ in rows]) for name in pipeline.preprocessor.feature_spec
    }


def warmup_hook(
    version_dir: Path, *, signatures: list[str], sample_features: dict[str, np.ndarray], trained: Any = None, **_: Any
) -> None:
    """Post-write hook: warmup records from validation data (the export's sample features without a run)."""
    count = trained.config.export.warmup_requests if trained is not None else DEFAULT_WARMUP_REQUESTS
    if count == 0:
        return
    features = (_validation_features(trained, count) if trained is not None else None) or sample_features
    model_name = trained.config.name if trained is not None else ""
    write_warmup_records(
        version_dir, build_warmup_records(features=features, count=count, signatures=signatures, model_name=model_name)
    )
