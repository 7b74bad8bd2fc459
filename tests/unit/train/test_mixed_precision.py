"""train.mixed_precision: float16 compute, float32 logits, loss scaling, the global policy restored."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from _train_helpers import blobs, build, tiny_config


def test_mixed_precision_trains_and_exports_float32(tmp_path: Path) -> None:
    before = keras.mixed_precision.dtype_policy().name
    config = tiny_config(tmp_path, name="mixed", mixed_precision=True, epochs=4)
    features, labels = blobs(240)
    trainer = build(config, features, labels)
    # The policy applied while building only: anything built afterwards is unaffected.
    assert keras.mixed_precision.dtype_policy().name == before == "float32"
    assert keras.layers.Dense(2).dtype_policy.name == "float32"
    assert isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer)
    assert trainer.model.get_layer("dense_0").compute_dtype == "float16"
    assert trainer.model.get_layer("dense_0").kernel.dtype == "float32"  # master weights stay float32
    assert trainer.model.get_layer("logits").compute_dtype == "float32"
    result = trainer.fit()
    losses = [epoch["loss"] for epoch in result.history]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0] * 0.8, losses
    assert float(trainer.optimizer.dynamic_scale) > 0
    assert result.history[-1]["val_accuracy"] >= 0.8

    from tfpilot.export import export_saved_model

    result = export_saved_model(
        model=trainer.model,
        preprocessor=trainer.pipeline.preprocessor,
        class_names=trainer.pipeline.class_names,
        base_path=tmp_path / "model",
        sample_features={"x": features[:8]},
        signatures=["serving_default", "logits"],
    )
    loaded = tf.saved_model.load(str(result.path))
    out = loaded.signatures["logits"](x=tf.constant(features[:4]))
    assert out["logits"].dtype == tf.float32
    assert loaded.signatures["serving_default"](x=tf.constant(features[:4]))["probabilities"].dtype == tf.float32


def test_overflowing_steps_shrink_the_loss_scale_instead_of_stopping(tmp_path: Path) -> None:
    """A huge initial scale overflows float16 gradients; the guard must let the wrapper halve it."""
    config = tiny_config(tmp_path, name="overflow", mixed_precision=True, epochs=2)
    features, labels = blobs(160)
    trainer = build(config, features, labels)
    trainer.optimizer.dynamic_scale.assign(2.0**40)
    result = trainer.fit()
    assert not any(f.code == "TRAIN-NONFINITE" for f in result.findings)
    assert float(trainer.optimizer.dynamic_scale) < 2.0**40
    assert np.isfinite(result.history[-1]["loss"])
