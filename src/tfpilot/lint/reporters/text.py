"""``path:line:col: TFP101 message`` - one line per finding, the format editors and CI parse."""

from __future__ import annotations

from collections.abc import Iterable

from tfpilot.findings import Finding

__all__ = ["format_text"]


def format_text(findings: Iterable[Finding], *, show_fix: bool = False) -> str:
    lines: list[str] = []
    for finding in findings:
        lines.append(f"{finding.location}: {finding.code} {finding.message}")
        if show_fix and finding.fix:
            lines.append(f"    fix: {finding.fix}")
    return "\n".join(lines) + ("\n" if lines else "")
