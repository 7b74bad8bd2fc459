"""The lint package must not import TensorFlow (nor Keras, nor libcst for plain linting)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lint"

SCRIPT = f"""
import sys
import tfpilot.lint
from tfpilot.lint import lint_paths, format_sarif, RULES
report = lint_paths([{str(FIXTURES)!r}], jobs=1)
format_sarif(report.findings, rules=list(RULES))
assert report.findings
heavy = sorted(m for m in ("tensorflow", "keras", "libcst", "numpy") if m in sys.modules)
assert not heavy, heavy
print("ok", len(report.findings))
"""


def test_linting_imports_no_tensorflow():
    completed = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("ok ")
