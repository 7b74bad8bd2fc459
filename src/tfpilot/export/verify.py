"""Verify a SavedModel with the two loaders that matter.

1. tf.saved_model.load (Python, TF2): outputs must match the in-memory model within a tolerance
   derived from the model's compute dtype (tfpilot.export.tolerance).
2. The v1 session loader (tf.compat.v1.saved_model.loader), the path `saved_model_cli run` and
   TF Serving's SavedModelBundle take: load the MetaGraph, restore variables, run the
   serving_default signature by tensor names. A Keras 3 model saved with tf.saved_model.save
   fails here, which is exactly what this check exists to catch.
"""

from __future__ import annotations

# The TF1 session loader is used on purpose: it is the loader TF Serving's C++ path mirrors.
# tfpilot: noqa-file[TFP601,TFP602,TFP610]
from pathlib import Path

import numpy as np
import tensorflow as tf

from tfpilot.data.names import signature_key
from tfpilot.errors import ExportError
from tfpilot.export.tolerance import Tolerance, tolerance_for_dtype

__all__ = ["verify_saved_model", "run_with_session_loader", "verify_serving_methods", "verify_warmup_records"]

# Used when a caller does not say what the model computes in.
DEFAULT_TOLERANCE = tolerance_for_dtype("float32")


def run_with_session_loader(
    path: str | Path, feeds: dict[str, np.ndarray], *, signature: str = "serving_default"
) -> dict[str, np.ndarray]:
    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as session:
        # The loader logs a deprecation notice on every call; it is used on purpose here.
        logger = tf.get_logger()
        level = logger.level
        logger.setLevel("ERROR")
        try:
            meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], str(path))
        finally:
            logger.setLevel(level)
        signature_def = meta_graph.signature_def[signature]
        feed_dict = {signature_def.inputs[signature_key(name)].name: value for name, value in feeds.items()}
        fetches = {name: info.name for name, info in signature_def.outputs.items()}
        return session.run(fetches, feed_dict=feed_dict)


def verify_saved_model(
    path: str | Path,
    *,
    sample_features: dict[str, np.ndarray],
    expected: dict[str, tf.Tensor],
    tolerance: Tolerance = DEFAULT_TOLERANCE,
) -> float:
    """Return the largest absolute difference of `probabilities` (a regression: `predictions`) across both loaders."""
    try:
        loaded = tf.saved_model.load(str(path))
        reloaded = loaded.signatures["serving_default"](
            **{signature_key(k): tf.constant(v) for k, v in sample_features.items()}
        )
    except Exception as exc:
        raise ExportError(f"exported SavedModel at `{path}` does not reload in Python: {exc}") from None
    key = _primary_output(expected)
    want = np.asarray(expected[key])
    diff_python, within = tolerance.excess(reloaded[key].numpy(), want)
    if not within:
        raise ExportError(
            f"reloaded SavedModel differs from the in-memory model by {diff_python:.2e}, beyond "
            f"{tolerance.describe()}; export is not faithful"
        )
    session_out = session_outputs(
        path,
        sample_features,
        hint="; export Keras 3 models with keras.export.ExportArchive, not tf.saved_model.save",
    )
    diff_session, within = tolerance.excess(session_out[key], want)
    if not within:
        raise ExportError(
            f"session-loader output differs from the in-memory model by {diff_session:.2e}, beyond {tolerance.describe()}"
        )
    if "class_id" in expected and not np.array_equal(session_out["class_id"], np.asarray(expected["class_id"])):
        raise ExportError("session-loader class_id differs from the in-memory model")
    return max(diff_python, diff_session)


def session_outputs(
    path: str | Path, feeds: dict[str, np.ndarray], *, hint: str = "", shown_as: str | Path | None = None
) -> dict[str, np.ndarray]:
    """run_with_session_loader, its failure an ExportError naming the first line of TF's message."""
    try:
        return run_with_session_loader(path, feeds)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ExportError(
            f"exported SavedModel at `{shown_as or path}` fails in the session loader TF Serving uses ({first}){hint}"
        ) from None


def _primary_output(expected: dict[str, tf.Tensor]) -> str:
    return "probabilities" if "probabilities" in expected else "predictions"


def verify_serving_methods(
    path: str | Path,
    *,
    sample_features: dict[str, np.ndarray],
    expected: dict[str, tf.Tensor],
    method_names: dict[str, str],
    tolerance: Tolerance = DEFAULT_TOLERANCE,
) -> float:
    """classify/regress: right method_name in the MetaGraph, same scores as serving_default in both loaders."""
    from tfpilot.export.signatures import EXAMPLES_INPUT
    from tfpilot.export.tf_example import to_examples
    from tfpilot.savedmodel.metagraph import read_signature_defs

    if not method_names:
        return 0.0
    signature_defs = read_signature_defs(path)
    examples = np.array(to_examples(sample_features), dtype=object)
    primary = np.asarray(expected[_primary_output(expected)])
    loaded = tf.saved_model.load(str(path))
    worst = 0.0
    for name, method in method_names.items():
        if signature_defs[name].method_name != method:
            raise ExportError(
                f"signature `{name}` has method_name `{signature_defs[name].method_name}`, expected `{method}`"
            )
        python_out = {
            k: v.numpy() for k, v in loaded.signatures[name](**{EXAMPLES_INPUT: tf.constant(examples)}).items()
        }
        try:
            session_out = run_with_session_loader(path, {EXAMPLES_INPUT: examples}, signature=name)
        except Exception as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ExportError(
                f"signature `{name}` of `{path}` fails in the session loader TF Serving uses ({first})"
            ) from None
        if "scores" in python_out:
            key, want = "scores", primary
        else:
            # regress: a regression's predictions, or a binary classifier's P(second class).
            key, want = "outputs", primary if primary.ndim == 1 else primary[:, 1]
        for loader, out in (("Python", python_out), ("session", session_out)):
            diff, within = tolerance.excess(out[key], want)
            if not within:
                raise ExportError(
                    f"signature `{name}` ({loader} loader) differs from serving_default by {diff:.2e} on the same "
                    f"examples, beyond {tolerance.describe()}"
                )
            worst = max(worst, diff)
    return worst


def verify_warmup_records(path: str | Path, *, warmup_file: str | Path) -> int:
    """Every record parses as a PredictionLog; the first predict request runs in the session loader."""
    from tensorflow_serving.apis import prediction_log_pb2

    records = []
    try:
        for raw in tf.data.TFRecordDataset(str(warmup_file)):
            records.append(prediction_log_pb2.PredictionLog.FromString(raw.numpy()))
    except Exception as exc:
        raise ExportError(f"warmup file `{warmup_file}` is not a TFRecord of PredictionLog: {exc}") from None
    predicts = [r for r in records if r.WhichOneof("log_type") == "predict_log"]
    if predicts:
        request = predicts[0].predict_log.request
        feeds = {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}
        try:
            run_with_session_loader(path, feeds, signature=request.model_spec.signature_name or "serving_default")
        except Exception as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ExportError(
                f"warmup record 0 does not run against `{path}` in the session loader ({first})"
            ) from None
    return len(records)
