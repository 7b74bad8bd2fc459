"""The report's HTML: sections for the files present, escaping, and no network references."""

from __future__ import annotations

import json
import re

from tfpilot.report import write_report


def _chart_specs(text: str) -> list[dict]:
    match = re.search(r'<script type="application/json" id="tfpilot-charts">(.*?)</script>', text, re.S)
    assert match
    return json.loads(match.group(1))


def test_full_run_has_every_section_and_chart(full_run):
    path = write_report(full_run)
    assert path == full_run / "report.html"
    text = path.read_text()
    for anchor in ("metrics", "training", "findings", "profile", "export", "validation", "drift", "config"):
        assert f'<section id="{anchor}">' in text, anchor
    specs = _chart_specs(text)
    titles = [s.get("title", "") for s in specs]
    assert any("Confusion matrix" in t for t in titles)
    assert any(t.startswith("loss: train vs validation") for t in titles)
    assert any("Overfitting gap" in t for t in titles) and any("Learning rate" in t for t in titles)
    assert any("Gradient norm" in t for t in titles)
    assert any("Jensen-Shannon" in t for t in titles)
    assert all(f'id="{s["id"]}"' in text for s in specs)
    assert "tflite-int8" in text and "accuracy &gt;= 0.95" in text


def test_report_is_self_contained_and_escapes_content(full_run):
    text = write_report(full_run).read_text()
    assert "<script>alert(1)</script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", text)
    assert "cdn" not in text.lower()
    assert "default-src 'none'" in text  # the page may not fetch anything


def test_report_works_with_only_a_config(tmp_path):
    run = tmp_path / "bare"
    run.mkdir()
    (run / "config.yaml").write_text("name: bare\n")
    text = write_report(run, output=tmp_path / "out.html").read_text()
    assert '<section id="config">' in text and _chart_specs(text) == []


def test_corrupt_optional_files_are_left_out(full_run):
    (full_run / "history.json").write_text("{not json")
    text = write_report(full_run).read_text()
    assert '<section id="training">' not in text and '<section id="metrics">' in text
