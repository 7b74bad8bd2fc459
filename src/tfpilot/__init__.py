"""tfpilot: TensorFlow done right — train, diagnose, ship and watch models.

Importing tfpilot does not import TensorFlow; the names below load their subpackage on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Public name -> module that defines it (loaded lazily so `import tfpilot` stays cheap).
_LAZY = {
    "RunConfig": "tfpilot.config",
    "load_config": "tfpilot.config",
    "Finding": "tfpilot.findings",
    "Severity": "tfpilot.findings",
    "TfpilotError": "tfpilot.errors",
    "RunDir": "tfpilot.rundir",
    "Pipeline": "tfpilot.data",
    "build_pipeline": "tfpilot.data",
    "build_model": "tfpilot.models",
    "Trainer": "tfpilot.train",
    "fit": "tfpilot.train.fit",
    "export_saved_model": "tfpilot.export",
    "run": "tfpilot.workflow",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tfpilot' has no attribute {name!r}")
