"""``--mode native``: rewrite the common TF1 patterns to TF2 idioms (filled in below)."""

from __future__ import annotations

import dataclasses

__all__ = ["NativeChange", "NativeResult", "rewrite_native"]


@dataclasses.dataclass(frozen=True)
class NativeChange:
    line: int
    column: int
    message: str


@dataclasses.dataclass(frozen=True)
class NativeResult:
    source: str
    changes: tuple[NativeChange, ...]
    notes: tuple[NativeChange, ...]


def rewrite_native(source: str) -> NativeResult:
    return NativeResult(source, (), ())
