"""`tfpilot report RUN`: the run's self-contained offline HTML report."""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report_command(
        run: Path = typer.Argument(..., help="Run directory (runs/<name>)."),
        output: Path | None = typer.Option(None, "--output", help="HTML file to write (default: RUN/report.html)."),
    ) -> None:
        """Write one offline HTML file: curves, confusion matrix, findings, profile, parity, drift."""
        from tfpilot.cli.render import console
        from tfpilot.report import write_report
        from tfpilot.rundir import RunDir

        RunDir.existing(run)
        console.print(f"report -> {write_report(run, output=output)}")
