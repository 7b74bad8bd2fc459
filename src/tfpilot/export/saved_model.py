"""Write a verified SavedModel version: keras ExportArchive, atomic, checked twice.

tf.saved_model.save on a Keras 3 model loads in Python but fails in the loader TF Serving and
`saved_model_cli run` use, so tfpilot always writes through keras.export.ExportArchive and then
proves the artifact with both loaders before the version directory appears.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from tfpilot.data.preprocessing import Preprocessor
from tfpilot.errors import ExportError
from tfpilot.export.signatures import (
    CLASSIFY_METHOD,
    PREDICT_METHOD,
    REGRESS_METHOD,
    add_classify_endpoint,
    add_regress_endpoint,
    make_logits_fn,
    make_serving_fn,
)
from tfpilot.export.tolerance import tolerance_for_model
from tfpilot.export.verify import verify_saved_model, verify_serving_methods, verify_warmup_records
from tfpilot.savedmodel.method_names import set_method_names
from tfpilot.savedmodel.versions import next_version
from tfpilot.savedmodel.warmup import WARMUP_PATH
from tfpilot.savedmodel.write import claim_version, write_verified_version

__all__ = [
    "ExportResult",
    "export_saved_model",
    "next_version",
    "EndpointBuilder",
    "register_endpoint",
    "register_post_write",
]

# Extra signatures (classify, regress, ...) plug in here: name -> builder(archive, model, preprocessor, class_names).
EndpointBuilder = Callable[[keras.export.ExportArchive, keras.Model, Preprocessor, list[str]], None]
_EXTRA_ENDPOINTS: dict[str, EndpointBuilder] = {}
_METHOD_NAMES: dict[str, str] = {}
# Hooks run on the temporary version directory before verification (warmup records, contract).
# Each is called as hook(tmp_dir, model=, preprocessor=, class_names=, signatures=, version=,
# sample_features=, **post_write_context) and must accept **kwargs it does not use.
_POST_WRITE: list[Callable[..., None]] = []


@dataclasses.dataclass
class ExportResult:
    path: Path
    version: int
    signatures: list[str]
    max_abs_difference: float
    sampled_outputs: list[str] = dataclasses.field(default_factory=list)  # sample at inference: shape-checked


def register_endpoint(name: str, builder: EndpointBuilder, *, method_name: str = PREDICT_METHOD) -> None:
    """Add a signature builder; ``method_name`` is written into the MetaGraph (classify/regress/predict)."""
    _EXTRA_ENDPOINTS[name] = builder
    _METHOD_NAMES[name] = method_name


def register_post_write(hook: Callable[..., None]) -> None:
    if hook not in _POST_WRITE:
        _POST_WRITE.append(hook)


def export_saved_model(
    *,
    model: keras.Model,
    preprocessor: Preprocessor,
    class_names: list[str],
    base_path: str | Path,
    sample_features: dict[str, np.ndarray],
    version: int | None = None,
    signatures: list[str] | None = None,
    post_write_context: dict | None = None,
) -> ExportResult:
    """Export to base_path/<version>/ and verify it against the in-memory model on ``sample_features``."""
    version, target = claim_version(base_path, version)
    wanted = list(dict.fromkeys(signatures or ["serving_default"]))
    unknown = [s for s in wanted if s not in ("serving_default", "logits", *_EXTRA_ENDPOINTS)]
    if unknown:
        raise ExportError(
            f"unknown signature(s) {unknown}; expected serving_default, logits or {sorted(_EXTRA_ENDPOINTS)}",
            exit_code=2,
        )
    input_signature = list(preprocessor.input_signature(batched=True).values())

    archive = keras.export.ExportArchive()
    archive.track(model)
    # Lookup tables of the preprocessor (text vocabularies) are resources, not variables: the archive
    # saves them, and adds their initializer to the init op the session loader runs, only if tracked.
    if getattr(preprocessor, "trackable", None) is not None:
        archive.track(preprocessor.trackable)
    archive.add_endpoint(
        "serving_default", make_serving_fn(model, preprocessor, class_names), input_signature=input_signature
    )
    if "logits" in wanted:
        archive.add_endpoint("logits", make_logits_fn(model, preprocessor), input_signature=input_signature)
    for name in wanted:
        if name in _EXTRA_ENDPOINTS:
            _EXTRA_ENDPOINTS[name](archive, model, preprocessor, class_names)
    method_names = {n: _METHOD_NAMES[n] for n in wanted if n in _METHOD_NAMES and _METHOD_NAMES[n] != PREDICT_METHOD}
    written = ["serving_default", *[s for s in wanted if s != "serving_default"]]

    expected = make_serving_fn(model, preprocessor, class_names)(
        *[tf.constant(sample_features[n]) for n in preprocessor.feature_spec]
    )

    def finish_and_verify(tmp: Path) -> float:
        set_method_names(tmp, method_names)
        for hook in _POST_WRITE:
            hook(
                tmp,
                model=model,
                preprocessor=preprocessor,
                class_names=class_names,
                signatures=written,
                version=version,
                sample_features=sample_features,
                **(post_write_context or {}),
            )
        tolerance = tolerance_for_model(model)
        max_diff = verify_saved_model(tmp, sample_features=sample_features, expected=expected, tolerance=tolerance)
        max_diff = max(
            max_diff,
            verify_serving_methods(
                tmp,
                sample_features=sample_features,
                expected=expected,
                method_names=method_names,
                tolerance=tolerance,
            ),
        )
        warmup_file = tmp / WARMUP_PATH
        if warmup_file.exists():
            verify_warmup_records(tmp, warmup_file=warmup_file)
        return max_diff

    max_diff = write_verified_version(archive, target, finish_and_verify)
    return ExportResult(path=target, version=version, signatures=written, max_abs_difference=max_diff)


register_endpoint("classify", add_classify_endpoint, method_name=CLASSIFY_METHOD)
register_endpoint("regress", add_regress_endpoint, method_name=REGRESS_METHOD)
