"""Recall on the TF guides' deliberate pitfalls (tests/fixtures/lint/guide_pitfalls, scored by
benchmarks/lint_recall.py): a rule that stops catching one fails here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "lint_recall.py"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("lint_recall", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_guide_pitfalls_recall_is_at_least_90_percent():
    report = load_benchmark().measure()
    assert len(report.pitfalls) >= 20
    assert len({code for _, _, code in report.pitfalls}) >= 20
    assert report.recall >= 0.9, f"missed: {report.missed}"


def test_guide_pitfalls_have_no_unmarked_findings():
    # every finding on the fixture is a marked pitfall or a marked side finding (`# also:`)
    assert load_benchmark().measure().unmarked == []


def test_markers_are_parsed():
    module = load_benchmark()
    pitfalls, also = module.markers("x = 1  # pitfall: TFP301 sequential map; also: TFP304, TFP302\n")
    assert pitfalls == {1: "TFP301"} and also == {1: {"TFP304", "TFP302"}}
