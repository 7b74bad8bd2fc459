"""[tool.tfpilot.lint] in pyproject.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfpilot.errors import LintError
from tfpilot.findings import Severity
from tfpilot.lint import find_pyproject, load_lint_config


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text(body)
    return path


def test_reads_every_key(tmp_path):
    config = load_lint_config(
        write(
            tmp_path,
            """
[tool.tfpilot.lint]
select = ["TFP1", "tfp601"]
ignore = ["TFP107"]
exclude = ["legacy/*"]
per-file-ignores = { "tests/*" = ["TFP2"] }
fail-on = "warning"
""",
        )
    )
    assert config.select == ("TFP1", "TFP601") and config.ignore == ("TFP107",)
    assert config.is_enabled("TFP101") and config.is_enabled("TFP601")
    assert not config.is_enabled("TFP107") and not config.is_enabled("TFP301")
    assert config.fail_on is Severity.WARNING
    assert config.is_excluded(tmp_path / "legacy" / "a.py") and not config.is_excluded(tmp_path / "src" / "a.py")
    assert config.ignored_in(tmp_path / "tests" / "test_a.py") == ("TFP2",)


def test_no_table_means_defaults(tmp_path):
    config = load_lint_config(write(tmp_path, "[project]\nname = 'x'\n"))
    assert config.select == () and config.is_enabled("TFP601") and config.fail_on is Severity.INFO


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[tool.tfpilot.lint]\nselect = ["TFP999"]\n', "unknown rule code `TFP999`"),
        ('[tool.tfpilot.lint]\nselects = ["TFP1"]\n', "unknown key"),
        ('[tool.tfpilot.lint]\nignore = "TFP1"\nfail-on = "fatal"\n', "fail-on"),
        ("[tool.tfpilot.lint]\nselect = [1]\n", "list of strings"),
        ("[tool.tfpilot.lint\n", "cannot read"),
    ],
)
def test_bad_config_is_a_usage_error_naming_the_problem(tmp_path, body, message):
    with pytest.raises(LintError, match=message) as raised:
        load_lint_config(write(tmp_path, body))
    assert raised.value.exit_code == 2


def test_find_pyproject_walks_up(tmp_path):
    pyproject = write(tmp_path, "[tool.tfpilot.lint]\n")
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    (nested / "m.py").write_text("")
    assert find_pyproject(nested / "m.py") == pyproject.resolve()
    assert find_pyproject(nested) == pyproject.resolve()


def test_cli_overrides(tmp_path):
    config = load_lint_config(write(tmp_path, '[tool.tfpilot.lint]\nselect = ["TFP1"]\nignore = ["TFP101"]\n'))
    merged = config.with_overrides(select=["TFP6,TFP1"], ignore=["tfp602"], fail_on=Severity.ERROR)
    assert merged.select == ("TFP6", "TFP1") and merged.ignore == ("TFP101", "TFP602")
    assert merged.fail_on is Severity.ERROR
