"""Realistic TF1 / TF2 fixtures: exactly the expected findings; idiomatic TF2 code: none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tfpilot.lint import lint_paths, lint_source

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lint"
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9,\s]+)$")


def expected_findings(source: str) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(source.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            found += [(number, code.strip()) for code in match.group(1).split(",")]
    return sorted(found)


# guide_pitfalls/ marks `# pitfall:` lines instead and is scored by test_lint_recall.py
@pytest.mark.parametrize(
    "path",
    sorted(p for p in FIXTURES.rglob("*.py") if p.parent.name != "guide_pitfalls"),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_fixture_has_exactly_its_expected_findings(path):
    source = path.read_text()
    actual = sorted((int(f.location.split(":")[-2]), f.code) for f in lint_source(source, path=str(path)))
    assert actual == expected_findings(source)
    if path.parent.name == "clean":
        assert actual == []
    else:
        assert actual


def test_fixture_suite_covers_most_rules():
    report = lint_paths([FIXTURES], jobs=1)
    assert len({f.code for f in report.findings}) >= 35
