"""Finding: the shared result type, its JSON round-trip and severity ordering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfpilot.findings import Finding, Severity, max_severity, read_findings, write_findings


def finding(code: str, severity: Severity, **extra) -> Finding:
    return Finding(code=code, severity=severity, title=f"title {code}", message=f"message {code}", **extra)


def test_round_trip_through_json(tmp_path: Path) -> None:
    path = tmp_path / "run" / "findings.json"
    items = [
        finding(
            "TFP101",
            Severity.WARNING,
            location="train.py:3:5",
            evidence={"steps": 10, "ratio": 0.25},
            fix="use tf.function",
        ),
        finding("DOC-INPUT-BOUND", Severity.ERROR),
    ]
    write_findings(path, items)
    assert read_findings(path) == items
    raw = json.loads(path.read_text())
    assert raw[0]["severity"] == "warning" and raw[0]["evidence"] == {"steps": 10, "ratio": 0.25}
    assert set(raw[1]) == {"code", "severity", "title", "message", "location", "evidence", "fix"}


def test_append_keeps_existing(tmp_path: Path) -> None:
    path = tmp_path / "findings.json"
    write_findings(path, [finding("A", Severity.INFO)])
    write_findings(path, [finding("B", Severity.ERROR)], append=True)
    assert [f.code for f in read_findings(path)] == ["A", "B"]
    write_findings(path, [finding("C", Severity.INFO)])
    assert [f.code for f in read_findings(path)] == ["C"]


def test_read_missing_file_is_empty(tmp_path: Path) -> None:
    assert read_findings(tmp_path / "none.json") == []


def test_from_dict_ignores_unknown_keys_and_defaults_severity() -> None:
    parsed = Finding.from_dict({"code": "X", "title": "t", "message": "m", "future_field": 1})
    assert parsed == Finding(code="X", severity=Severity.INFO, title="t", message="m")


def test_severity_order() -> None:
    assert max_severity([]) is None
    assert (
        max_severity([finding("a", Severity.INFO), finding("b", Severity.ERROR), finding("c", Severity.WARNING)])
        is Severity.ERROR
    )
    assert [s.rank for s in (Severity.INFO, Severity.WARNING, Severity.ERROR)] == [0, 1, 2]
    assert Severity("warning") is Severity.WARNING


def test_findings_are_immutable() -> None:
    item = finding("A", Severity.INFO)
    with pytest.raises(AttributeError):
        item.code = "B"  # type: ignore[misc]


TUNED = Finding(
    code="TRAIN-STEPS-TUNED",
    severity=Severity.INFO,
    title="steps_per_execution and XLA chosen by timing",
    message="steps_per_execution 64, XLA on, batches stacked (measured per step: no xla 2.59 ms)",
    evidence={"choices": [1, 2], "index": "x[0]"},
    fix="set train.steps_per_execution to fix it",
)


@pytest.mark.parametrize("width", [80, 200])
def test_findings_render_codes_whole_and_text_literal_at_any_width(width: int) -> None:
    """An 80-column log (CI, a pipe) folded TRAIN-STEPS-TUNED into two lines of a squeezed table;
    narrow consoles get one block per finding, wide ones the table. Brackets in text stay text."""
    from rich.console import Console

    from tfpilot.cli.render import render_findings

    out = Console(width=width, record=True, color_system=None)
    render_findings([TUNED], out=out)
    text = out.export_text()
    assert "TRAIN-STEPS-TUNED" in text
    assert max(len(line) for line in text.splitlines()) <= width
    assert "x[0]" in text and "[1, 2]" in text
    if width < 120:
        assert "fix: set train.steps_per_execution to fix it" in text
        assert "\n    steps_per_execution 64, XLA on" in text
    else:
        assert "┃ severity" in text and "│ info" in text
