"""Severity is earned (lint/earned.py): a rule measured under 90% precise on held-out code reports
notes; one measured at or above 90% (or on too few findings to say) keeps its own severity."""

from __future__ import annotations

import textwrap

from tfpilot.findings import Severity
from tfpilot.lint.earned import HELD_OUT, MIN_LABELLED, MIN_PRECISION, earned_severity, rule_severity
from tfpilot.lint.engine import lint_source
from tfpilot.lint.rules import RULES

# tf.random.set_seed before Keras builds a model: TFP506's claim, right in letter, harmless in most
# scripts (measured 74/94 on held-out code), so a note that still says what the rule claims.
SEEDED = """
import tensorflow as tf

tf.random.set_seed(1)
model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
"""

# tf.keras.optimizers.Adam(lr=...): TFP505, measured 81/81, stays a warning.
LEGACY_LR = """
import tensorflow as tf

optimizer = tf.keras.optimizers.Adam(lr=0.01)
"""


def test_every_measured_code_is_a_rule_or_the_parse_note():
    codes = {rule.code for rule in RULES} | {"TFP000"}
    assert set(HELD_OUT) <= codes
    assert all(0 <= right <= labelled for right, labelled in HELD_OUT.values())


def test_a_rule_under_the_bar_reports_a_note_that_keeps_its_claim():
    right, labelled = HELD_OUT["TFP506"]
    assert labelled >= MIN_LABELLED and right / labelled < MIN_PRECISION
    (finding,) = [f for f in lint_source(textwrap.dedent(SEEDED)) if f.code == "TFP506"]
    assert finding.severity is Severity.INFO and rule_severity(finding) is Severity.WARNING
    assert f"{right}/{labelled} right on held-out code" in finding.message


def test_a_rule_over_the_bar_keeps_its_severity():
    right, labelled = HELD_OUT["TFP505"]
    assert right / labelled >= MIN_PRECISION
    (finding,) = [f for f in lint_source(textwrap.dedent(LEGACY_LR)) if f.code == "TFP505"]
    assert finding.severity is not Severity.INFO and "held-out" not in finding.message
    assert "rule_severity" not in finding.evidence


def test_too_few_labelled_findings_keep_the_rule_severity():
    assert earned_severity("TFP999", Severity.ERROR) == (Severity.ERROR, None)
    few = next(code for code, (right, labelled) in HELD_OUT.items() if labelled < MIN_LABELLED and right < labelled)
    assert earned_severity(few, Severity.ERROR) == (Severity.ERROR, None)
    assert earned_severity("TFP506", Severity.INFO) == (Severity.INFO, None)  # a note stays a note
