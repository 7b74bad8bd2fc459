"""Overfitting finding, determinism, steps_per_execution, the one-sync train_function contract."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from _train_helpers import blobs, build, tiny_config

from tfpilot.train.overfitting import overfitting_findings


def test_overfitting_finding_when_val_loss_rises_while_train_loss_falls() -> None:
    rising = [
        {"epoch": e, "loss": 1.0 - 0.1 * e, "val_loss": 0.5 + (0.1 * (e - 1) if e > 1 else 0.0)} for e in range(6)
    ]
    (finding,) = overfitting_findings(rising, patience=3, location="history.json")
    assert finding.code == "TRAIN-OVERFITTING"
    assert finding.evidence["from_epoch"] == 1 and finding.evidence["to_epoch"] == 4
    # Two rising epochs are not enough for patience 3; and rising train loss is not overfitting.
    assert overfitting_findings(rising[:4], patience=3, location="history.json") == []
    falling_not = [{**h, "loss": 0.1 * h["epoch"]} for h in rising]
    assert overfitting_findings(falling_not, patience=3, location="history.json") == []


def test_same_seed_and_deterministic_give_bit_identical_weights(tmp_path: Path) -> None:
    features, labels = blobs(120)
    weights = []
    for name in ("first", "second"):
        config = tiny_config(tmp_path, name=name, deterministic=True, seed=7, steps_per_execution=4)
        config.data.shuffle_buffer = 50
        config.model.dropout = 0.2
        trainer = build(config, features, labels)
        trainer.fit()
        weights.append([v.numpy() for v in trainer.model.trainable_variables])
    for first, second in zip(*weights, strict=False):
        np.testing.assert_array_equal(first, second)


def test_steps_per_execution_matches_one_step_per_call(tmp_path: Path) -> None:
    features, labels = blobs(120)
    results = {}
    for steps in (1, 5):
        trainer = build(tiny_config(tmp_path, name=f"spe{steps}", steps_per_execution=steps, seed=3), features, labels)
        result = trainer.fit()
        results[steps] = ([v.numpy() for v in trainer.model.trainable_variables], result.global_step)
    assert results[1][1] == results[5][1] == 2 * trainer.steps_per_epoch
    for one, five in zip(results[1][0], results[5][0], strict=False):
        np.testing.assert_allclose(one, five, atol=1e-6)
