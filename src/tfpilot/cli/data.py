"""`tfpilot data inspect CONFIG`: the data audit, before any training."""

from __future__ import annotations

import json
from pathlib import Path

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    data_app = typer.Typer(help="Look at the data a config trains on.", no_args_is_help=True)
    app.add_typer(data_app, name="data")

    @data_app.command("inspect")
    def inspect_command(
        config: Path = typer.Argument(..., help="YAML run config."),
        output_format: str = typer.Option("text", "--format", help="text or json."),
        output: Path | None = typer.Option(None, "--output", "-o", help="Also write the report as JSON here."),
    ) -> None:
        """Examples per class and split, missing and bad cells, undecodable files, leaks, constant columns."""
        from tfpilot.errors import ConfigError

        if output_format not in ("text", "json"):
            raise ConfigError(f"--format must be text or json, got `{output_format}`")
        from tfpilot.config import load_config

        resolved = load_config(config)
        from tfpilot.cli.render import console, render_findings, render_mapping_table
        from tfpilot.data import build_pipeline
        from tfpilot.data.audit import write_data_report
        from tfpilot.errors import DataError

        try:
            pipeline = build_pipeline(resolved.data, batch_size=resolved.train.batch_size, seed=resolved.train.seed)
        except DataError as error:
            if not error.problems:
                raise
            from tfpilot.data.bad_records import problems_report

            # Data that cannot be trained on: the whole list (as `tfpilot train` writes it), then exit 2.
            failed = problems_report(str(resolved.data.path), resolved.data.kind.value, error)
            if output is not None:
                write_data_report(output, failed)
            if output_format == "json":
                typer.echo(json.dumps(failed, indent=2))
            else:
                render_mapping_table(
                    [{"#": number, "problem": problem} for number, problem in enumerate(error.problems, 1)],
                    title=f"{len(error.problems)} data problem(s)",
                )
            raise
        report, findings = pipeline.audit()
        if output is not None:
            write_data_report(output, report)
        if output_format == "json":
            typer.echo(json.dumps(report, indent=2))
            return
        console.print(f"[bold]{report['source']}[/bold] ({report['kind']}): {report['examples']}")
        render_mapping_table(
            [
                {"class": name, **{split: counts[name] for split, counts in report["examples_per_class"].items()}}
                for name in report["classes"]
            ],
            title="Examples per class and split",
        )
        missing = {c: n for c, n in report["missing_values"].items() if n}
        if missing:
            render_mapping_table([{"column": c, "missing": n} for c, n in missing.items()], title="Missing values")
        render_findings(findings, title="Data findings")

    @data_app.command("convert")
    def convert_command(
        config: Path = typer.Argument(..., help="YAML run config whose data section is an image folder or a CSV."),
        out: Path = typer.Argument(..., help="Folder to write the TFRecord shards into."),
        shards: int = typer.Option(4, "--shards", help="Number of shard files."),
    ) -> None:
        """Write the config's image folder or CSV as sharded TFRecords and print the data section that reads them."""
        from tfpilot.errors import ConfigError

        if shards < 1:
            raise ConfigError(f"--shards must be >= 1, got {shards}")
        from tfpilot.config import load_config

        resolved = load_config(config)
        from tfpilot.cli.render import console
        from tfpilot.config.schema import DataKind
        from tfpilot.data import load_source
        from tfpilot.data.tfrecord import write_tfrecords

        if resolved.data.kind not in (DataKind.IMAGE_FOLDER, DataKind.CSV):
            raise ConfigError(
                f"`tfpilot data convert` reads image_folder or csv data, got data.kind `{resolved.data.kind.value}`"
            )
        source = load_source(resolved.data)
        section = write_tfrecords(source, out, num_shards=shards)
        console.print(f"wrote {len(source)} examples as {min(shards, len(source))} shard(s) to {out}")
        console.print("use this data section (also in data_config.json there):")
        typer.echo(json.dumps(section, indent=2))

    @data_app.command("bench")
    def bench_command(
        config: Path = typer.Argument(..., help="YAML run config."),
        output_format: str = typer.Option("text", "--format", help="text or json."),
    ) -> None:
        """Tuned pipeline throughput vs the naive pipeline and vs the model's step rate, with a verdict."""
        from tfpilot.errors import ConfigError

        if output_format not in ("text", "json"):
            raise ConfigError(f"--format must be text or json, got `{output_format}`")
        from tfpilot.config import load_config

        resolved = load_config(config)
        from tfpilot.cli.render import console, render_findings, render_mapping_table
        from tfpilot.data import build_pipeline
        from tfpilot.data.bench import bench_pipeline
        from tfpilot.models import build_model

        pipeline = build_pipeline(resolved.data, batch_size=resolved.train.batch_size, seed=resolved.train.seed)
        model = build_model(
            resolved.model,
            input_shape=pipeline.preprocessor.output_shape(),
            num_classes=pipeline.num_classes,
            vocab_size=pipeline.preprocessor.vocab_size,
        )
        result = bench_pipeline(pipeline, model)
        findings = result.pop("findings")
        if output_format == "json":
            typer.echo(json.dumps({**result, "findings": [f.to_dict() for f in findings]}, indent=2))
            return
        render_mapping_table([result], title="Input pipeline (examples/s, same run)")
        verdict = "input-bound" if result["input_bound"] else "not input-bound"
        console.print(f"verdict: {verdict} (pipeline/step = {result['pipeline_vs_step']:.2f})")
        render_findings(findings, title="Data findings")
