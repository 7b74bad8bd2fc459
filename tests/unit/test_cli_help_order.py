"""`tfpilot --help` lists the commands by the lifecycle (issue 35), grouped in panels."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from tfpilot.cli.main import COMMAND_ORDER, COMMAND_PANELS, app


def test_help_groups_commands_in_lifecycle_panels_and_lists_every_command():
    text = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "120"}).output
    panels = [p for p in re.findall(r"╭─ ([A-Za-z ]+?) ─", text) if p != "Options"]
    assert panels == list(COMMAND_PANELS)
    listed = re.findall(r"^│ ([a-z]+) ", text, flags=re.MULTILINE)
    assert sorted(listed) == sorted(COMMAND_ORDER)
    # Within the first panel the lifecycle starts where a new user starts.
    assert listed[:4] == ["run", "train", "evaluate", "export"]
