"""The suite's warning policy: a DeprecationWarning attributed to tfpilot's own code is an error."""

from __future__ import annotations

import warnings

import pytest


def test_deprecation_from_tfpilot_code_is_an_error() -> None:
    with pytest.raises(DeprecationWarning):
        warnings.warn_explicit("old API", DeprecationWarning, "tfpilot/x.py", 1, module="tfpilot.train.trainer")


def test_deprecation_from_a_dependency_is_not() -> None:
    with warnings.catch_warnings(record=True):
        warnings.warn_explicit("old API", DeprecationWarning, "tensorflow/x.py", 1, module="tensorflow.python.x")
