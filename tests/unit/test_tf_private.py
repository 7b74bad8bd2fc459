"""Every private TensorFlow/Keras API tfpilot uses (all in tfpilot/_tf_private.py) still exists and
behaves as tfpilot uses it; a Keras upgrade that moves one fails here, not in a user's run."""

from __future__ import annotations

import numpy as np


def test_build_compile_state_creates_the_compiled_metrics_variables():
    import keras

    from tfpilot._tf_private import build_compile_state

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    before = {v.path for v in model.metrics_variables}
    build_compile_state(model, (np.zeros((2, 3), "float32"), np.zeros((2, 1), "float32")))
    after = {v.path for v in model.metrics_variables}
    assert any("mean_absolute_error" in path for path in after - before)


def test_validation_split_of_holds_out_the_rows_model_fit_holds_out():
    import keras

    from tfpilot._tf_private import validation_split_of

    x = np.arange(20, dtype="float32").reshape(10, 2)
    y = np.arange(10, dtype="float32")
    held_x, held_y, held_w = validation_split_of((x, y, None), 0.3)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(x, y, validation_split=0.3, epochs=1, batch_size=10, verbose=0, shuffle=False)
    evaluated = model.evaluate(held_x, held_y, verbose=0, batch_size=10)
    np.testing.assert_allclose(evaluated, history.history["val_loss"][-1], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(held_x), x[7:])
    assert held_w is None
