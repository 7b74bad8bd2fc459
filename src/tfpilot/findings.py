"""Finding: the one result type that lint, diagnose, the NaN guard, export parity and monitor return.

Engines build and return findings; only ``tfpilot.cli`` renders them.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tfpilot.atomic import atomic_write_text

__all__ = ["Severity", "Finding", "write_findings", "read_findings", "max_severity"]


class Severity(str, enum.Enum):
    """Ordered severities. TF Profiler's moderate/high map onto warning/error."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


@dataclasses.dataclass(frozen=True)
class Finding:
    """A problem (or observation) with the evidence behind it and a concrete fix.

    code:      stable identifier, e.g. ``TFP101`` (lint), ``DOC-INPUT-BOUND`` (doctor).
    location:  ``path:line[:col]`` for source, a run path or op name for runtime findings.
    evidence:  the numbers that justify the finding (JSON-serialisable).
    """

    code: str
    severity: Severity
    title: str
    message: str
    location: str = ""
    evidence: dict[str, Any] = dataclasses.field(default_factory=dict)
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["severity"] = self.severity.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in fields}
        kwargs["severity"] = Severity(kwargs.get("severity", "info"))
        return cls(**kwargs)


def max_severity(findings: Iterable[Finding]) -> Severity | None:
    ranked = sorted((f.severity for f in findings), key=lambda s: s.rank)
    return ranked[-1] if ranked else None


def write_findings(path: str | Path, findings: Iterable[Finding], *, append: bool = False) -> None:
    """Write findings as a JSON list, atomically; ``append`` keeps what the file already holds."""
    path = Path(path)
    existing: list[Finding] = read_findings(path) if append and path.exists() else []
    payload = [f.to_dict() for f in [*existing, *findings]]
    atomic_write_text(path, json.dumps(payload, indent=2, default=str) + "\n")


def read_findings(path: str | Path) -> list[Finding]:
    path = Path(path)
    if not path.exists():
        return []
    return [Finding.from_dict(item) for item in json.loads(path.read_text())]
