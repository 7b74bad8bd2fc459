"""The one place tfpilot reaches into private TensorFlow and Keras APIs.

Each entry names what it uses and why no public API does the same; a failed lookup raises a
one-line error naming the installed version and the tfpilot feature that needs it
(tests/unit/test_tf_private.py checks that each still exists and behaves as used).
"""

from __future__ import annotations

from typing import Any

__all__ = ["PrivateApiMissing", "build_compile_state", "load_graph_without_variables", "validation_split_of"]


class PrivateApiMissing(RuntimeError):
    """A private TensorFlow/Keras API tfpilot relies on is gone in the installed version."""


def _missing(what: str, feature: str) -> PrivateApiMissing:
    import keras
    import tensorflow as tf

    return PrivateApiMissing(
        f"{feature} needs {what}, which Keras {keras.__version__} / TensorFlow {tf.__version__} no longer has; "
        "install the versions tfpilot pins (pyproject.toml) or report it"
    )


def build_compile_state(model: Any, data: Any) -> None:
    """Create the variables of the compiled loss and metrics from one batch (symbolically).

    Why: on one device Keras defers this to the first trace of the train step
    (TensorFlowTrainer._maybe_symbolic_build returns early without a strategy), so the metric
    variables do not exist yet when tfpilot's NaN guard lists the state a step may change.
    Uses Trainer._symbolic_build(data_batch=...), the same call fit makes under a strategy.
    """
    build = getattr(model, "_symbolic_build", None)
    if build is None:
        raise _missing("keras.Model._symbolic_build", "tfpilot.fit's NaN guard")
    build(data_batch=data)


def validation_split_of(arrays: tuple[Any, Any, Any], validation_split: float) -> Any:
    """The (x, y, sample_weight) rows model.fit holds out for `validation_split`.

    Why: tfpilot.fit keeps the validation rows for `tfpilot evaluate`; they must be exactly the
    rows Keras held out, and Keras' own split (array_slicing.train_validation_split) is the only
    place that says which (the last rows, before shuffling)."""
    try:
        from keras.src.trainers.data_adapters import array_slicing
    except ImportError:
        raise _missing(
            "keras.src.trainers.data_adapters.array_slicing", "keeping tfpilot.fit's validation_split rows"
        ) from None
    _, validation = array_slicing.train_validation_split(arrays, validation_split=validation_split)
    return validation


def load_graph_without_variables(session: Any, tags: list[str], path: str) -> None:
    """Load a SavedModel's graph into `session` and run its init ops, restoring no checkpoint.

    Why: a SavedModel without variables/ (a frozen graph, an ONNX conversion, a copy through git,
    which keeps no empty directory) is what TF Serving loads by skipping the restore when
    variables/variables.index is absent (its C++ loader); tf.saved_model.load and the TF1
    loader.load both insist on the checkpoint. SavedModelLoader's load_graph and run_init_ops
    are the two halves of loader.load without the restore in between."""
    try:
        from tensorflow.python.saved_model.loader_impl import SavedModelLoader
    except ImportError:
        raise _missing(
            "tensorflow.python.saved_model.loader_impl.SavedModelLoader", "serving a SavedModel without variables/"
        ) from None
    loader = SavedModelLoader(path)
    loader.load_graph(session.graph, tags)
    loader.run_init_ops(session, tags)
