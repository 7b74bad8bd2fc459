"""Text, JSON and SARIF 2.1.0 output."""

from __future__ import annotations

import json

from tfpilot.findings import read_findings
from tfpilot.lint import RULES, format_json, format_sarif, format_text, lint_source

SOURCE = "import tensorflow as tf\nsess = tf.Session()\nmodel.save('m', save_format='tf')\n"


def findings():
    return lint_source(SOURCE, path="src/train.py")


def test_text_is_path_line_col_code_message():
    text = format_text(findings())
    assert text.splitlines() == [
        "src/train.py:2:8: TFP601 `tf.Session` is TF1 graph mode; TF2 runs eagerly and has no sessions",
        "src/train.py:3:1: TFP402 save(..., save_format='tf') raises ValueError in Keras 3; "
        "use model.export(path) for a SavedModel",
    ]
    with_fix = format_text(findings(), show_fix=True).splitlines()
    assert with_fix[1].startswith("    fix: ")
    assert format_text([]) == ""


def test_json_round_trips_through_read_findings(tmp_path):
    path = tmp_path / "findings.json"
    path.write_text(format_json(findings()))
    assert read_findings(path) == findings()
    assert json.loads(path.read_text())[0]["severity"] == "error"


def test_sarif_2_1_0_structure(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    log = json.loads(format_sarif(findings(), rules=list(RULES)))
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "tfpilot-lint" and driver["version"]
    assert [rule["id"] for rule in driver["rules"]] == [rule.code for rule in RULES]
    for descriptor in driver["rules"]:
        assert descriptor["shortDescription"]["text"] and descriptor["fullDescription"]["text"]
        assert descriptor["help"]["text"].startswith("Fix: ")
        assert descriptor["defaultConfiguration"]["level"] in ("note", "warning", "error")
    first, second = run["results"]
    assert driver["rules"][first["ruleIndex"]]["id"] == first["ruleId"] == "TFP601"
    assert first["level"] == "error" and "Fix:" in first["message"]["text"]
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 2, "startColumn": 8, "endLine": 2, "endColumn": 18}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].startswith("file://")
    assert second["ruleId"] == "TFP402"
