"""`tfpilot run`, `train`, `evaluate`, `export`: the lifecycle commands."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from tfpilot.rundir import RunDir

__all__ = ["register"]


def _load(config: Path | None):
    from tfpilot.config import load_config
    from tfpilot.workflow import load_bundled_config

    return load_bundled_config() if config is None else load_config(config)


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run_command(
        config: Path | None = typer.Argument(None, help="YAML run config; omit to run the bundled digits example."),
    ) -> None:
        """Train -> evaluate -> export -> report. No CONFIG runs the bundled example offline."""
        # Validate the config first: a bad key fails before TensorFlow is imported (progress imports it).
        resolved = _load(config)
        from tfpilot.cli.progress import ProgressHook
        from tfpilot.cli.render import console, render_findings, render_mapping_table, show_log_lines
        from tfpilot.findings import read_findings
        from tfpilot.workflow import run

        console.print(f"[bold]tfpilot run[/bold] `{resolved.name}` -> {resolved.run_path}")
        # Long first-time work says how far it is: the image check, the step tuner, TF.js' tools.
        with show_log_lines("tfpilot.export.tfjs"), show_log_lines("tfpilot.progress"):
            summary = run(resolved, hooks=[ProgressHook()])
        rows = [
            {"split": split, **{k: v for k, v in values.items() if k != "confusion_matrix"}}
            for split, values in summary["metrics"].items()
        ]
        render_mapping_table(rows, title="Metrics")
        if "export" in summary:
            console.print(
                f"SavedModel version {summary['export']['version']} -> {summary['export']['saved_model']} (verified)"
            )
        render_findings(read_findings(RunDir.at(summary["run"]).findings_path))
        for key in ("report",):
            if key in summary:
                console.print(f"report -> {summary[key]}")

    @app.command("train")
    def train_command(
        config: Path = typer.Argument(..., help="YAML run config."),
        resume: bool = typer.Option(False, "--resume", help="Continue from the run's latest checkpoint."),
    ) -> None:
        """Train a model from CONFIG into runs/<name>/ (checkpoints, TensorBoard logs, metrics)."""
        resolved = _load(config)  # before the imports below, which load TensorFlow
        from tfpilot.cli.progress import ProgressHook
        from tfpilot.cli.render import console, render_findings, render_mapping_table, show_log_lines
        from tfpilot.findings import read_findings
        from tfpilot.workflow import train_run

        with show_log_lines("tfpilot.progress"):  # the image check and the step tuner say how far they are
            trainer, result = train_run(resolved, resume=resume, hooks=[ProgressHook()])
        if not trainer.chief:
            # Under `tfpilot launch` only the chief writes metrics.json; other workers just finish.
            console.print(f"worker finished at step {result.global_step}")
            return
        metrics = json.loads(RunDir.at(resolved.run_path).metrics_path.read_text())
        render_mapping_table(
            [
                {"split": s, **{k: v for k, v in m.items() if k != "confusion_matrix"}}
                for s, m in metrics.items()
                if s != "class_names"
            ],
            title="Metrics",
        )
        # The run's findings file holds the data audit's findings too (skipped rows, imputed cells).
        render_findings(read_findings(RunDir.at(resolved.run_path).findings_path))
        console.print(f"run directory: {resolved.run_path}")

    @app.command("evaluate")
    def evaluate_command(
        run: Path = typer.Argument(..., help="Run directory (runs/<name>)."),
        split: str = typer.Option("test", "--split", help="train, validation or test."),
        data: Path | None = typer.Option(
            None,
            "--data",
            help="tfpilot.fit runs: batches written by tf.data.Dataset.save (default: its validation data).",
        ),
        imports: list[str] = typer.Option(
            [], "--import", help="tfpilot.fit runs: a module to import first (it defines a custom object)."
        ),
    ) -> None:
        """Evaluate a trained run's model on a split."""
        from tfpilot.cli.render import render_mapping_table
        from tfpilot.errors import ConfigError
        from tfpilot.rundir import RunDir
        from tfpilot.workflow import evaluate_run, load_trained

        if RunDir.existing(run).is_fit_run():
            from tfpilot.train.fit import evaluate_fit_run

            metrics = evaluate_fit_run(RunDir.existing(run), data_path=data, extra_modules=imports)
            render_mapping_table([{"data": str(data or "validation"), **metrics}], title="Evaluation")
            return
        if data is not None:
            raise ConfigError("--data is for runs trained by tfpilot.fit; this run's splits come from its config")
        if split not in ("train", "validation", "test"):
            raise ConfigError(f"--split must be train, validation or test, got `{split}`")
        metrics = evaluate_run(load_trained(run), split=split)
        render_mapping_table([{"split": split, **metrics}], title="Evaluation")

    @app.command("export")
    def export_command(
        run: Path = typer.Argument(..., help="Run directory (runs/<name>)."),
        version: int | None = typer.Option(None, "--version", min=1, help="Version number (default: next integer)."),
        format: str | None = typer.Option(
            None, "--format", help="Comma-separated: saved_model,tflite,tflite-dynamic,tflite-int8,tflite-fp16,tfjs."
        ),
        imports: list[str] = typer.Option(
            [], "--import", help="tfpilot.fit runs: a module to import first (it defines a custom object)."
        ),
    ) -> None:
        """Export a verified SavedModel version (and TFLite variants) from a trained run."""
        from pydantic import ValidationError

        from tfpilot.cli.render import console
        from tfpilot.config.schema import ExportConfig
        from tfpilot.errors import ConfigError
        from tfpilot.workflow import export_run, load_trained

        formats = None
        if format:
            formats = [f.strip() for f in format.split(",") if f.strip()]
            try:
                ExportConfig(formats=formats)
            except ValidationError as exc:
                message = exc.errors()[0]["msg"].removeprefix("Value error, ")
                raise ConfigError(f"--format: {message}") from None
        from tfpilot.cli.render import render_findings, render_mapping_table, show_log_lines
        from tfpilot.export.formats import ExportParityError

        _PARITY_COLUMNS = (
            "format",
            "size_bytes",
            "accuracy",
            "accuracy_drop",
            "argmax_agreement",
            "max_abs_diff",
            "latency_ms_p50",
        )
        from tfpilot.rundir import RunDir

        if RunDir.existing(run).is_fit_run():
            if formats and formats != ["saved_model"]:
                raise ConfigError(f"--format: a tfpilot.fit run exports saved_model only for now, got {formats}")
            from tfpilot.export.fit_model import export_fit_run

            result = export_fit_run(RunDir.existing(run), version=version, extra_modules=imports)
            sampled = (
                f"; {', '.join(result.sampled_outputs)} sample at inference: checked for shape and dtype"
                if result.sampled_outputs
                else ""
            )
            console.print(f"SavedModel version {result.version} -> {result.path} (verified with both loaders{sampled})")
            return
        try:
            # TF.js' first use installs its tools: show each step and a heartbeat while it runs.
            with show_log_lines("tfpilot.export.tfjs"):
                summary = export_run(load_trained(run), version=version, formats=formats)
        except ExportParityError as error:
            # The artifacts are written; show the table that explains the failure, then exit 1.
            render_mapping_table(
                [{k: row.get(k) for k in _PARITY_COLUMNS} for row in error.rows], title="Export parity"
            )
            render_findings(error.findings)
            raise
        console.print(
            f"SavedModel version {summary['version']} -> {summary['saved_model']} (verified with both loaders)"
        )
        rows = (summary.get("formats") or {}).get("parity") if isinstance(summary.get("formats"), dict) else None
        if rows:
            render_mapping_table([{k: row.get(k) for k in _PARITY_COLUMNS} for row in rows], title="Export parity")
            render_findings(summary["formats"].get("findings") or [])
        elif "formats" in summary:
            console.print_json(json.dumps(summary["formats"], default=str))
