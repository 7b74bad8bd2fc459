"""Classes found on held-out fit round 16 (after its figure was taken; now tuning material).

The stateful SimpleRNN of the TensorFlow forecasting course (`Input(batch_shape=(1, None, 1))`, a Lambda
scaling its output): its `states` are Keras variables no `variables` list holds, written by the forward
pass, so a NaN batch left them NaN for every later batch (the guard skipped eleven in a row and stopped);
its batch of 1 is below the 8 rows tfpilot samples for the export check; every call of the trained model
advances the state, so tfpilot's own sample calls changed what the user's next predict starts from, and
the export check's two calls differed; the Lambda keeps it from reloading as .keras, so the export comes
from the live model, whose signature must keep the declared batch of 1.
"""

from __future__ import annotations

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

import tfpilot  # noqa: E402
from tfpilot.export.fit_model import export_fit_run  # noqa: E402
from tfpilot.rundir import RunDir  # noqa: E402


def _stateful(lambda_layer: bool) -> keras.Model:
    keras.utils.set_random_seed(4)
    layers = [keras.Input(batch_shape=(1, None, 1)), keras.layers.SimpleRNN(6, stateful=True), keras.layers.Dense(1)]
    if lambda_layer:
        layers.append(keras.layers.Lambda(lambda x: x * 2.0))
    model = keras.Sequential(layers)
    model.compile(optimizer="adam", loss="mse")
    return model


def _windows(poison: bool = False) -> tuple[np.ndarray, np.ndarray]:
    series = np.sin(np.arange(60, dtype="float32") / 4.0)
    x = np.stack([series[i : i + 5] for i in range(24)])[..., None]
    y = np.stack([series[i + 5] for i in range(24)])[:, None]
    if poison:
        x[3, 2, 0] = np.nan
    return x, y


def _states(model: keras.Model) -> list[np.ndarray]:
    return [np.asarray(state) for layer in model.layers for state in (getattr(layer, "states", None) or [])]


def test_a_nan_batch_leaves_a_stateful_rnns_states_as_they_were_and_training_goes_on(tmp_path):
    model = _stateful(lambda_layer=False)
    x, y = _windows(poison=True)
    result = tfpilot.fit(
        model, x, y, batch_size=1, epochs=2, shuffle=False, verbose=0, name="nan", runs_dir=tmp_path,
        nan_policy="skip_batch",
    )  # fmt: skip
    assert "TRAIN-SKIPPED-BATCHES" in [f.code for f in result.findings]
    assert all(np.isfinite(np.asarray(v)).all() for v in model.variables)
    assert _states(model) and all(np.isfinite(state).all() for state in _states(model))


def test_tfpilot_leaves_the_state_training_left_and_exports_the_declared_batch_from_the_live_model(tmp_path):
    x, y = _windows()
    plain = _stateful(lambda_layer=True)
    plain.fit(x, y, batch_size=1, epochs=2, shuffle=False, verbose=0)
    model = _stateful(lambda_layer=True)
    result = tfpilot.fit(model, x, y, batch_size=1, epochs=2, shuffle=False, verbose=0, name="rnn", runs_dir=tmp_path)
    # tfpilot's own calls of the trained model (the export check) did not advance its state
    for mine, theirs in zip(_states(model), _states(plain), strict=True):
        np.testing.assert_array_equal(mine, theirs)
    codes = [f.code for f in result.findings]
    assert "FIT-FIXED-BATCH" in codes
    exported = export_fit_run(RunDir.at(tmp_path / "rnn"))
    signature = tf.saved_model.load(str(exported.path)).signatures["serving_default"]
    spec = next(iter(signature.structured_input_signature[1].values()))
    assert spec.shape.as_list() == [1, None, 1]
    served = next(iter(signature(**{next(iter(signature.structured_input_signature[1])): tf.constant(x[:1])}).values()))
    np.testing.assert_allclose(served.numpy(), model.predict(x[:1], verbose=0), rtol=1e-5, atol=1e-6)
