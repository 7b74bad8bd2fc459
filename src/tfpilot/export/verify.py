"""Verify a SavedModel with the two loaders that matter.

1. tf.saved_model.load (Python, TF2): outputs must match the in-memory model (atol 1e-5).
2. The v1 session loader (tf.compat.v1.saved_model.loader), the path `saved_model_cli run` and
   TF Serving's SavedModelBundle take: load the MetaGraph, restore variables, run the
   serving_default signature by tensor names. A Keras 3 model saved with tf.saved_model.save
   fails here, which is exactly what this check exists to catch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from tfpilot.errors import ExportError

__all__ = ["verify_saved_model", "run_with_session_loader"]

ATOL = 1e-5


def run_with_session_loader(path: str | Path, feeds: dict[str, np.ndarray], *, signature: str = "serving_default") -> dict[str, np.ndarray]:
    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], str(path))
        signature_def = meta_graph.signature_def[signature]
        feed_dict = {signature_def.inputs[name].name: value for name, value in feeds.items()}
        fetches = {name: info.name for name, info in signature_def.outputs.items()}
        return session.run(fetches, feed_dict=feed_dict)


def verify_saved_model(path: str | Path, *, sample_features: dict[str, np.ndarray], expected: dict[str, tf.Tensor]) -> float:
    """Return the largest absolute difference of `probabilities` across both loaders."""
    try:
        loaded = tf.saved_model.load(str(path))
        reloaded = loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in sample_features.items()})
    except Exception as exc:
        raise ExportError(f"exported SavedModel at `{path}` does not reload in Python: {exc}") from None
    want = np.asarray(expected["probabilities"])
    diff_python = float(np.max(np.abs(reloaded["probabilities"].numpy() - want)))
    if diff_python > ATOL:
        raise ExportError(f"reloaded SavedModel differs from the in-memory model by {diff_python:.2e} (> {ATOL}); export is not faithful")
    try:
        session_out = run_with_session_loader(path, sample_features)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ExportError(
            f"exported SavedModel at `{path}` fails in the session loader TF Serving uses ({first}); "
            "export Keras 3 models with keras.export.ExportArchive, not tf.saved_model.save"
        ) from None
    diff_session = float(np.max(np.abs(session_out["probabilities"] - want)))
    if diff_session > ATOL:
        raise ExportError(f"session-loader output differs from the in-memory model by {diff_session:.2e} (> {ATOL})")
    if not np.array_equal(session_out["class_id"], np.asarray(expected["class_id"])):
        raise ExportError("session-loader class_id differs from the in-memory model")
    return max(diff_python, diff_session)
