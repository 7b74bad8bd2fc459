"""Report: one self-contained offline HTML file per run (training, evaluation, export, drift)."""

from tfpilot.report.html import collect_run_data, render_report, write_report

__all__ = ["write_report", "render_report", "collect_run_data"]
