"""Recall of `tfpilot lint` on the TensorFlow guides' own deliberate pitfalls.

``tests/fixtures/lint/guide_pitfalls/`` holds code written for tfpilot (not copied from the
guides) that reproduces the mistakes the TF guides demonstrate on purpose: retracing with
Python constants, recursive tf.functions, ``next()`` on a Python iterator in a tf.function,
datasets returned by functions and classes, the ``@tf.py_function`` decorator form, Python side
effects, missing ``training=``, metrics never reset, Keras 3 saving breaks, and so on. Each
pitfall line ends in ``# pitfall: TFPnnn <what>``: the rule that must report it on that line.
Findings the pitfall brings with it on other lines are marked ``# also: TFPnnn`` there.

    python benchmarks/lint_recall.py            # prints recall per rule, misses, unmarked findings

Recall = pitfalls whose rule fires on their line / all pitfalls. Unmarked findings (a finding on
a line that marks neither a pitfall nor an ``also``) are printed too: the fixture is meant to
be exact, so they are either a false positive or a missing marker.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "lint" / "guide_pitfalls"
PITFALL = re.compile(r"#.*\bpitfall:\s*(TFP\d{3})")
ALSO = re.compile(r"#.*\balso:\s*((?:TFP\d{3}[,\s]*)+)")


@dataclass(frozen=True)
class RecallReport:
    pitfalls: list[tuple[str, int, str]]  # (file, line, code)
    missed: list[tuple[str, int, str]]
    unmarked: list[tuple[str, int, str]]  # findings on lines with no marker for their code

    @property
    def recall(self) -> float:
        return 1 - len(self.missed) / len(self.pitfalls) if self.pitfalls else 0.0


def markers(source: str) -> tuple[dict[int, str], dict[int, set[str]]]:
    pitfalls: dict[int, str] = {}
    also: dict[int, set[str]] = {}
    for number, line in enumerate(source.splitlines(), start=1):
        if match := PITFALL.search(line):
            pitfalls[number] = match.group(1)
        if match := ALSO.search(line):
            also[number] = set(re.findall(r"TFP\d{3}", match.group(1)))
    return pitfalls, also


def measure(root: Path = FIXTURES) -> RecallReport:
    from tfpilot.lint import lint_source

    pitfalls: list[tuple[str, int, str]] = []
    missed: list[tuple[str, int, str]] = []
    unmarked: list[tuple[str, int, str]] = []
    for path in sorted(root.glob("*.py")):
        source = path.read_text()
        expected, also = markers(source)
        found = {(int(f.location.split(":")[-2]), f.code) for f in lint_source(source, path=str(path))}
        for line, code in sorted(expected.items()):
            pitfalls.append((path.name, line, code))
            if (line, code) not in found:
                missed.append((path.name, line, code))
        for line, code in sorted(found):
            if expected.get(line) != code and code not in also.get(line, set()):
                unmarked.append((path.name, line, code))
    return RecallReport(pitfalls, missed, unmarked)


def main() -> int:
    report = measure()
    total = Counter(code for _, _, code in report.pitfalls)
    lost = Counter(code for _, _, code in report.missed)
    print(f"guide pitfalls: {len(report.pitfalls)} in {FIXTURES.name}/, rules: {len(total)}")
    print(f"recall {report.recall:.1%} ({len(report.pitfalls) - len(report.missed)}/{len(report.pitfalls)})")
    for code in sorted(total):
        print(f"  {code}: {total[code] - lost[code]}/{total[code]}")
    for name, line, code in report.missed:
        print(f"missed: {name}:{line} {code}")
    for name, line, code in report.unmarked:
        print(f"unmarked finding: {name}:{line} {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
