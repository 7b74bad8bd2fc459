"""Which positional argument is a model's training flag (TFP201, TFP507): names of a flag, not
every name with "train" in it."""

from __future__ import annotations

import ast

import pytest

from tfpilot.lint.patterns import training_flag


@pytest.mark.parametrize(
    "source", ["training", "is_training", "phase_train", "self.training", "is_trainig", "True", "train_mode"]
)
def test_a_flag(source: str) -> None:
    assert training_flag(ast.parse(source, mode="eval").body) is not None


@pytest.mark.parametrize(
    "source", ["x_train", "train_ds", "self.model.trainable_variables", "y_train", "train_images", "0.5", "None"]
)
def test_data_and_weights_are_no_flag(source: str) -> None:
    assert training_flag(ast.parse(source, mode="eval").body) is None
