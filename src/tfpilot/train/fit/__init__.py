"""`tfpilot.fit`: a user's own Keras model trained by Keras' own loop, with tfpilot's NaN guard
and run directory around it (api.py), and what evaluate/export read back (artifacts.py)."""

from tfpilot.train.fit.api import FitResult, fit
from tfpilot.train.fit.artifacts import FIT_SPEC_KIND, load_fit_model, read_fit_spec, signature_inputs
from tfpilot.train.fit.evaluate import evaluate_fit_run
from tfpilot.train.fit.guarded_step import GuardedStep

__all__ = [
    "fit",
    "FitResult",
    "FIT_SPEC_KIND",
    "GuardedStep",
    "load_fit_model",
    "read_fit_spec",
    "signature_inputs",
    "evaluate_fit_run",
]
