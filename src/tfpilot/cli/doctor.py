"""`tfpilot profile CONFIG --steps A:B` and `tfpilot doctor RUN|CONFIG|SCRIPT.py [-- ARGS]`."""

from __future__ import annotations

from pathlib import Path

import typer

from tfpilot.diagnose.window_spec import DEFAULT_PROFILE_STEPS

__all__ = ["register"]

_FAIL_ON = ("error", "warning", "never")


def _render_summary(summary) -> None:
    from tfpilot.cli.render import render_mapping_table

    steps = summary.steps
    render_mapping_table(
        [
            {
                "steps": steps.steps,
                "step_ms": steps.step_ms,
                "input_ms": steps.input_ms,
                "input_%": steps.input_percent,
                "compute_ms": steps.compute_ms,
                "compute_%": steps.compute_percent,
                "other_ms": steps.other_ms,
                "other_%": steps.other_percent,
            }
        ],
        title="Step-time breakdown (mean per step)",
    )
    render_mapping_table(
        [
            {
                "op": op.operation,
                "type": op.type,
                "where": op.host_or_device,
                "count": op.occurrences,
                "self_ms": op.total_self_time_ms,
                "self_%": op.self_time_percent,
            }
            for op in summary.top_ops[:10]
        ],
        title="Top ops by self time",
    )
    render_mapping_table(
        [
            {"stage": s.stage, "iterator": s.name, "count": s.count, "self_ms": s.self_time_ms}
            for s in summary.input_stages[:6]
        ],
        title="tf.data stages by self time",
    )


def _finish(findings, *, fail_on: str, title: str) -> None:
    from tfpilot.cli.render import render_findings
    from tfpilot.findings import Severity

    render_findings(findings, title=title)
    if fail_on == "never":
        return
    threshold = Severity(fail_on).rank
    if any(f.severity.rank >= threshold for f in findings):
        raise typer.Exit(1)


def _check_fail_on(fail_on: str) -> None:
    from tfpilot.errors import ConfigError

    if fail_on not in _FAIL_ON:
        raise ConfigError(f"--fail-on must be one of {', '.join(_FAIL_ON)}, got `{fail_on}`")


def _profile_config(config_path: Path, steps: str):
    """Train CONFIG with a ProfileHook; returns (hook, run) after appending findings to findings.json."""
    from tfpilot.cli.progress import ProgressHook
    from tfpilot.config import load_config
    from tfpilot.diagnose import ProfileHook
    from tfpilot.findings import read_findings, write_findings
    from tfpilot.rundir import RunDir
    from tfpilot.workflow import train_run

    config = load_config(config_path)
    run = RunDir.at(config.run_path)
    hook = ProfileHook.from_spec(run.profile_dir, steps)
    train_run(config, hooks=[ProgressHook(), hook])
    # train_run records every hook's findings itself; append only what it did not (never twice).
    recorded = [f.to_dict() for f in read_findings(run.findings_path)]
    missing = [f for f in hook.findings if f.to_dict() not in recorded]
    if missing or not run.findings_path.exists():
        write_findings(run.findings_path, missing, append=True)
    return hook, run


def register(app: typer.Typer) -> None:
    @app.command("profile")
    def profile_command(
        config: Path = typer.Argument(..., help="YAML run config."),
        steps: str = typer.Option("5:10", "--steps", help="Global steps to capture, START:STOP (STOP excluded)."),
        fail_on: str = typer.Option(
            "never", "--fail-on", help="Exit 1 on findings at this severity: error, warning, never."
        ),
    ) -> None:
        """Train CONFIG while profiling steps START..STOP-1; write profile/ (trace.json.gz, op_stats.csv, summary.json) and findings."""
        from tfpilot.diagnose.window_spec import parse_step_window
        from tfpilot.errors import ConfigError

        _check_fail_on(fail_on)
        parse_step_window(steps)
        if not config.is_file():
            raise ConfigError(f"config `{config}` does not exist; expected a YAML run config")
        from tfpilot.cli.render import console

        hook, run = _profile_config(config, steps)
        if hook.summary is None:
            raise ConfigError(
                f"the run ended before step {hook.window.start_step}, so nothing was profiled; "
                f"choose --steps inside the run's steps (got `{steps}`)"
            )
        _render_summary(hook.summary)
        console.print(f"profile -> {run.profile_dir} (trace.json.gz opens in chrome://tracing or ui.perfetto.dev)")
        _finish(hook.findings, fail_on=fail_on, title="Profile findings")

    @app.command("doctor", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def doctor_command(
        target: str = typer.Argument(..., help="A run directory, a YAML config, or a Python training script."),
        args: list[str] | None = typer.Argument(None, help="Arguments for SCRIPT.py (after --)."),
        output: Path | None = typer.Option(
            None,
            "--output",
            "-o",
            help="Where a script's watch report, profile and findings go (default runs/doctor-<script>).",
        ),
        profile_start: int = typer.Option(
            5,
            "--profile-start",
            help="Profile from the Nth call of the step function (later while a cache() fills its first epoch).",
        ),
        profile_steps: int = typer.Option(
            DEFAULT_PROFILE_STEPS,
            "--profile-steps",
            help="Number of steps to measure (after the steps a prefetch buffer may serve).",
        ),
        steps: str = typer.Option("5:10", "--steps", help="For a CONFIG: steps to profile, START:STOP."),
        fail_on: str = typer.Option(
            "error", "--fail-on", help="Exit 1 on findings at this severity: error, warning, never."
        ),
    ) -> None:
        """Diagnose a run directory, a config (trains with a profile window) or your own script."""
        from tfpilot.diagnose.window_spec import parse_step_window
        from tfpilot.errors import ConfigError

        _check_fail_on(fail_on)
        path = Path(target)
        # Reject bad input before TensorFlow is imported (that import alone takes seconds).
        if path.suffix == ".py" and not path.is_file():
            raise ConfigError(f"script `{target}` does not exist; expected an existing SCRIPT.py")
        if path.suffix in (".yaml", ".yml"):
            if not path.is_file():
                raise ConfigError(f"config `{target}` does not exist; expected a YAML run config")
            parse_step_window(steps)
        elif path.suffix != ".py" and not path.is_dir():
            raise ConfigError(
                f"`{target}` is neither a run directory, a YAML config nor a .py script; pass one of those"
            )
        from tfpilot.cli.render import console
        from tfpilot.diagnose import analyze_run, doctor_script
        from tfpilot.findings import write_findings

        if path.suffix == ".py":
            result = doctor_script(
                path, list(args or []), output_dir=output, profile_start=profile_start, profile_steps=profile_steps
            )
            if result.summary is not None:
                _render_summary(result.summary)
            if result.returncode:
                console.print(
                    f"[yellow]the script exited with status {result.returncode}[/yellow]\n{result.stderr_tail}",
                    markup=False,
                )
            console.print(f"doctor output -> {result.output_dir}")
            _finish(result.findings, fail_on=fail_on, title=f"Doctor: {path.name}")
            if result.returncode:
                # A failed script is never a clean diagnosis, whatever --fail-on says.
                raise typer.Exit(1)
        elif path.suffix in (".yaml", ".yml"):
            hook, run = _profile_config(path, steps)
            if hook.summary is not None:
                _render_summary(hook.summary)
            _finish(hook.findings, fail_on=fail_on, title=f"Doctor: {run.root}")
        else:
            findings = analyze_run(path)
            write_findings(path / "findings.json", findings, append=True)
            _finish(findings, fail_on=fail_on, title=f"Doctor: {path}")
