"""`tfpilot config schema|show`: JSON Schema for editors, and the resolved config."""

from __future__ import annotations

import json
from pathlib import Path

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Inspect the run configuration.", no_args_is_help=True)

    @group.command("schema")
    def schema() -> None:
        """Print the config's JSON Schema (point your editor's YAML plugin at it)."""
        from tfpilot.config import config_json_schema

        typer.echo(json.dumps(config_json_schema(), indent=2))

    @group.command("show")
    def show(config: Path = typer.Argument(..., help="YAML run config.")) -> None:
        """Validate CONFIG and print it with every default filled in."""
        import yaml

        from tfpilot.config import load_config

        resolved = load_config(config)
        typer.echo(yaml.safe_dump(json.loads(resolved.model_dump_json()), sort_keys=False))

    app.add_typer(group, name="config")
