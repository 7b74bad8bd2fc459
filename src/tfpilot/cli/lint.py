"""`tfpilot lint PATH...` (`tfpilot migrate` is cli/migrate.py).

Lint imports no TensorFlow. Findings go to stdout in the chosen format; the one-line summary goes to stderr so that JSON
and SARIF output stay machine-readable.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

__all__ = ["register"]


_FORMATS = ("text", "json", "sarif")
_SEVERITIES = ("info", "warning", "error")


def _exit(code: int) -> None:
    # typer.Exit is swallowed into a return value under standalone_mode=False; SystemExit is not.
    sys.stdout.flush()
    raise SystemExit(code)


def _list_rules() -> str:
    from tfpilot.lint import RULES

    width = max(len(rule.name) for rule in RULES)
    rows = [
        f"{rule.code}  {rule.severity.value:<7}  {rule.name:<{width}}  {'fix ' if rule.fixable else '    '} {rule.message}"
        for rule in RULES
    ]
    return "\n".join(rows) + "\n"


def _explain(code: str) -> str:
    import inspect

    from tfpilot.errors import LintError
    from tfpilot.lint import rule_by_code

    rule = rule_by_code(code)
    if rule is None:
        raise LintError(f"unknown rule code `{code}`; run `tfpilot lint --list-rules` to see the codes")
    parts = [
        f"{rule.code} {rule.name} ({rule.severity.value}, {rule.category}{', fixable with --fix' if rule.fixable else ''})",
        "",
        inspect.cleandoc(rule.__doc__ or ""),
        "",
        f"Fix: {rule.fix_hint}",
    ]
    for example in rule.invalid_examples()[:1]:
        parts += ["", "Flagged:", example.code.strip("\n")]
    for valid in rule.VALID[:1]:
        parts += ["", "Fine:", valid.strip("\n")]
    return "\n".join(parts) + "\n"


def register(app: typer.Typer) -> None:
    @app.command("lint")
    def lint(
        paths: list[Path] = typer.Argument(None, help="Files or directories to lint.", show_default=False),
        output_format: str = typer.Option("text", "--format", "-f", help="Output format: text, json or sarif."),
        select: list[str] = typer.Option(None, "--select", help="Only these codes/prefixes (comma separated)."),
        ignore: list[str] = typer.Option(None, "--ignore", help="Skip these codes/prefixes (comma separated)."),
        fix: bool = typer.Option(False, "--fix", help="Apply the mechanical fixes in place, then report the rest."),
        jobs: int = typer.Option(0, "--jobs", "-j", help="Worker processes; 0 = one per CPU."),
        config_file: Path = typer.Option(None, "--config", help="pyproject.toml to read [tool.tfpilot.lint] from."),
        fail_on: str = typer.Option(
            None, "--fail-on", help="Lowest severity that makes the exit code 1: info, warning or error."
        ),
        min_severity: str = typer.Option(
            "info",
            "--min-severity",
            help="Hide findings below this severity (info, warning or error); hidden ones never fail the run.",
        ),
        output: Path = typer.Option(None, "--output", "-o", help="Write the report to this file instead of stdout."),
        show_fix: bool = typer.Option(False, "--show-fix", help="Text format: print each finding's fix hint."),
        list_rules: bool = typer.Option(False, "--list-rules", help="List every rule and exit."),
        explain: str = typer.Option(None, "--explain", help="Explain one rule (why, fix, examples) and exit."),
    ) -> None:
        """Check Python files for TensorFlow pitfalls and TF1/Keras 2 leftovers (no TensorFlow needed).

        Exit code 0: clean; 1: findings at or above --fail-on; 2: usage error.
        """
        from tfpilot.atomic import atomic_write_text
        from tfpilot.errors import LintError
        from tfpilot.findings import Severity
        from tfpilot.lint import (
            RULES,
            find_pyproject,
            fix_files,
            format_json,
            format_sarif,
            format_text,
            lint_paths,
            load_lint_config,
        )
        from tfpilot.lint.discovery import discover_files

        if list_rules:
            typer.echo(_list_rules(), nl=False)
            return
        if explain:
            typer.echo(_explain(explain), nl=False)
            return
        # Validated here rather than with click choices, so a bad value is a one-line usage error.
        output_format = output_format.lower()
        if output_format not in _FORMATS:
            raise LintError(f"--format must be one of {', '.join(_FORMATS)}, got {output_format!r}")
        if fail_on is not None and fail_on.lower() not in _SEVERITIES:
            raise LintError(f"--fail-on must be one of {', '.join(_SEVERITIES)}, got {fail_on!r}")
        if min_severity.lower() not in _SEVERITIES:
            raise LintError(f"--min-severity must be one of {', '.join(_SEVERITIES)}, got {min_severity!r}")
        if not paths:
            raise LintError("no path given; expected one or more files or directories, e.g. `tfpilot lint src`")
        if config_file is not None:
            if not config_file.is_file():
                raise LintError(f"--config `{config_file}` does not exist; pass a pyproject.toml")
            pyproject = config_file
        else:
            pyproject = find_pyproject(paths[0] if paths[0].exists() else Path.cwd())
        config = load_lint_config(pyproject).with_overrides(
            select=select,
            ignore=ignore,
            fail_on=Severity(fail_on.lower()) if fail_on is not None else None,
        )
        if jobs < 0:
            raise LintError(f"--jobs must be >= 0 (0 = one per CPU), got {jobs}")
        fixed_count = 0
        if fix:
            results = fix_files(discover_files(paths, config), config=config)
            fixed_count = sum(len(result.applied) for result in results)
        report = lint_paths(paths, config=config, jobs=jobs)
        floor = Severity(min_severity.lower()).rank
        shown = [finding for finding in report.findings if finding.severity.rank >= floor]
        hidden = len(report.findings) - len(shown)
        if output_format == "json":
            rendered = format_json(shown)
        elif output_format == "sarif":
            rendered = format_sarif(shown, rules=list(RULES), skipped=report.skipped)
        else:
            rendered = format_text(shown, show_fix=show_fix)
        if output is not None:
            atomic_write_text(output, rendered)
        elif rendered:
            typer.echo(rendered, nl=False)
        fixable = sum(1 for finding in shown if (finding.evidence or {}).get("fixable"))
        failing = [finding for finding in report.failing(config.fail_on) if finding.severity.rank >= floor]
        summary = (
            f"{len(shown)} finding(s)"
            + (f" ({hidden} below {min_severity.lower()} hidden)" if hidden else "")
            + (f", {fixable} fixable with --fix" if fixable and not fix else "")
            + (f", {fixed_count} fixed" if fix else "")
            + f" in {report.files} file(s), {report.lines} lines, {report.seconds:.2f}s"
            + f" ({report.lines_per_second:,.0f} lines/s)"
            + (f"; {len(report.skipped)} path(s) skipped" if report.skipped else "")
        )
        sys.stdout.flush()
        # Unreadable paths are notes, not findings: the exit code follows what was linted.
        for note in report.skipped:
            typer.echo(f"{note.path}: skipped: {note.reason}", err=True)
        typer.echo(summary, err=True)
        _exit(1 if failing else 0)
