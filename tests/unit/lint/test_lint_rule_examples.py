"""Every rule's VALID and INVALID examples become tests (Fixit's convention).

VALID: the rule stays silent. INVALID: the rule fires (on the stated line). ``fixed``: --fix
turns the example into exactly that text, and the fixed text no longer triggers the rule.
"""

from __future__ import annotations

import textwrap

import pytest

from tfpilot.lint.engine import check_source
from tfpilot.lint.fixer import fix_source
from tfpilot.lint.rules import RULES

VALID_CASES = [
    pytest.param(rule, index, code, id=f"{rule.code}-valid-{index}")
    for rule in RULES
    for index, code in enumerate(rule.VALID)
]
INVALID_CASES = [
    pytest.param(rule, index, example, id=f"{rule.code}-invalid-{index}")
    for rule in RULES
    for index, example in enumerate(rule.invalid_examples())
]
FIX_CASES = [case for case in INVALID_CASES if case.values[2].fixed is not None]


@pytest.mark.parametrize(("rule", "index", "code"), VALID_CASES)
def test_valid_example_is_not_flagged(rule, index, code):
    result = check_source(code, f"valid_{index}.py", [rule])
    assert result.syntax_error is None, result.syntax_error
    assert result.violations == (), "\n".join(f"{v.line}:{v.column} {v.message}" for v in result.violations)


@pytest.mark.parametrize(("rule", "index", "example"), INVALID_CASES)
def test_invalid_example_is_flagged(rule, index, example):
    result = check_source(example.code, f"invalid_{index}.py", [rule])
    assert result.syntax_error is None, result.syntax_error
    assert result.violations, f"{rule.code} did not fire on:\n{textwrap.indent(example.code, '    ')}"
    assert {v.code for v in result.violations} == {rule.code}
    if example.line is not None:
        assert example.line in [v.line for v in result.violations]


@pytest.mark.parametrize(("rule", "index", "example"), FIX_CASES)
def test_fix_produces_expected_code(rule, index, example):
    fixed = fix_source(example.code, rules=[rule])
    assert fixed.fixed_source == example.fixed
    assert fixed.applied and {applied.code for applied in fixed.applied} == {rule.code}
    remaining = check_source(fixed.fixed_source, "fixed.py", [rule])
    assert not [v for v in remaining.violations if v.fix_data is not None]
