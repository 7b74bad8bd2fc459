"""`tfpilot lint` end to end: formats, exit codes, --fix, pyproject config.

The main paths run in a fresh process (the installed entry point's code path); the quick
checks call the same `main()` in-process to keep the suite fast.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tfpilot.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lint"
LINE_RE = re.compile(r"^.+\.py:\d+:\d+: TFP\d{3} \S.*$")


def run_main(args, capsys, monkeypatch, cwd):
    """`tfpilot ARGS` in this process -> (exit code, stdout, stderr)."""
    monkeypatch.chdir(cwd)
    with pytest.raises(SystemExit) as exited:
        main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return exited.value.code, captured.out, captured.err


def test_text_output_and_exit_code_1_on_tf1_scripts(tfpilot_cli, tmp_path):
    result = tfpilot_cli(["lint", FIXTURES / "tf1", "--show-fix"], cwd=tmp_path)
    assert result.returncode == 1, result
    lines = [line for line in result.stdout.splitlines() if not line.startswith("    fix: ")]
    assert lines and all(LINE_RE.match(line) for line in lines), result
    assert any(" TFP601 " in line for line in lines) and any(" TFP608 " in line for line in lines)
    assert result.stdout.count("    fix: ") == len(lines)
    assert re.search(r"\d+ finding\(s\).* in 3 file\(s\), \d+ lines, .* lines/s", result.stderr), result


def test_clean_code_exits_0_and_prints_nothing(tfpilot_cli, tmp_path):
    result = tfpilot_cli(["lint", FIXTURES / "clean", "--jobs", "1"], cwd=tmp_path)
    assert result.returncode == 0, result
    assert result.stdout == ""
    assert "0 finding(s) in 2 file(s)" in result.stderr


def test_json_and_sarif_outputs(tfpilot_cli, tmp_path):
    sarif_path = tmp_path / "lint.sarif"
    json_result = tfpilot_cli(["lint", FIXTURES / "tf2", "--format", "json", "--select", "TFP3"], cwd=tmp_path)
    sarif_result = tfpilot_cli(["lint", FIXTURES / "tf2", "-f", "sarif", "-o", sarif_path], cwd=tmp_path)
    assert json_result.returncode == 1 and sarif_result.returncode == 1, (json_result, sarif_result)
    findings = json.loads(json_result.stdout)
    assert findings and {item["code"][:4] for item in findings} == {"TFP3"}
    assert all({"code", "severity", "title", "message", "location", "fix"} <= set(item) for item in findings)
    log = json.loads(sarif_path.read_text())
    assert log["version"] == "2.1.0" and sarif_result.stdout == ""
    assert len(log["runs"][0]["results"]) > len(findings)


def test_usage_errors_exit_2_with_one_line(capsys, monkeypatch, tmp_path):
    for args, message in [
        (["lint", tmp_path / "missing.py"], "does not exist"),
        (["lint", FIXTURES, "--format", "yaml"], "--format must be one of"),
        (["lint", FIXTURES, "--select", "TFP999"], "unknown rule code"),
        (["lint"], "no path given"),
    ]:
        code, _, err = run_main(args, capsys, monkeypatch, tmp_path)
        assert code == 2, (args, err)
        assert err.strip().count("\n") == 0 and message in err, err


def test_fix_rewrites_files_then_reports_what_is_left(tfpilot_cli, capsys, monkeypatch, tmp_path):
    target = tmp_path / "train.py"
    shutil.copy(FIXTURES / "tf2" / "keras2_leftovers.py", target)
    result = tfpilot_cli(["lint", target, "--fix"], cwd=tmp_path)
    assert result.returncode == 1, result  # decay=, paths and the rest need a person
    assert re.search(r"[1-9]\d* fixed", result.stderr), result
    fixed = target.read_text()
    assert "fit_generator" not in fixed and "learning_rate=1e-3" in fixed
    assert " TFP505 " in result.stdout and "decay" in result.stdout
    code, _, _ = run_main(["lint", target, "--fix", "--select", "TFP504,TFP501"], capsys, monkeypatch, tmp_path)
    assert code == 0


def test_pyproject_settings_and_fail_on(capsys, monkeypatch, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.tfpilot.lint]\nignore = ["TFP6"]\n')
    script = tmp_path / "legacy.py"
    script.write_text(
        "import tensorflow as tf\nsess = tf.Session()\nds = tf.data.Dataset.range(3).repeat().shuffle(3)\n"
    )
    code, out, _ = run_main(["lint", script], capsys, monkeypatch, tmp_path)
    assert code == 1 and " TFP306 " in out and "TFP601" not in out, out
    code, out, _ = run_main(["lint", script, "--fail-on", "warning"], capsys, monkeypatch, tmp_path)
    assert code == 0 and " TFP306 " in out, out


def test_list_rules_and_explain(capsys, monkeypatch, tmp_path):
    code, out, _ = run_main(["lint", "--list-rules"], capsys, monkeypatch, tmp_path)
    assert code == 0 and len(out.splitlines()) >= 25
    code, out, _ = run_main(["lint", "--explain", "tfp404"], capsys, monkeypatch, tmp_path)
    assert code == 0 and "TF Serving" in out and "model.export" in out
