"""JSON: a list of Finding dicts, the same shape ``tfpilot.findings.read_findings`` loads."""

from __future__ import annotations

import json
from collections.abc import Iterable

from tfpilot.findings import Finding

__all__ = ["format_json"]


def format_json(findings: Iterable[Finding]) -> str:
    return json.dumps([finding.to_dict() for finding in findings], indent=2) + "\n"
