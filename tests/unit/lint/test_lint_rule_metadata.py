"""The registry's contract: >= 25 rules, one per file, each documented and exemplified."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tfpilot.findings import Severity
from tfpilot.lint import RULES, rule_by_code

CODE_RE = re.compile(r"^TFP[1-9]\d\d$")


def test_at_least_25_rules_with_unique_codes_and_names():
    assert len(RULES) >= 25
    assert len({rule.code for rule in RULES}) == len(RULES)
    assert len({rule.name for rule in RULES}) == len(RULES)
    assert [rule.code for rule in RULES] == sorted(rule.code for rule in RULES)


def test_every_rule_is_documented_with_examples_and_a_fix_hint():
    for rule in RULES:
        assert CODE_RE.match(rule.code), rule.code
        assert re.match(r"^[a-z0-9]+(-[a-z0-9]+)+$", rule.name), rule.name
        assert rule.message and "\n" not in rule.message and len(rule.message) <= 110, rule.code
        assert rule.fix_hint and "\n" not in rule.fix_hint, rule.code
        assert len(rule.summary()) > 20, f"{rule.code} needs a docstring saying why it matters"
        assert rule.VALID and rule.INVALID, f"{rule.code} needs VALID and INVALID examples"
        assert isinstance(rule.severity, Severity)
        assert rule.category
        if rule.fixable:
            assert any(example.fixed for example in rule.invalid_examples()), f"{rule.code} is fixable: show a fix"


def test_one_rule_per_file_named_after_its_code():
    for rule in RULES:
        module = sys.modules[rule.__module__]
        assert Path(module.__file__).name.startswith(rule.code.lower() + "_"), module.__file__


def test_categories_cover_the_issue_areas():
    categories = {rule.category for rule in RULES}
    assert {"tf.function", "training loop", "tf.data", "saving", "keras 3", "tf1 -> tf2"} <= categories


def test_rule_by_code_is_case_insensitive():
    assert rule_by_code("tfp601") is rule_by_code("TFP601") is not None
    assert rule_by_code("TFP999") is None
