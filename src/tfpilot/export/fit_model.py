"""Export a `tfpilot.fit` run: the user's own model, with signatures from its data's element_spec.

The serving inputs are the data's features (names, dtypes and per-example shapes from the
element_spec the model trained on, batch dimension None); the outputs are the model's outputs,
keyed by its output names. The model is reloaded from the run's .keras archive in safe mode, so
the export runs in a fresh process (`tfpilot export RUN`) from files alone. As every tfpilot
export, it is written through keras.export.ExportArchive and proven with both loaders (Python and
the session loader TF Serving uses) before the version directory appears.
"""

from __future__ import annotations

import collections
import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tfpilot.atomic import atomic_directory
from tfpilot.errors import ExportError
from tfpilot.export.saved_model import ExportResult
from tfpilot.export.tolerance import tolerance_for_model
from tfpilot.export.verify import session_outputs
from tfpilot.rundir import RunDir
from tfpilot.savedmodel.write import claim_version, write_verified_version

__all__ = ["export_fit_run", "fit_serving_fn", "fit_input_signature", "write_verified"]


def fit_input_signature(spec: dict[str, Any]) -> list[tf.TensorSpec]:
    return [tf.TensorSpec(shape=i["shape"], dtype=tf.as_dtype(i["dtype"]), name=i["key"]) for i in spec["inputs"]]


def _features(spec: dict[str, Any], tensors: tuple[tf.Tensor, ...]) -> Any:
    """The feature structure the model was called with during training, from flat signature inputs."""
    if spec["features"] in ("dict", "ordered_dict"):
        by_name = {i["name"]: tensor for i, tensor in zip(spec["inputs"], tensors, strict=True)}
        if spec["features"] == "ordered_dict" and sorted(spec.get("order") or []) == sorted(by_name):
            # as the model received it in training: keras.tree flattens an OrderedDict in its own order
            return collections.OrderedDict((name, by_name[name]) for name in spec["order"])
        return by_name
    if spec["features"] == "tensor":
        return tensors[0]
    return list(tensors)


def _output_names(spec: dict[str, Any], outputs: Any) -> list[str]:
    names = list(spec.get("outputs") or [])
    count = len(tf.nest.flatten(outputs))
    return names if len(names) == count else (["outputs"] if count == 1 else [f"output_{i}" for i in range(count)])


def fit_serving_fn(model: keras.Model, spec: dict[str, Any]) -> Any:
    """fn(*inputs) -> {output name: tensor}, the model in inference mode."""

    def serve(*tensors: tf.Tensor) -> dict[str, tf.Tensor]:
        outputs = model(_features(spec, tensors), training=False)
        if isinstance(outputs, dict):
            return {str(name): value for name, value in outputs.items()}
        return dict(zip(_output_names(spec, outputs), tf.nest.flatten(outputs), strict=True))

    return serve


def _sample(run: RunDir, spec: dict[str, Any]) -> dict[str, np.ndarray]:
    if not run.fit_sample_path.is_file():
        raise ExportError(f"run `{run.root}` has no {run.fit_sample_path.name}; train it again with tfpilot.fit")
    with np.load(run.fit_sample_path, allow_pickle=False) as stored:
        return {i["key"]: stored[i["key"]] for i in spec["inputs"]}


def _worst(
    actual: dict[str, np.ndarray], expected: dict[str, np.ndarray], *, tolerance: Any, loader: str, path: Path
) -> float:
    worst = 0.0
    for name, want in expected.items():
        if name not in actual:
            raise ExportError(f"the SavedModel at `{path}` has no output `{name}` in the {loader}")
        diff, within = tolerance.excess(np.asarray(actual[name]), want)
        if not within:
            raise ExportError(
                f"output `{name}` of the SavedModel ({loader}) differs from the in-memory model by {diff:.2e}, "
                f"beyond {tolerance.describe()}; export is not faithful"
            )
        worst = max(worst, diff)
    return worst


def write_verified(model: keras.Model, spec: dict[str, Any], sample: dict[str, np.ndarray], target: Path) -> Verified:
    """Write `model`'s serving SavedModel to `target` (atomically) and prove it with both loaders
    against the model itself on `sample`; returns the largest difference seen and the outputs that
    sample at inference."""
    # Traced, as model.predict runs the model and as both loaders run the SavedModel: the same graph optimizations on
    # each side. Run eagerly op by op, an FFT-heavy model (STFT inside) differed from its own graph by 7e-4.
    from tfpilot.train.fit.guarded_step import states_kept

    serve = tf.function(fit_serving_fn(model, spec), autograph=False)
    feeds = [tf.constant(sample[i["key"]]) for i in spec["inputs"]]

    def call(function: Any) -> dict[str, np.ndarray]:
        # each call from the state the model holds now (a stateful RNN's advance is put back), which the
        # archive then saves: both loaders start from it too
        with states_kept(model):
            return {name: np.asarray(value) for name, value in function(*feeds).items()}

    try:
        try:
            expected = call(serve)
        except (tf.errors.OpError, ValueError, TypeError):
            if not (spec.get("jit_compile") or getattr(model, "jit_compile", False)):
                raise
            # Compiled with jit_compile=True, the model trains and predicts under XLA, and some run
            # only there (a channels_first Conv on CPU: TensorFlow's own kernel supports NHWC only).
            # The serving function is then XLA-compiled too, which both loaders run.
            serve = tf.function(fit_serving_fn(model, spec), jit_compile=True, autograph=False)
            expected = call(serve)
    except (tf.errors.OpError, ValueError, TypeError) as exc:
        from tfpilot.train.fit.artifacts import first_line  # the fit run's own one-line errors

        rows = len(next(iter(sample.values()))) if sample else 0
        raise ExportError(
            f"the model fails on the run's {rows} sample rows in inference mode, so no export can be verified "
            f"against it: {first_line(exc)}"
        ) from None
    tolerance = tolerance_for_model(model)
    again = call(serve)
    sampled = tuple(name for name, value in again.items() if not tolerance.excess(value, expected[name])[1])
    tolerance = tolerance.widened_by(_own_spread(call, fit_serving_fn(model, spec), expected, sampled))
    if sampled and len(sampled) == len(again):
        # No SavedModel can be proven equal to a model whose every answer changes from call to call.
        raise ExportError(
            f"the model's output `{sampled[0]}` differs between two inference calls on the same input (it samples "
            "even with training=False, as a VAE's Sampling layer does), so no export can be verified against "
            "it; export the deterministic part you serve (e.g. the decoder, or the encoder's mean)"
        )
    # A VAE returning (z_mean, z_log_var, ..., a decoded sample): the outputs that sample are served as
    # model.predict computes them (a new draw per call) and checked for shape and dtype; the others are proven.
    shapes = {name: (expected[name].shape, expected[name].dtype) for name in sampled}
    expected = {name: value for name, value in expected.items() if name not in sampled}
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serving_default", serve, input_signature=fit_input_signature(spec))

    def verify(tmp: Path) -> float:
        try:
            loaded = tf.saved_model.load(str(tmp))
            python_out = {
                k: v.numpy()
                for k, v in loaded.signatures["serving_default"](**dict(zip(sample, feeds, strict=True))).items()
            }
        except Exception as exc:
            raise ExportError(f"exported SavedModel at `{tmp}` does not reload in Python: {exc}") from None
        _same_shapes(python_out, shapes, loader="Python loader", path=target)
        worst = _worst(python_out, expected, tolerance=tolerance, loader="Python loader", path=target)
        return max(worst, _session_check(tmp, sample, expected, tolerance=tolerance, target=target))

    return Verified(write_verified_version(archive, target, verify), sampled)


def _own_spread(
    call: Callable[[Any], dict[str, np.ndarray]],
    eager: Any,
    traced: dict[str, np.ndarray],
    sampled: tuple[str, ...],
) -> float:
    """How far the model run eagerly is from the same model traced, over the outputs that do not sample: the
    numerical noise of this model's own computation (0 where it only runs traced)."""
    try:
        ran = call(eager)
    except Exception:  # noqa: BLE001 - a model that runs only traced (XLA-only ops): no eager reference
        return 0.0
    spreads = [
        float(np.max(np.abs(np.asarray(ran[name], np.float64) - np.asarray(value, np.float64))))
        for name, value in traced.items()
        if name not in sampled and name in ran and np.asarray(value).size and np.asarray(value).dtype.kind == "f"
    ]
    return max(spreads, default=0.0)


@dataclasses.dataclass(frozen=True)
class Verified:
    """What write_verified proved: the largest difference, and the outputs that sample at inference
    (checked for shape and dtype only: two calls of the model itself give two answers)."""

    worst: float
    sampled: tuple[str, ...] = ()


def _same_shapes(
    actual: dict[str, Any], shapes: dict[str, tuple[tuple[int, ...], np.dtype]], *, loader: str, path: Path
) -> None:
    for name, (shape, dtype) in shapes.items():
        value = np.asarray(actual[name]) if name in actual else None
        if value is None or value.shape != shape or value.dtype != dtype:
            got = "nothing" if value is None else f"{value.dtype}{list(value.shape)}"
            raise ExportError(
                f"output `{name}` of the SavedModel ({loader}) at `{path}` is {got}, the model's is {dtype}{list(shape)}"
            )


def _session_check(
    path: Path, sample: dict[str, np.ndarray], expected: dict[str, np.ndarray] | None, *, tolerance: Any, target: Path
) -> float:
    session_out = session_outputs(path, sample, shown_as=target)
    if expected is None:
        return 0.0
    return _worst(session_out, expected, tolerance=tolerance, loader="session loader", path=target)


def export_fit_run(run: RunDir, *, version: int | None = None, extra_modules: list[str] | None = None) -> ExportResult:
    """Write and verify model/<version>/ for a tfpilot.fit run: from its .keras model, or, when
    Keras could not load that again, from the SavedModel tfpilot.fit wrote from the live model."""
    from tfpilot.train.fit import load_fit_model, read_fit_spec

    spec = read_fit_spec(run)
    version, target = claim_version(run.model_base, version)
    if not run.fit_model_path.is_file() and run.fit_saved_model_path.is_dir():
        sample = _sample(run, spec)
        with atomic_directory(target) as tmp:
            shutil.copytree(run.fit_saved_model_path, tmp, dirs_exist_ok=True)
            # Proven against the live model when it was written; here: it still loads as TF Serving loads it.
            _session_check(tmp, sample, None, tolerance=None, target=target)
        return ExportResult(path=target, version=version, signatures=["serving_default"], max_abs_difference=0.0)
    model = load_fit_model(run, extra_modules=extra_modules)
    verified = write_verified(model, spec, _sample(run, spec), target)
    return ExportResult(
        path=target,
        version=version,
        signatures=["serving_default"],
        max_abs_difference=verified.worst,
        sampled_outputs=list(verified.sampled),
    )
