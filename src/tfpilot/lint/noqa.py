"""Suppression comments.

``# tfpilot: noqa[TFP101, TFP2]`` on the line of a finding (or the last line of its statement)
suppresses those codes or code prefixes there; a bare ``# tfpilot: noqa`` suppresses every code
on the line. ``# tfpilot: noqa-file[TFP6]`` anywhere in a file suppresses codes file-wide (for
legacy modules kept on purpose). Flake8's ``# noqa: TFP101`` is honoured too.
"""

from __future__ import annotations

import re

__all__ = ["Suppressions", "parse_file_suppressions", "file_suppresses", "line_suppresses"]

_LINE_RE = re.compile(r"#\s*tfpilot:\s*noqa(?!-)(?:\[([^\]]*)\])?", re.IGNORECASE)
_FLAKE8_RE = re.compile(r"#\s*noqa:\s*((?:TFP\d*[\s,]*)+)", re.IGNORECASE)
_FILE_RE = re.compile(r"#\s*tfpilot:\s*noqa-file(?:\[([^\]]*)\])?", re.IGNORECASE)

# None means "all codes".
Suppressions = tuple[str, ...] | None


def _codes(group: str | None) -> Suppressions:
    if group is None:
        return None
    codes = tuple(code.strip().upper() for code in re.split(r"[,\s]+", group) if code.strip())
    return codes or None


def _matches(code: str, suppressions: Suppressions) -> bool:
    return suppressions is None or any(code.startswith(prefix) for prefix in suppressions)


def line_suppresses(line_text: str, code: str) -> bool:
    """True when ``line_text`` carries a noqa comment that covers ``code``."""
    if "noqa" not in line_text:
        return False
    match = _LINE_RE.search(line_text)
    if match is not None and _matches(code, _codes(match.group(1))):
        return True
    flake8 = _FLAKE8_RE.search(line_text)
    return flake8 is not None and _matches(code, _codes(flake8.group(1)))


def parse_file_suppressions(source: str) -> list[Suppressions]:
    """Every ``noqa-file`` comment's codes (an empty list when the file has none)."""
    if "noqa-file" not in source:
        return []
    return [_codes(match.group(1)) for match in _FILE_RE.finditer(source)]


def file_suppresses(suppressions: list[Suppressions], code: str) -> bool:
    return any(_matches(code, entry) for entry in suppressions)
