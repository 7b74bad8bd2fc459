"""tfpilot's own source tree lints clean, and the docs list every rule."""

from __future__ import annotations

from pathlib import Path

import tfpilot
from tfpilot.findings import Severity
from tfpilot.lint import RULES, find_pyproject, lint_paths, load_lint_config

SOURCE = Path(tfpilot.__file__).resolve().parent
REPO = SOURCE.parents[1]


def test_tfpilot_source_tree_lints_clean():
    config = load_lint_config(find_pyproject(SOURCE))
    report = lint_paths([SOURCE], config=config, jobs=1)
    assert report.files > 10
    claims = [f for f in report.findings if f.severity is not Severity.INFO]
    assert claims == [], "\n".join(f"{f.location}: {f.code} {f.message}" for f in claims)
    # The only notes allowed: serve/export load TF1 SavedModels through tf.compat.v1 on purpose.
    notes = {(Path(f.location.split(":")[0]).relative_to(SOURCE).as_posix(), f.code) for f in report.findings}
    assert notes <= {("serve/servable.py", "TFP607"), ("export/verify.py", "TFP607")}, notes


def test_docs_describe_every_rule():
    docs = (REPO / "docs" / "lint.md").read_text()
    missing = [rule.code for rule in RULES if rule.code not in docs]
    assert not missing, f"docs/lint.md does not mention {missing}"


def test_public_api_snapshot():
    import tfpilot.lint as lint

    assert sorted(lint.__all__) == sorted(
        [
            "AppliedFix",
            "FORMATS",
            "FixResult",
            "Invalid",
            "LintConfig",
            "LintReport",
            "RULES",
            "Rule",
            "find_pyproject",
            "fix_files",
            "fix_source",
            "format_json",
            "format_sarif",
            "format_text",
            "lint_paths",
            "lint_source",
            "load_lint_config",
            "rule_by_code",
        ]
    )
