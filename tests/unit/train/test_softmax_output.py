"""A user model that ends in softmax is trained on its logits (no second softmax), and says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _train_helpers import blobs, build, tiny_config


def _train(root: Path, factory: str):
    config = tiny_config(root, name=factory, epochs=2)
    config.model.name = f"_softmax_models:{factory}"
    features, labels = blobs(200)
    trainer = build(config, features, labels)
    result = trainer.fit()
    return trainer, result


@pytest.mark.parametrize("factory", ["dense_softmax", "softmax_layer"])
def test_softmax_model_trains_exactly_like_its_logits_version(tmp_path: Path, factory: str) -> None:
    reference, reference_result = _train(tmp_path / "logits", "logits")
    trainer, result = _train(tmp_path / factory, factory)
    # Same seed, same weights init and batches: with the softmax removed the runs are identical
    # (a second softmax would shrink the gradients and change every number).
    for row, expected in zip(result.history, reference_result.history, strict=True):
        np.testing.assert_allclose(row["loss"], expected["loss"], rtol=1e-6)
    for weight, expected in zip(trainer.model.get_weights(), reference.model.get_weights(), strict=True):
        np.testing.assert_allclose(weight, expected, atol=1e-6)
    outputs = np.asarray(trainer.model(blobs(8)[0]))
    assert not np.allclose(outputs.sum(axis=-1), 1.0)  # logits, not probabilities
    notes = [f for f in result.findings if f.code == "TRAIN-SOFTMAX-OUTPUT"]
    assert len(notes) == 1 and "softmax" in notes[0].message
    assert not [f for f in reference_result.findings if f.code == "TRAIN-SOFTMAX-OUTPUT"]
