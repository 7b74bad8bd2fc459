"""tfpilot.fit on a model built under the mixed_float16 policy (Keras wraps its optimizer in a
LossScaleOptimizer at compile): the same history as model.fit, and a NaN batch skipped by the
loss-scale optimizer's own check with the guard putting the rest of the state back."""

from __future__ import annotations

import numpy as np


def _build():
    import keras

    keras.utils.set_random_seed(0)
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    try:
        inputs = keras.Input((6,), name="x")
        hidden = keras.layers.BatchNormalization()(keras.layers.Dense(16, activation="relu")(inputs))
        model = keras.Model(inputs, keras.layers.Dense(3, dtype="float32", name="logits")(hidden))
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
    )
    return model


def test_mixed_float16_history_equals_model_fit_and_a_nan_batch_leaves_everything_finite(tmp_path):
    import keras

    import tfpilot

    rng = np.random.default_rng(0)
    x, y = rng.random((128, 6)).astype("float32"), rng.integers(0, 3, 128)
    anchor = _build()
    assert isinstance(anchor.optimizer, keras.optimizers.LossScaleOptimizer)
    expected = anchor.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history
    result = tfpilot.fit(_build(), x, y, batch_size=16, epochs=2, shuffle=False, name="mp", runs_dir=tmp_path)
    for key in ("loss", "accuracy"):
        np.testing.assert_allclose([row[key] for row in result.history], expected[key], rtol=1e-5)

    poisoned = x.copy()
    poisoned[20, 2] = np.nan  # batch 1 of 8, in both epochs
    model = _build()
    guarded = tfpilot.fit(
        model,
        poisoned,
        y,
        batch_size=16,
        epochs=2,
        shuffle=False,
        name="mp_nan",
        runs_dir=tmp_path,
        nan_policy="skip_batch",
    )
    assert [f.code for f in guarded.findings].count("TRAIN-SKIPPED-BATCHES") == 1
    assert all(np.isfinite(v.numpy()).all() for v in model.variables)  # BatchNorm statistics included
    assert int(model.optimizer.inner_optimizer.iterations.numpy()) == 14  # 16 batches, 2 skipped
    assert guarded.global_step == 14
    assert np.isfinite(model.predict(x, verbose=0)).all()
