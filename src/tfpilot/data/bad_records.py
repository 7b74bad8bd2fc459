"""Every data problem in one pass: the error that lists them all, the report that holds them,
and the finding that names every record `data.on_bad_records: skip` left out.

Each source (image folder, CSV, text, TFRecord) checks all of its data before it reports
anything, so fixing the data takes one round, not one per problem. The sources share these
three pieces so the one-line error of `tfpilot train`, `tfpilot data inspect` and
data_report.json always carry the same list.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tfpilot.errors import DataError
from tfpilot.findings import Finding, Severity

__all__ = ["Problem", "problems_error", "problems_report", "skipped_finding", "listed"]

# The one-line error shows this many items per problem; DataError.problems, data_report.json and
# the skipped-records finding name every one.
SHOWN = 5


def listed(items: list[str], limit: int | None = SHOWN) -> str:
    shown = ", ".join(items if limit is None else items[:limit])
    return shown + (f" and {len(items) - limit} more" if limit is not None and len(items) > limit else "")


@dataclasses.dataclass(frozen=True)
class Problem:
    """One kind of problem and every item that has it (file lines, records, files, classes).

    what:  what is wrong and what was expected, e.g. `2 record(s) have a label outside 0..2`.
    items: each item, named so a person can find it (`shard record 5 (label=7)`).
    fix:   how to fix these items, in brackets after them."""

    what: str
    items: list[str] = dataclasses.field(default_factory=list)
    fix: str = ""

    def text(self, limit: int | None = None) -> str:
        named = f": {listed(self.items, limit)}" if self.items else ""
        return self.what + named + (f" ({self.fix})" if self.fix else "")


def problems_error(where: str, problems: list[Problem], *, skippable: bool = True) -> DataError:
    """One line naming every problem (numbered, a few items each), what to do, and the key that
    skips bad records; DataError.problems holds each problem with all of its items.

    skippable: False when a problem is not about records (a missing column), so skipping cannot help."""
    numbered = "; ".join(f"({number}) {problem.text(SHOWN)}" for number, problem in enumerate(problems, 1))
    remedy = (
        "fix them, or set data.on_bad_records: skip to leave the bad records out (each is then named in a finding)"
        if skippable
        else "fix them (data.on_bad_records: skip leaves out bad records, not missing columns)"
    )
    return DataError(
        f"`{where}` has {len(problems)} problem(s): {numbered}; {remedy}",
        exit_code=2,
        problems=[problem.text() for problem in problems],
    )


def problems_report(source: str, kind: str, error: DataError) -> dict[str, Any]:
    """What data_report.json holds when the data cannot be trained on: the error's whole list."""
    return {"source": source, "kind": kind, "error": str(error), "problems": list(error.problems)}


def skipped_finding(*, code: str, what: str, where: str, reasons: dict[str, str], fix: str) -> Finding:
    """A warning naming every left-out item (`what`: records, rows, files) and why it was bad."""
    return Finding(
        code=code,
        severity=Severity.WARNING,
        title=f"{len(reasons)} bad {what} skipped",
        message=f"{len(reasons)} {what} of `{where}` were left out (data.on_bad_records: skip): "
        + "; ".join(f"{item}: {why}" for item, why in reasons.items()),
        location=where,
        evidence={what: list(reasons), "reasons": list(reasons.values())},
        fix=fix,
    )
