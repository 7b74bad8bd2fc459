"""`tfpilot monitor drift|stats`, `tfpilot validate` and `tfpilot push`: watch a model, gate it, ship it."""

from __future__ import annotations

from pathlib import Path

import typer

from tfpilot.rundir import RunDir

__all__ = ["register"]


def _thresholds_for(reference: Path):
    """Drift thresholds from the reference run's config (defaults when only a stats file is given)."""
    from tfpilot.config import load_config
    from tfpilot.monitor import DriftThresholds

    config_path = reference / "config.yaml" if reference.is_dir() else reference.parent / "config.yaml"
    if config_path.is_file():
        return DriftThresholds.from_config(load_config(config_path).monitor)
    return DriftThresholds()


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Watch served traffic: reference statistics and drift.", no_args_is_help=True)

    @group.command("drift")
    def drift_command(
        reference: Path = typer.Option(
            ..., "--reference", help="Run directory (or its reference_stats.json) of the served model."
        ),
        requests: Path = typer.Option(..., "--requests", help="Request log written by `tfpilot serve --request_log`."),
        model: str | None = typer.Option(None, "--model", help="Only requests to this model name."),
        window: int | None = typer.Option(None, "--window", min=1, help="Judge only the newest N served examples."),
        output: Path | None = typer.Option(
            None, "--output", help="Where to write the drift report JSON (default: RUN/drift.json)."
        ),
    ) -> None:
        """Compare logged traffic with the training data; exit 1 when any feature or the predictions drifted."""
        from tfpilot.atomic import atomic_write_json
        from tfpilot.cli.render import console, render_findings, render_mapping_table
        from tfpilot.errors import MonitorError
        from tfpilot.monitor import detect_drift, drift_findings

        report = detect_drift(reference, requests, model=model, window=window, thresholds=_thresholds_for(reference))
        rows = [
            {
                "feature": name,
                "drifted": name in report.drifted_features(),
                **{k: scores.get(k) for k in ("js", "psi", "ks_statistic", "ks_pvalue", "linf")},
            }
            for name, scores in report.scores().items()
        ]
        render_mapping_table(
            rows, title=f"Drift over {report.num_examples} served examples ({report.num_requests} requests)"
        )
        render_findings(drift_findings(report, location=str(requests)), title="Drift findings")
        destination = output or (RunDir.at(reference).drift_path if reference.is_dir() else None)
        if destination is not None:
            atomic_write_json(destination, report.to_dict())
            console.print(f"drift report -> {destination}")
        if report.drifted:
            # An error with exit code 1 (not typer.Exit): main() turns it into one stderr line and the code.
            raise MonitorError(
                f"drift detected in {', '.join(report.drifted_features())} over {report.num_examples} served examples",
                exit_code=1,
            )

    @group.command("stats")
    def stats_command(run: Path = typer.Argument(..., help="Run directory (runs/<name>).")) -> None:
        """Compute reference_stats.json for a trained run (`tfpilot run` writes it at training time)."""
        from tfpilot.cli.render import console
        from tfpilot.config import load_config
        from tfpilot.data import Preprocessor, build_pipeline
        from tfpilot.monitor import compute_reference_stats, write_reference_stats
        from tfpilot.rundir import RunDir

        run_dir = RunDir.existing(run)
        config = load_config(run_dir.config_path)
        preprocessor = Preprocessor.load(run_dir.preprocessing_path) if run_dir.preprocessing_path.exists() else None
        pipeline = build_pipeline(
            config.data, batch_size=config.train.batch_size, seed=config.train.seed, preprocessor=preprocessor
        )
        path = write_reference_stats(compute_reference_stats(pipeline), run_dir.reference_stats_path)
        console.print(f"reference statistics -> {path}")

    app.add_typer(group, name="monitor")

    @app.command("validate")
    def validate_command(
        candidate: Path = typer.Option(
            ..., "--candidate", help="Run directory of the candidate (its latest exported version)."
        ),
        baseline: Path = typer.Option(
            ..., "--baseline", help="Baseline SavedModel directory, or a serving base path (latest version)."
        ),
        threshold: list[str] | None = typer.Option(
            None,
            "--threshold",
            help="Repeatable: `accuracy>=0.95` (absolute) or `accuracy change>=-0.005` (vs baseline). "
            "Default: the candidate config's monitor.gate.",
        ),
        split: str = typer.Option(
            "test", "--split", help="Split both models are evaluated on: train, validation or test."
        ),
    ) -> None:
        """Evaluate candidate and baseline on the same data; write blessing.json; exit 1 unless blessed."""
        from tfpilot.cli.render import console, render_mapping_table
        from tfpilot.errors import MonitorError
        from tfpilot.monitor import blessing_path, parse_threshold, validate_candidate

        if split not in ("train", "validation", "test"):
            raise MonitorError(f"--split must be train, validation or test, got `{split}`")
        thresholds = [parse_threshold(t) for t in threshold] if threshold else None
        blessing = validate_candidate(candidate, baseline, thresholds=thresholds, split=split)
        render_mapping_table(
            [
                {
                    "threshold": c.threshold,
                    "candidate": c.candidate,
                    "baseline": c.baseline,
                    "observed": c.observed,
                    "passed": "pass" if c.passed else "FAIL",
                }
                for c in blessing.checks
            ],
            title=f"Validation on {blessing.examples} `{split}` examples",
        )
        console.print(f"blessing record -> {blessing_path(candidate)}")
        if blessing.blessed:
            console.print("[green]blessed[/green]: the candidate may be pushed")
        else:
            raise MonitorError(
                "not blessed: failed "
                + ", ".join(f"{c.threshold} (got {c.observed:.4g})" for c in blessing.failed)
                + "; the candidate may not be pushed",
                exit_code=1,
            )

    @app.command("push")
    def push_command(
        run: Path = typer.Argument(..., help="Run directory whose blessed SavedModel is pushed."),
        to: Path = typer.Option(..., "--to", help="Serving base path (the --model_base_path of `tfpilot serve`)."),
    ) -> None:
        """Copy a blessed SavedModel into a serving base path as the next version, atomically."""
        from tfpilot.cli.render import console
        from tfpilot.monitor import push_blessed

        result = push_blessed(run, to)
        console.print(f"pushed {result.source} -> {result.path} (version {result.version})")
