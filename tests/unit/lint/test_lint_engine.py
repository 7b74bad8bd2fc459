"""Engine behaviour: suppressions, selection, syntax errors, positions, discovery, parallelism."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tfpilot.errors import LintError
from tfpilot.findings import Severity
from tfpilot.lint import LintConfig, lint_paths, lint_source
from tfpilot.lint import engine as engine_module

TF1 = textwrap.dedent(
    """\
    import tensorflow as tf
    sess = tf.Session()
    x = tf.placeholder(tf.float32)
    """
)


def codes(findings):
    return sorted((int(f.location.split(":")[-2]), f.code) for f in findings)


def test_finding_carries_location_severity_title_and_fix():
    (session, placeholder) = lint_source(TF1, path="train.py")
    assert session.location == "train.py:2:8"
    assert session.code == "TFP601" and session.title == "tf1-session"
    assert session.severity is Severity.ERROR
    assert session.fix and "tf.function" in session.fix
    assert session.evidence["end"] == "2:18" and session.evidence["fixable"] is False
    assert placeholder.code == "TFP602"


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        ("# tfpilot: noqa[TFP601]", [(3, "TFP602")]),
        ("# tfpilot: noqa[TFP6]", [(3, "TFP602")]),
        ("# tfpilot: noqa", [(3, "TFP602")]),
        ("# tfpilot: noqa[TFP602]", [(2, "TFP601"), (3, "TFP602")]),
        ("# noqa: TFP601", [(3, "TFP602")]),
    ],
)
def test_line_suppressions(comment, expected):
    source = TF1.replace("sess = tf.Session()", f"sess = tf.Session()  {comment}")
    assert codes(lint_source(source)) == expected


def test_suppression_on_last_line_of_a_multiline_statement():
    source = "import tensorflow as tf\nsess = tf.Session(\n    target='',\n)  # tfpilot: noqa[TFP601]\n"
    assert lint_source(source) == []


def test_file_level_suppression():
    assert codes(lint_source("# tfpilot: noqa-file[TFP601]\n" + TF1)) == [(4, "TFP602")]
    assert lint_source("# tfpilot: noqa-file\n" + TF1) == []


def test_select_and_ignore():
    assert codes(lint_source(TF1, config=LintConfig(select=("TFP602",)))) == [(3, "TFP602")]
    assert codes(lint_source(TF1, config=LintConfig(ignore=("TFP60",)))) == []
    assert codes(lint_source(TF1, config=LintConfig(select=("TFP6",), ignore=("TFP601",)))) == [(3, "TFP602")]


def test_syntax_error_is_a_finding_not_a_crash():
    (finding,) = lint_source("def broken(:\n    pass\n", path="bad.py")
    # a note: no rule checked the file (held out, most such files were exercise templates)
    assert finding.code == "TFP000" and finding.severity is Severity.INFO
    assert finding.location.startswith("bad.py:1:")


def test_columns_count_characters_not_utf8_bytes():
    source = "import tensorflow as tf\nlabel = 'é'; sess = tf.Session()\n"
    (finding,) = lint_source(source)
    assert finding.location == "<string>:2:21"


def test_lint_paths_discovers_python_files_and_skips_environments(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(TF1)
    (tmp_path / "pkg" / "notes.txt").write_text("tf.Session()")
    for hidden in (".venv", "build", "__pycache__", ".git"):
        (tmp_path / hidden).mkdir()
        (tmp_path / hidden / "x.py").write_text(TF1)
    report = lint_paths([tmp_path], jobs=1)
    assert report.files == 1 and report.lines == 3
    assert {f.location.split(":")[0] for f in report.findings} == {str(tmp_path / "pkg" / "train.py")}
    assert report.failing(Severity.ERROR) and not report.failing(Severity.ERROR)[0].evidence["fixable"]


def test_config_exclude_and_per_file_ignores(tmp_path):
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(TF1)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "case.py").write_text(TF1)
    config = LintConfig(exclude=("legacy",), per_file_ignores=(("tests/*", ("TFP601",)),), root=tmp_path)
    report = lint_paths([tmp_path], config=config, jobs=1)
    assert codes(report.findings) == [(3, "TFP602")]


def test_missing_path_is_a_usage_error(tmp_path):
    with pytest.raises(LintError, match="does not exist") as raised:
        lint_paths([tmp_path / "nope.py"])
    assert raised.value.exit_code == 2


def test_parallel_workers_give_the_same_findings_as_one_process(tmp_path, monkeypatch):
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "lint"
    for index, source in enumerate(sorted(fixtures.rglob("*.py")) * 3):
        (tmp_path / f"file_{index}.py").write_text(source.read_text())
    serial = lint_paths([tmp_path], jobs=1)
    monkeypatch.setattr(engine_module, "_PARALLEL_MIN_BYTES", 0)
    parallel = lint_paths([tmp_path], jobs=2)
    assert parallel.findings == serial.findings
    assert (parallel.files, parallel.lines) == (serial.files, serial.lines)
    assert len(serial.findings) > 50


def test_a_crashing_rule_becomes_a_finding_and_the_other_rules_still_run(monkeypatch):
    from tfpilot.lint.rules import rule_by_code

    def broken(self, node):
        raise RuntimeError("boom")

    monkeypatch.setattr(rule_by_code("TFP602"), "on_reference", broken)
    findings = lint_source(TF1)
    assert [(f.code, f.title) for f in findings] == [("TFP000", "internal-error"), ("TFP601", "tf1-session")]
    assert "TFP602 crashed" in findings[0].message


def test_deep_expression_is_linted_and_the_recursion_limit_is_restored():
    import sys

    limit = sys.getrecursionlimit()
    source = TF1 + "total = " + " + ".join(["x"] * 1500) + "\n"
    assert codes(lint_source(source)) == [(2, "TFP601"), (3, "TFP602")]
    assert sys.getrecursionlimit() == limit


def test_decode_source_follows_python():
    from tfpilot.lint.engine import UndecodableSource, decode_source

    assert decode_source("# café\n".encode()) == "# café\n"
    assert decode_source(b"# -*- coding: latin-1 -*-\n# caf\xe9\n").endswith("# café\n")
    assert decode_source(b"\xef\xbb\xbfx = 1\n") == "\ufeffx = 1\n"  # kept so --fix writes it back
    with pytest.raises(UndecodableSource, match="0xe9 is not valid utf-8") as raised:
        decode_source(b"x = 1\ny = 2  # caf\xe9\n")
    assert (raised.value.line, raised.value.column) == (2, 12)
    with pytest.raises(UndecodableSource, match="unknown encoding: klingon"):
        decode_source(b"# coding: klingon\nx = 1\n")
