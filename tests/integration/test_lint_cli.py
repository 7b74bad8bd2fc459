"""`tfpilot lint` end to end: formats, exit codes, --fix, pyproject config.

The main paths run in a fresh process (the installed entry point's code path); the quick
checks call the same `main()` in-process to keep the suite fast.
"""

from __future__ import annotations

import json
import os
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


# --- robustness: one bad file never stops the run ------------------------------------------------

SESSION = "import tensorflow as tf\nsess = tf.Session()\n"


def test_deep_expressions_are_linted_and_absurd_depth_is_one_tfp000(capsys, monkeypatch, tmp_path):
    # 1,000 terms is ordinary generated code (Python runs it); the walk must follow it.
    (tmp_path / "long_sum.py").write_text(SESSION + "x = " + " + ".join(["1"] * 1000) + "\n")
    (tmp_path / "parens.py").write_text(SESSION + "x = " + "(" * 190 + "1" + ")" * 190 + "\n")
    (tmp_path / "unary.py").write_text(SESSION + "x = " + "-" * 2000 + "1\n")
    (tmp_path / "absurd.py").write_text(SESSION + "x = " + " + ".join(["1"] * 25_000) + "\n")
    code, out, err = run_main(["lint", tmp_path, "--jobs", "1"], capsys, monkeypatch, tmp_path)
    assert code == 1, err
    found = {(Path(line.split(":")[0]).name, line.split()[1]) for line in out.splitlines()}
    assert {("long_sum.py", "TFP601"), ("parens.py", "TFP601"), ("unary.py", "TFP601")} <= found, out
    assert ("absurd.py", "TFP000") in found and ("absurd.py", "TFP601") not in found, out
    assert "nested more than" in out and "RecursionError" not in out + err
    assert "in 4 file(s)" in err


def test_undecodable_and_nul_byte_files_are_tfp000_and_the_rest_is_linted(tfpilot_cli, tmp_path):
    (tmp_path / "latin.py").write_bytes(b"import tensorflow as tf\n# caf\xe9\nsess = tf.Session()\n")
    (tmp_path / "declared.py").write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + SESSION.encode())
    (tmp_path / "nul.py").write_bytes(b"import tensorflow as tf\nx = 1\x00\n")
    (tmp_path / "clean.py").write_text("x = 1\n")
    result = tfpilot_cli(["lint", tmp_path, "--format", "json"], cwd=tmp_path)
    assert result.returncode == 1, result
    by_file = {}
    for item in json.loads(result.stdout):
        by_file.setdefault(Path(item["location"].rsplit(":", 2)[0]).name, []).append(item)
    (latin,) = by_file["latin.py"]
    assert latin["code"] == "TFP000" and latin["title"] == "undecodable-file", latin
    assert latin["location"].endswith(":2:6") and "0xe9" in latin["message"] and "coding" in latin["fix"]
    assert [item["code"] for item in by_file["declared.py"]] == ["TFP601"]  # its cookie is honoured
    (nul,) = by_file["nul.py"]
    assert nul["code"] == "TFP000" and "null bytes" in nul["message"]
    assert "clean.py" not in by_file and "in 4 file(s)" in result.stderr


def test_broken_symlink_is_a_skip_note_and_the_exit_code_follows_the_findings(tfpilot_cli, tmp_path):
    (tmp_path / "clean.py").write_text("x = 1\n")
    (tmp_path / "gone.py").symlink_to(tmp_path / "deleted.py")
    result = tfpilot_cli(["lint", tmp_path], cwd=tmp_path)
    assert result.returncode == 0, result  # nothing wrong with the code that could be read
    assert result.stdout == ""
    assert "gone.py: skipped: broken symbolic link" in result.stderr and "deleted.py" in result.stderr
    assert "0 finding(s) in 1 file(s)" in result.stderr and "1 path(s) skipped" in result.stderr
    # Named explicitly (as a shell glob does) it is the same note, not a usage error.
    (tmp_path / "legacy.py").write_text(SESSION)
    result = tfpilot_cli(["lint", tmp_path / "gone.py", tmp_path / "legacy.py", "--fix"], cwd=tmp_path)
    assert result.returncode == 1 and " TFP601 " in result.stdout, result
    assert "gone.py: skipped: broken symbolic link" in result.stderr


def test_file_that_fails_to_read_is_a_skip_note_in_text_and_sarif(tfpilot_cli, tmp_path):
    # /proc/self/mem fails with EIO on read even for root: a real unreadable file on any Linux.
    if not Path("/proc/self/mem").exists():
        pytest.skip("needs Linux /proc")
    (tmp_path / "mem.py").symlink_to("/proc/self/mem")
    (tmp_path / "legacy.py").write_text(SESSION)
    sarif_path = tmp_path / "out.sarif"
    result = tfpilot_cli(["lint", tmp_path, "-f", "sarif", "-o", sarif_path], cwd=tmp_path)
    assert result.returncode == 1, result
    assert "mem.py: skipped: cannot read: Input/output error" in result.stderr, result
    run = json.loads(sarif_path.read_text())["runs"][0]
    assert [item["ruleId"] for item in run["results"]] == ["TFP601"]
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["message"]["text"].startswith("skipped: cannot read")
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("mem")


def test_permission_denied_file_and_directory_are_skip_notes(tfpilot_cli, tmp_path):
    locked_file = tmp_path / "secret.py"
    locked_file.write_text(SESSION)
    locked_dir = tmp_path / "private"
    locked_dir.mkdir()
    (locked_dir / "inner.py").write_text(SESSION)
    (tmp_path / "legacy.py").write_text(SESSION)
    locked_file.chmod(0)
    locked_dir.chmod(0)
    try:
        if os.access(locked_file, os.R_OK) or os.access(locked_dir, os.R_OK):
            pytest.skip("running as a user that reads mode-000 files anyway (root)")
        result = tfpilot_cli(["lint", tmp_path], cwd=tmp_path)
    finally:
        locked_file.chmod(0o644)
        locked_dir.chmod(0o755)
    assert result.returncode == 1 and result.stdout.count(" TFP601 ") == 1, result
    assert "secret.py: skipped: cannot read: Permission denied" in result.stderr, result
    assert "private: skipped: cannot list directory: Permission denied" in result.stderr, result


TAPE_SCRIPT = """\
import keras
import numpy as np
import tensorflow as tf


class Scale(tf.Module):
    def __init__(self):
        self.w = tf.Variable(2.0)

    def __call__(self, x):
        return self.w * x


keras.utils.set_random_seed(0)
scale = Scale()
net_model = keras.Sequential([keras.Input((64,)), keras.layers.Dropout(0.5)])
x = tf.ones((4, 64))
with tf.GradientTape() as tape:
    scaled = scale(x)
    dropped = net_model(x)
    loss = tf.reduce_sum(scaled) + tf.reduce_sum(dropped)
assert tape.gradient(loss, scale.w) is not None
print("dropout active" if not np.allclose(dropped, x) else "inference mode")
"""


def test_fix_adds_training_only_to_keras_models_and_the_code_runs_before_and_after(tfpilot_cli, tmp_path):
    import subprocess
    import sys

    script = tmp_path / "step.py"
    script.write_text(TAPE_SCRIPT)

    def run_script() -> str:
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    assert run_script() == "inference mode"  # the bug the rule is about: no dropout while training
    result = tfpilot_cli(["lint", script, "--select", "TFP201", "--fix"], cwd=tmp_path)
    assert result.returncode == 0 and "1 fixed" in result.stderr, result
    fixed = script.read_text()
    assert "net_model(x, training=True)" in fixed and "scale(x)\n" in fixed  # tf.Module untouched
    assert run_script() == "dropout active"


def test_removed_module_rules_match_the_installed_tensorflow():
    """TFP611-TFP613 claim these names fail on TF 2.21 / Keras 3: check it against the real thing."""
    import importlib

    import tensorflow as tf

    from tfpilot.lint.rules import rule_by_code

    assert not hasattr(tf, "estimator") and not hasattr(tf.compat.v1, "estimator")
    assert not hasattr(tf, "layers")
    with pytest.raises(AttributeError, match="not available with Keras 3"):
        tf.compat.v1.layers.dense  # noqa: B018 - the attribute access itself raises
    for module in ("tensorflow.examples", "tensorflow.examples.tutorials.mnist", "tensorflow_estimator"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(module)
    assert "tensorflow.estimator" in rule_by_code("TFP611").removed
    assert "tensorflow.compat.v1.layers" in rule_by_code("TFP612").removed
    assert "tensorflow.examples" in rule_by_code("TFP613").removed


def test_removed_api_rules_name_the_replacement(capsys, monkeypatch, tmp_path):
    script = tmp_path / "legacy.py"
    script.write_text(
        "import tensorflow as tf\n"
        "from tensorflow.examples.tutorials.mnist import input_data\n"
        "net = tf.compat.v1.layers.conv2d(images, 32, 3)\n"
        "est = tf.estimator.LinearClassifier(feature_columns=columns)\n"
        "keras_net = tf.keras.layers.Conv2D(32, 3)\n"
    )
    code, out, _ = run_main(["lint", script, "--select", "TFP6"], capsys, monkeypatch, tmp_path)
    assert code == 1
    lines = {int(line.split(":")[1]): line for line in out.splitlines()}
    assert set(lines) == {2, 3, 4}, out  # line 5, Keras 3's own layer, is fine; TFP607 stays quiet on line 3
    assert " TFP613 " in lines[2] and "keras.datasets" in lines[2]
    assert " TFP612 " in lines[3] and "keras.layers.Conv2D" in lines[3]
    assert " TFP611 " in lines[4] and "model.fit" in lines[4]


def test_min_severity_hides_notes_and_they_never_fail_the_run(capsys, monkeypatch, tmp_path):
    script = tmp_path / "pipeline.py"
    script.write_text(
        "import tensorflow as tf\n"
        "rows = tf.data.Dataset.from_generator(lambda: iter([1.0]), output_types=tf.float32)\n"  # TFP305, info
    )
    code, out, err = run_main(["lint", script], capsys, monkeypatch, tmp_path)
    assert code == 1 and " TFP305 " in out
    code, out, err = run_main(["lint", script, "--min-severity", "warning"], capsys, monkeypatch, tmp_path)
    assert (code, out) == (0, "") and "(1 below warning hidden)" in err
    code, out, err = run_main(["lint", script, "--min-severity", "loud"], capsys, monkeypatch, tmp_path)
    assert code == 2 and "--min-severity must be one of info, warning, error" in err
