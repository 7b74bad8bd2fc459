"""Static checks for TensorFlow pitfalls and TF1 -> TF2 / Keras 2 -> 3 migration.

This package never imports TensorFlow, so linting is fast and works where TensorFlow is not
installed. ``tfpilot migrate`` (tfpilot.migrate) builds on it.

    from tfpilot.lint import lint_paths, lint_source
    report = lint_paths(["src"])          # LintReport(findings, files, lines, seconds)
    findings = lint_source("import tensorflow as tf\\nsess = tf.Session()\\n")
"""

from __future__ import annotations

from tfpilot.lint.config import LintConfig, find_pyproject, load_lint_config
from tfpilot.lint.engine import LintReport, lint_paths, lint_source
from tfpilot.lint.fixer import AppliedFix, FixResult, fix_files, fix_source
from tfpilot.lint.reporters import FORMATS, format_json, format_sarif, format_text
from tfpilot.lint.rule import Invalid, Rule
from tfpilot.lint.rules import RULES, rule_by_code

__all__ = [
    "LintConfig",
    "LintReport",
    "Rule",
    "Invalid",
    "RULES",
    "rule_by_code",
    "lint_paths",
    "lint_source",
    "load_lint_config",
    "find_pyproject",
    "fix_source",
    "fix_files",
    "FixResult",
    "AppliedFix",
    "format_text",
    "format_json",
    "format_sarif",
    "FORMATS",
]
