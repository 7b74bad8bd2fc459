"""Calling one signature of a SavedModel, reloaded from disk, over many examples in batches.

The validation gate (candidate and baseline on the same split) and export parity (the
SavedModel as the reference for each TFLite file) both feed whole splits of raw features to
``serving_default``: batches bound the memory one call takes, and the outputs are joined back
into one array per output so callers compute their metrics over the whole split.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DEFAULT_BATCH_SIZE", "SignatureCaller"]

DEFAULT_BATCH_SIZE = 256


class SignatureCaller:
    """A signature of a reloaded SavedModel; keeps the loaded object alive, which its functions need."""

    def __init__(self, loaded: Any, name: str, path: Path) -> None:
        self._loaded = loaded
        self.function = loaded.signatures[name]
        self.name = name
        self.path = path

    @classmethod
    def load(cls, path: str | Path, name: str = "serving_default") -> SignatureCaller | None:
        """The signature ``name`` of the SavedModel at ``path``; None when the model has no such signature."""
        import tensorflow as tf

        loaded = tf.saved_model.load(str(path))
        if name not in loaded.signatures:
            return None
        return cls(loaded, name, Path(path))

    @property
    def input_names(self) -> set[str]:
        return set(self.function.structured_input_signature[1])

    def __call__(
        self, features: dict[str, np.ndarray], *, batch_size: int = DEFAULT_BATCH_SIZE
    ) -> dict[str, np.ndarray]:
        """Every output over all rows of ``features``, batch by batch, joined along the batch axis."""
        import tensorflow as tf

        count = len(next(iter(features.values())))
        pieces: dict[str, list[np.ndarray]] = {}
        for start in range(0, count, batch_size):
            batch = {name: tf.constant(values[start : start + batch_size]) for name, values in features.items()}
            for name, value in self.function(**batch).items():
                pieces.setdefault(name, []).append(value.numpy())
        return {name: np.concatenate(parts) for name, parts in pieces.items()}
