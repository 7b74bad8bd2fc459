"""Output formats for lint findings: text, JSON and SARIF 2.1.0. Each returns a string."""

from __future__ import annotations

from tfpilot.lint.reporters.json_report import format_json
from tfpilot.lint.reporters.sarif import format_sarif, sarif_log
from tfpilot.lint.reporters.text import format_text

__all__ = ["format_text", "format_json", "format_sarif", "sarif_log", "FORMATS"]

FORMATS = ("text", "json", "sarif")
