"""Export verification tolerance follows the precision the model computes in."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from tfpilot.export.tolerance import tolerance_for_dtype, tolerance_for_model


def test_float32_tolerance_is_tight_and_float16_looser() -> None:
    float32 = tolerance_for_dtype("float32")
    float16 = tolerance_for_dtype("float16")
    bfloat16 = tolerance_for_dtype("bfloat16")
    assert float32.atol == pytest.approx(1e-5)
    assert float32.atol < float16.atol < bfloat16.atol
    # A float16 model's reloaded graph may differ in the last bits (2.6e-5 measured on an
    # AVX-512-FP16 CPU with oneDNN); a wrong graph (0.1 off) must still be caught.
    assert float16.excess([0.50026], [0.5])[1]
    assert not float16.excess([0.6], [0.5])[1]
    assert not float32.excess([0.50026], [0.5])[1]


def test_relative_part_scales_with_the_value() -> None:
    tolerance = tolerance_for_dtype("float16")
    largest, within = tolerance.excess([1000.0 * (1 + tolerance.rtol / 2)], [1000.0])
    assert within and largest > tolerance.atol


def test_model_tolerance_uses_the_least_precise_layer() -> None:
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(3, dtype="mixed_float16")(inputs)
    outputs = keras.layers.Dense(2, dtype="float32")(hidden)
    mixed = keras.Model(inputs, outputs)
    plain = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    assert tolerance_for_model(mixed).compute_dtype == "float16"
    assert tolerance_for_model(plain).compute_dtype == "float32"
    assert "float16" in tolerance_for_model(mixed).describe()
    assert np.isfinite(tolerance_for_model(plain).atol)
