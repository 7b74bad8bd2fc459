"""A small SavedModel written once per session for the savedmodel tests (read-only for them)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def affine_saved_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """y = 2x + 1 and its sum per row, with a variable, as tf.saved_model.save writes a tf.Module."""
    import tensorflow as tf

    class Affine(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = tf.Variable(2.0)

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
        def serve(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
            y = self.scale * x + 1.0
            return {"y": y, "total": tf.reduce_sum(y, axis=1)}

    module = Affine()
    path = tmp_path_factory.mktemp("affine") / "1"
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.serve})
    return path
