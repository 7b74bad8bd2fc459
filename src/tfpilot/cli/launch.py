"""`tfpilot launch --workers N [--ps M] [--timeout S] -- tfpilot train CONFIG`: local multi-worker or parameter-server training."""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command(
        "launch",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def launch_command(
        ctx: typer.Context,
        workers: int = typer.Option(
            2, "--workers", min=1, help="Number of worker processes (MultiWorkerMirroredStrategy)."
        ),
        ps: int = typer.Option(
            0,
            "--ps",
            min=0,
            help="Parameter-server tasks: M > 0 starts M ps and N worker servers plus a chief running the command (train.strategy: parameter_server).",
        ),
        timeout: float | None = typer.Option(
            None, "--timeout", min=1, help="Stop every worker and fail after S seconds; also bounds each collective."
        ),
        worker_dir: Path | None = typer.Option(
            None, "--worker-dir", help="Where non-chief workers write (default: a throwaway temp directory)."
        ),
        command: list[str] | None = typer.Argument(
            None, help="The worker command after `--`, e.g. `tfpilot train CONFIG`."
        ),
    ) -> None:
        """Start N local workers with TF_CONFIG on free 127.0.0.1 ports and stream their prefixed logs."""
        import shutil
        import sys

        from tfpilot.cli.render import console
        from tfpilot.errors import ConfigError, TrainError
        from tfpilot.train.launch import PREEMPTED_EXIT_CODE, launch_parameter_server, launch_workers

        argv = list(command or []) + list(ctx.args)
        if ps and worker_dir:
            raise ConfigError(
                f"--worker-dir {worker_dir} with --ps {ps}: parameter-server workers write nothing; drop --worker-dir"
            )
        if not argv:
            raise ConfigError("no worker command; expected `tfpilot launch --workers N -- tfpilot train CONFIG`")
        # `tfpilot` inside the launched command means this very installation, whatever PATH holds.
        if argv[0] == "tfpilot":
            argv = [sys.executable, "-m", "tfpilot.cli.main", *argv[1:]]
        elif shutil.which(argv[0]) is None and not Path(argv[0]).exists():
            raise ConfigError(f"worker command `{argv[0]}` not found; expected e.g. `tfpilot train CONFIG`")
        if ps:
            # Only the chief runs `argv`; the ps and worker tasks are bare tf.distribute servers.
            result = launch_parameter_server(
                argv, num_workers=workers, num_ps=ps, timeout=timeout, echo=lambda line: print(line, flush=True)
            )
        else:
            result = launch_workers(
                argv,
                num_workers=workers,
                timeout=timeout,
                worker_dir=str(worker_dir) if worker_dir else None,
                echo=lambda line: print(line, flush=True),
            )
        if result.preempted and ps:
            # The parameter-server chief checkpoints at the end of every epoch, not on SIGTERM.
            console.print(
                "stopped by SIGTERM: the chief's last end-of-epoch checkpoint is kept; rerun with `--resume` to continue from it"
            )
            raise TrainError("launch interrupted by SIGTERM", exit_code=PREEMPTED_EXIT_CODE)
        if result.preempted:
            console.print(
                "preempted: every worker saved a checkpoint; rerun the same command with `--resume` to continue"
            )
            raise TrainError("launch interrupted by SIGTERM after checkpointing", exit_code=PREEMPTED_EXIT_CODE)
        console.print(f"{workers} worker(s){f' and {ps} ps' if ps else ''} finished in {result.seconds:.1f}s")
