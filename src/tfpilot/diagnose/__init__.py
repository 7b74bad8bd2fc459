"""Diagnose: profile capture, xprof summaries, runtime watchers and rules that turn them into findings.

Names are imported on first use (PEP 562): most of them pull in TensorFlow, and the CLI must be able
to reject bad input (a malformed `--steps`, a missing file) without paying for that import.
"""

from __future__ import annotations

import importlib
from typing import Any

_SOURCES = {
    "ProfileHook": "capture",
    "ProfileWindow": "capture",
    "parse_step_window": "window_spec",
    "ProfileSummary": "xplane",
    "summarize_profile": "xplane",
    "load_summary": "xplane",
    "analyze": "analysis",
    "analyze_profile": "analysis",
    "analyze_run": "analysis",
    "watch": "doctor",
    "WatchSession": "doctor",
    "doctor_script": "doctor",
    "DoctorResult": "doctor",
    "Watcher": "watchers",
    "WatchReport": "watchers",
}

__all__ = [
    "ProfileHook",
    "ProfileWindow",
    "ProfileSummary",
    "summarize_profile",
    "load_summary",
    "analyze",
    "analyze_profile",
    "analyze_run",
    "watch",
    "WatchSession",
    "Watcher",
    "WatchReport",
    "doctor_script",
    "DoctorResult",
    "parse_step_window",
]


def __getattr__(name: str) -> Any:
    if name not in _SOURCES:
        raise AttributeError(f"module 'tfpilot.diagnose' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tfpilot.diagnose.{_SOURCES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
