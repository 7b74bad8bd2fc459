"""Terminal rendering: the only place that prints findings, tables and errors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from tfpilot.findings import Finding, Severity

__all__ = ["console", "err_console", "print_error", "render_findings", "render_mapping_table"]

console = Console()
err_console = Console(stderr=True)

_STYLE = {Severity.INFO: "cyan", Severity.WARNING: "yellow", Severity.ERROR: "bold red"}


def print_error(message: str) -> None:
    # Plain print (not rich markup) so messages containing [brackets] stay intact.
    err_console.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)


def render_findings(findings: Iterable[Finding], *, title: str = "Findings") -> None:
    findings = list(findings)
    if not findings:
        console.print(f"[green]{title}: none[/green]")
        return
    table = Table(title=title, show_lines=True)
    for column in ("severity", "code", "finding", "evidence", "fix"):
        table.add_column(column, overflow="fold")
    for finding in findings:
        evidence = ", ".join(f"{k}={_fmt(v)}" for k, v in finding.evidence.items())
        where = f"\n[dim]{finding.location}[/dim]" if finding.location else ""
        table.add_row(
            f"[{_STYLE[finding.severity]}]{finding.severity.value}[/]",
            finding.code,
            f"[bold]{finding.title}[/bold]\n{finding.message}{where}",
            evidence,
            finding.fix,
        )
    console.print(table)


def render_mapping_table(rows: Iterable[Mapping[str, Any]], *, title: str) -> None:
    rows = list(rows)
    if not rows:
        return
    table = Table(title=title)
    columns = list(rows[0].keys())
    for column in columns:
        table.add_column(str(column))
    for row in rows:
        table.add_row(*[_fmt(row.get(c)) for c in columns])
    console.print(table)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
