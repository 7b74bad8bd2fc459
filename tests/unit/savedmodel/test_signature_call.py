"""Calling serving_default over many rows in batches equals one call over all of them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tfpilot.savedmodel.signature_call import SignatureCaller


def test_batched_outputs_equal_a_single_call(affine_saved_model: Path) -> None:
    caller = SignatureCaller.load(affine_saved_model)
    assert caller is not None
    assert caller.input_names == {"x"}
    rows = np.arange(21, dtype=np.float32).reshape(7, 3)
    batched = caller({"x": rows}, batch_size=3)  # 3 + 3 + 1 rows
    whole = caller({"x": rows}, batch_size=100)
    assert set(batched) == {"y", "total"}
    np.testing.assert_array_equal(batched["y"], 2.0 * rows + 1.0)
    np.testing.assert_array_equal(batched["total"], whole["total"])
    assert batched["total"].shape == (7,)


def test_a_missing_signature_is_none(affine_saved_model: Path) -> None:
    assert SignatureCaller.load(affine_saved_model, "classify") is None
