"""The `.keras` archive beside the SavedModel (runs/<name>/exports/model.keras), for fine-tuning.

A `.keras` file stores each layer as its class name plus get_config(); loading rebuilds it from
the registered class. Lambda layers (Python bytecode, refused by safe_mode) and custom layers
that are not registered or lack get_config() cannot come back, so export names them and the fix
up front instead of writing an archive that fails on the user's next load.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import keras
import numpy as np

from tfpilot import _tf_private
from tfpilot.errors import ExportError

__all__ = ["unserializable_layers", "write_keras_archive", "keras_archive_hook"]

_REGISTER_FIX = 'decorate the class with @keras.saving.register_keras_serializable(package="yourpackage")'


def _is_builtin(cls: type) -> bool:
    return cls.__module__ == "keras" or cls.__module__.startswith("keras.")


def _problem(layer: Any) -> str | None:
    cls = type(layer)
    if isinstance(layer, keras.layers.Lambda):
        return (
            f"layer `{layer.name}` is a Lambda layer, whose Python code a .keras archive cannot restore safely; "
            f"replace it with a small keras.layers.Layer subclass that implements call() and get_config() and {_REGISTER_FIX}"
        )
    if _is_builtin(cls) or isinstance(layer, (keras.Sequential,)) or cls is keras.Model:
        return None
    registered = keras.saving.get_registered_object(keras.saving.get_registered_name(cls))
    if registered is not cls:
        return f"custom layer `{layer.name}` ({cls.__module__}.{cls.__qualname__}) is not registered; {_REGISTER_FIX}"
    try:
        config = layer.get_config()
        cls.from_config(config)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return (
            f"custom layer `{layer.name}` ({cls.__qualname__}) cannot be rebuilt from get_config() ({first}); "
            "implement get_config() returning every constructor argument"
        )
    return None


def unserializable_layers(model: keras.Model) -> list[str]:
    """One message per layer (the model itself included when subclassed) that a .keras archive cannot restore."""
    layers = _tf_private.flatten_layers(model, include_self=True)
    problems = []
    for layer in layers:
        if layer is model and type(model).__name__ in ("Functional", "Sequential"):
            continue
        problem = _problem(layer)
        if problem:
            problems.append(problem)
    return problems


def write_keras_archive(model: keras.Model, path: str | Path, *, sample_input: np.ndarray | None = None) -> Path:
    """Save atomically and prove the archive reloads (safe_mode) with the same outputs."""
    path = Path(path)
    problems = unserializable_layers(model)
    if problems:
        raise ExportError(
            f"cannot write the .keras archive: {problems[0]}"
            + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".keras", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        try:
            model.save(tmp)
            restored = keras.saving.load_model(tmp, compile=False, safe_mode=True)
        except Exception as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ExportError(
                f"the .keras archive of `{model.name}` does not save and reload ({first}); {_REGISTER_FIX} and implement get_config()"
            ) from None
        if sample_input is not None:
            diff = float(
                np.max(
                    np.abs(
                        np.asarray(restored(sample_input, training=False))
                        - np.asarray(model(sample_input, training=False))
                    )
                )
            )
            if diff > 1e-5:
                raise ExportError(
                    f"the reloaded .keras archive differs from the in-memory model by {diff:.2e}; a layer does not save all its weights"
                )
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def keras_archive_hook(
    version_dir: Path,
    *,
    model: keras.Model,
    preprocessor: Any,
    sample_features: dict[str, np.ndarray],
    trained: Any = None,
    **_: Any,
) -> None:
    """Post-write hook: exports/model.keras for a run (without a run there is no exports/ folder to write to)."""
    if trained is None:
        problems = unserializable_layers(model)
        if problems:
            raise ExportError(f"cannot write the .keras archive: {problems[0]}")
        return
    import tensorflow as tf

    sample = preprocessor({name: tf.constant(value) for name, value in sample_features.items()}).numpy()
    write_keras_archive(model, trained.run.keras_path, sample_input=sample)
