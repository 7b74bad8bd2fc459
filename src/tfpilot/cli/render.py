"""Terminal rendering: the only place that prints findings, tables and errors."""

from __future__ import annotations

import contextlib
import logging
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tfpilot.findings import Finding, Severity

__all__ = ["console", "err_console", "print_error", "render_findings", "render_mapping_table", "show_log_lines"]

console = Console()
err_console = Console(stderr=True)

_STYLE = {Severity.INFO: "cyan", Severity.WARNING: "yellow", Severity.ERROR: "bold red"}


def print_error(message: str) -> None:
    # Plain print (not rich markup) so messages containing [brackets] stay intact.
    err_console.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)


class _LineHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        err_console.print(record.getMessage(), markup=False, highlight=False, soft_wrap=True)
        err_console.file.flush()


@contextlib.contextmanager
def show_log_lines(logger_name: str) -> Iterator[None]:
    """Show an engine's INFO lines (e.g. `tfpilot.export.tfjs`' install steps) on stderr while it runs.

    Plain, flushed lines: they read the same on a terminal and in a CI log, and keep stdout for results.
    """
    logger = logging.getLogger(logger_name)
    handler = _LineHandler(logging.INFO)
    previous, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    # Not also through the root logger, where TensorFlow's absl handler would print them a second time.
    logger.propagate = False
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
        logger.propagate = propagate


# Below this many columns (a CI log or a pipe is 80 wide) a five-column table folds codes such as
# TRAIN-STEPS-TUNED mid-word and squeezes evidence into a few characters a line; each finding is
# printed as a block instead.
TABLE_MIN_WIDTH = 120


def render_findings(findings: Iterable[Finding], *, title: str = "Findings", out: Console | None = None) -> None:
    out = out or console
    findings = list(findings)
    if not findings:
        out.print(f"[green]{title}: none[/green]")
        return
    if out.width < TABLE_MIN_WIDTH:
        _render_finding_blocks(findings, title=title, out=out)
        return
    table = Table(title=title, show_lines=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("code", no_wrap=True)
    for column in ("finding", "evidence", "fix"):
        table.add_column(column, overflow="fold")
    for finding in findings:
        where = f"\n[dim]{escape(finding.location)}[/dim]" if finding.location else ""
        table.add_row(
            f"[{_STYLE[finding.severity]}]{finding.severity.value}[/]",
            finding.code,
            f"[bold]{escape(finding.title)}[/bold]\n{escape(finding.message)}{where}",
            escape(_evidence(finding)),
            escape(finding.fix),
        )
    out.print(table)


def _render_finding_blocks(findings: list[Finding], *, title: str, out: Console) -> None:
    out.print(f"[bold]{title}[/bold]")
    for finding in findings:
        out.print(
            f"[{_STYLE[finding.severity]}]{finding.severity.value}[/] [bold]{finding.code}[/bold]  "
            f"[bold]{escape(finding.title)}[/bold]"
        )
        lines = [finding.message]
        if finding.location:
            lines.append(finding.location)
        if finding.evidence:
            lines.append(f"evidence: {_evidence(finding)}")
        if finding.fix:
            lines.append(f"fix: {finding.fix}")
        # Wrapped here, indented, with no trailing spaces (rich's Padding pads every line to the width).
        width = max(out.width - 4, 20)
        for line in lines:
            wrapped = textwrap.fill(line, width=width, initial_indent="    ", subsequent_indent="    ")
            out.print(wrapped, markup=False, highlight=False, soft_wrap=True)
        out.print()


def _evidence(finding: Finding) -> str:
    return ", ".join(f"{k}={_fmt(v)}" for k, v in finding.evidence.items())


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
