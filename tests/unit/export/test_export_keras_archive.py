"""Unserialisable models fail export with the layer's name and the fix."""

from __future__ import annotations

import keras
import pytest

from tfpilot.errors import ExportError
from tfpilot.export import unserializable_layers, write_keras_archive


class Unregistered(keras.layers.Layer):
    def call(self, inputs):
        return inputs * 2.0


@keras.saving.register_keras_serializable(package="tfpilot_tests")
class NoConfig(keras.layers.Layer):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def call(self, inputs):
        return inputs * self.factor


def _model(layer):
    inputs = keras.Input((3,))
    return keras.Model(inputs, keras.layers.Dense(2)(layer(inputs)))


def test_lambda_layer_is_named_with_fix(tmp_path):
    model = _model(keras.layers.Lambda(lambda x: x + 1.0, name="plus_one"))
    with pytest.raises(ExportError, match=r"`plus_one` is a Lambda layer.*register_keras_serializable"):
        write_keras_archive(model, tmp_path / "model.keras")
    assert not list(tmp_path.iterdir())


def test_unregistered_and_config_less_layers_are_named(tmp_path):
    assert "custom layer `double`" in unserializable_layers(_model(Unregistered(name="double")))[0]
    problems = unserializable_layers(_model(NoConfig(3.0)))
    assert problems and "get_config()" in problems[0]


def test_plain_model_round_trips(tmp_path):
    import numpy as np

    model = _model(keras.layers.Dense(3))
    x = np.ones((2, 3), np.float32)
    path = write_keras_archive(model, tmp_path / "model.keras", sample_input=x)
    np.testing.assert_allclose(keras.saving.load_model(path)(x), model(x), atol=1e-6)
