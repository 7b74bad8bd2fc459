"""`tfpilot migrate SRC DEST`: TF1 / Keras 2 code -> code that runs on TF 2.21 (tfpilot.migrate).

TensorFlow (tf_upgrade_v2) is imported inside the command, so `tfpilot --help` stays fast.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

__all__ = ["register"]


def _exit(code: int) -> None:
    # typer.Exit is swallowed into a return value under standalone_mode=False; SystemExit is not.
    sys.stdout.flush()
    raise SystemExit(code)


def register(app: typer.Typer) -> None:
    @app.command("migrate")
    def migrate_command(
        source: Path = typer.Argument(..., help="TF1 / Keras 2 file or directory."),
        destination: Path = typer.Argument(..., help="New file or directory to write the migrated code to."),
        mode: str = typer.Option(
            "compat",
            "--mode",
            help="compat: TF1 code that runs on TF 2.21 via tf.compat.v1 (graph mode where the file builds a graph, "
            "helpers for removed APIs). native: placeholder + Session training loops rewritten to tf.function, "
            "GradientTape, Keras layers and optimizers, tf.train.Checkpoint; files it cannot prove get compat output.",
        ),
        report: Path = typer.Option(
            None, "--report", help="Report path (default: DEST/MIGRATION_REPORT.md, or DEST.migration.md)."
        ),
        verify: bool = typer.Option(
            False, "--verify", help="Then run each migrated entry script (in a scratch copy) and report what happened."
        ),
        verify_timeout: float = typer.Option(
            300.0, "--verify-timeout", help="Seconds each script may run under --verify before it is stopped."
        ),
    ) -> None:
        """Upgrade TF1 -> TF2 with TensorFlow's tf_upgrade_v2, make it run, apply tfpilot's fixes, report the rest.

        Exit code 0: every file is expected to run (and, with --verify, no script failed); 1: a file
        will not run as migrated (the report says what stops it); 2: usage error.
        """
        from tfpilot.lint import find_pyproject, load_lint_config
        from tfpilot.migrate import migrate

        config = load_lint_config(find_pyproject(source if source.exists() else Path.cwd()))
        result = migrate(
            source,
            destination,
            mode=mode,
            report_path=report,
            config=config,
            verify_timeout=verify_timeout if verify else None,
        )
        automatic = len(result.rewritten)
        blocking = sum(item.blocks_run for item in result.needs_person)
        line = (
            f"migrated {result.files} file(s) into {result.destination} (--mode {result.mode}): "
            f"{result.will_run} of {result.files} expected to run; {automatic} change(s) made automatically, "
            f"{len(result.needs_person)} need a person ({blocking} stop a file), {len(result.notes)} note(s)"
        )
        if result.verified:
            ran = sum(run.outcome == "ran" for run in result.verified)
            line += f"; --verify: {ran} of {len(result.verified)} script(s) ran to the end"
            failed = [run for run in result.verified if run.outcome == "failed"]
            line += "".join(f"\n  {run.path} failed: {run.detail}" for run in failed)
        typer.echo(f"{line}; report: {result.report_path}")
        _exit(0 if result.ok else 1)
