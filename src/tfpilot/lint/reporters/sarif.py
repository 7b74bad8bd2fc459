"""SARIF 2.1.0, the format GitHub code scanning and other code-scanning UIs ingest.

One run, the tool's rules listed under ``tool.driver.rules`` (id, name, short and full
description, help with the fix), and one result per finding with a physical location whose
URI is relative to the working directory when possible (``%SRCROOT%``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfpilot import __version__
from tfpilot.findings import Finding, Severity
from tfpilot.lint.rule import Rule

if TYPE_CHECKING:
    from tfpilot.lint.engine import SkippedPath

__all__ = ["format_sarif", "sarif_log", "SARIF_SCHEMA", "SARIF_VERSION"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
_LEVEL = {Severity.INFO: "note", Severity.WARNING: "warning", Severity.ERROR: "error"}


def _split_location(location: str) -> tuple[str, int, int]:
    """``path:line:col`` -> (path, line, col); paths may themselves contain ':'."""
    parts = location.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return parts[0], int(parts[1]), int(parts[2])
    return location, 1, 1


def _uri(path: str, root: Path) -> tuple[str, bool]:
    """A forward-slash URI relative to ``root`` when the file is under it."""
    absolute = Path(path).resolve()
    try:
        return absolute.relative_to(root).as_posix(), True
    except ValueError:
        return absolute.as_uri(), False


def _rule_descriptor(rule: type[Rule]) -> dict[str, Any]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.message},
        "fullDescription": {"text": rule.summary()},
        "help": {"text": f"Fix: {rule.fix_hint}"},
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": {"category": rule.category, "fixable": rule.fixable},
    }


def sarif_log(
    findings: Iterable[Finding],
    *,
    rules: Sequence[type[Rule]],
    root: Path | None = None,
    skipped: Sequence[SkippedPath] = (),
) -> dict[str, Any]:
    root = (root or Path(os.getcwd())).resolve()
    descriptors = [_rule_descriptor(rule) for rule in rules]
    index = {rule.code: position for position, rule in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for finding in findings:
        path, line, column = _split_location(finding.location)
        uri, relative = _uri(path, root)
        artifact: dict[str, Any] = {"uri": uri}
        if relative:
            artifact["uriBaseId"] = "%SRCROOT%"
        region: dict[str, Any] = {"startLine": line, "startColumn": column}
        end = str(finding.evidence.get("end", ""))
        if ":" in end:
            end_line, end_column = end.split(":", 1)
            if end_line.isdigit() and end_column.isdigit():
                region["endLine"] = int(end_line)
                region["endColumn"] = int(end_column)
        result: dict[str, Any] = {
            "ruleId": finding.code,
            "level": _LEVEL[finding.severity],
            "message": {"text": f"{finding.message}. Fix: {finding.fix}" if finding.fix else finding.message},
            "locations": [{"physicalLocation": {"artifactLocation": artifact, "region": region}}],
        }
        if finding.code in index:
            result["ruleIndex"] = index[finding.code]
        results.append(result)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "tfpilot-lint",
                "version": __version__,
                "rules": descriptors,
            }
        },
        "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    if skipped:
        # Paths that could not be read are the tool's own notifications, not results (SARIF 3.20.21).
        run["invocations"] = [
            {
                "executionSuccessful": True,
                "toolExecutionNotifications": [_skip_notification(note, root) for note in skipped],
            }
        ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [run],
    }


def _skip_notification(note: SkippedPath, root: Path) -> dict[str, Any]:
    uri, relative = _uri(note.path, root)
    artifact: dict[str, Any] = {"uri": uri}
    if relative:
        artifact["uriBaseId"] = "%SRCROOT%"
    return {
        "level": "warning",
        "message": {"text": f"skipped: {note.reason}"},
        "locations": [{"physicalLocation": {"artifactLocation": artifact}}],
    }


def format_sarif(
    findings: Iterable[Finding],
    *,
    rules: Sequence[type[Rule]],
    root: Path | None = None,
    skipped: Sequence[SkippedPath] = (),
) -> str:
    return json.dumps(sarif_log(findings, rules=rules, root=root, skipped=skipped), indent=2) + "\n"
