"""Severity is earned: a rule reports warnings or errors only if it was measured >= 90% precise on
code nobody tuned it on; below that, its findings are notes (info), which `--min-severity warning`
hides and which never fail a run at the default `--fail-on`.

The figures are the labelled findings at warning or above on the held-out corpora of issue 30
(`benchmarks/lint_labels_heldout*.csv`, rounds 1, 3-14 and 16-18, each labelled by reading the code),
scored with today's rules: `python benchmarks/lint_precision.py score /work/corpora/heldoutN
--labels benchmarks/lint_labels_heldoutN.csv --rule-severity` for each round (docs/lint.md, "Severity is earned").
A rule needs MIN_LABELLED labelled findings for its figure to count; rules with fewer keep the
severity their premise test gives them. "Right" is strict: a finding right in letter but harmless
in that code (debatable) does not count as right.

To move a rule back up, make it right on the findings that were not (fix the class), measure
again on a round it was not tuned on, and update its row here.
"""

from __future__ import annotations

from tfpilot.findings import Finding, Severity

__all__ = ["HELD_OUT", "MIN_LABELLED", "MIN_PRECISION", "earned_severity", "rule_severity"]

MIN_PRECISION = 0.90
MIN_LABELLED = 5

# rule -> (right, labelled) at the severity each rule claims, warning or above, on the held-out rounds
# 1 and 3-13, measured 2026-12-07 at 49e1352 with `lint_precision.py score --rule-severity` (plus the
# TF1-only-branch change after it: one TFP601 and one TFP504 label no longer fire), and round 14 added
# with the fifteenth session's rules (TFP403 19/19, TFP405 2/2, TFP406 16/16, TFP504 3/3, TFP614 2/2; the
# private-copy imports TFP509 reports since that round are not counted: it was tuned on them), and round 16
# added with the seventeenth session's rules (TFP403 1/1, TFP404 1/1, TFP406 7/7, TFP501 2/2, TFP504 4/5,
# TFP505 2/2; the findings that session's fixes made or moved - TFP514, predict(use_multiprocessing=), the
# TF1-install notes - are not counted: they were tuned there), and round 17 added as the base commit b9b23dc
# measured it (TFP403 1/1, TFP406 9/9, TFP501 9/11, TFP504 2/2, TFP505 14/14, TFP601 11/11, TFP602 84/84,
# TFP603 13/13, TFP604 24/24, TFP610 5/5, TFP611 1/1, TFP614 15/15; the two wrong TFP501 stay counted although
# the eighteenth session fixed their class), and round 18 added as the base commit 2c4b836 measured it (TFP406 3/3,
# TFP501 1/1, TFP504 14/14, TFP505 9/9, TFP514 15/15, TFP601 12/12, TFP602 51/51, TFP603 9/9, TFP604 4/4, TFP605 0/1,
# TFP610 3/3, TFP611 16/16, TFP612 52/52, TFP613 4/4, TFP614 61/61; and TFP507's six notes there, labelled after the
# round from the pitfalls written down before it, each a ValueError its writer ran: 6/6). TFP000 is the
# "not checked" note for a file that does not parse (its own measure, round 9).
HELD_OUT: dict[str, tuple[int, int]] = {
    "TFP000": (5, 33),  # 28 exercise templates whose blanks do not parse: right, and no pitfall
    "TFP101": (4, 5),
    "TFP106": (0, 2),
    "TFP107": (8, 8),
    "TFP201": (13, 15),
    "TFP204": (1, 5),
    "TFP206": (5, 5),
    "TFP208": (1, 1),
    "TFP209": (1, 1),
    "TFP210": (2, 2),
    "TFP301": (10, 21),
    "TFP305": (2, 4),
    "TFP307": (0, 2),
    "TFP401": (1, 1),
    "TFP402": (12, 13),
    "TFP403": (66, 66),
    "TFP404": (3, 3),  # 3 wrong ones (models holding hub.KerasLayer) are notes since round 9
    "TFP405": (54, 54),
    "TFP406": (133, 136),
    "TFP501": (89, 91),
    "TFP503": (3, 3),
    "TFP504": (192, 198),  # 4 wrong ones (Sequential subclasses) left alone since round 9
    "TFP505": (130, 130),
    "TFP506": (74, 94),
    "TFP507": (11, 12),
    "TFP508": (16, 16),
    "TFP509": (22, 25),
    "TFP510": (2, 2),
    "TFP511": (4, 4),
    "TFP514": (15, 15),
    "TFP601": (32, 33),  # a slide snippet (debatable); the TF1-only branch of round 12 no longer fires
    "TFP602": (151, 152),
    "TFP603": (24, 24),
    "TFP604": (33, 33),
    "TFP605": (0, 1),
    "TFP610": (20, 20),
    "TFP611": (38, 38),
    "TFP612": (59, 59),
    "TFP613": (5, 5),
    "TFP614": (150, 154),
}


def earned_severity(code: str, severity: Severity) -> tuple[Severity, str | None]:
    """The severity a finding of `code` may carry, and why it was lowered (None when it was not)."""
    if severity is Severity.INFO:
        return severity, None
    right, labelled = HELD_OUT.get(code, (0, 0))
    if labelled < MIN_LABELLED or right / labelled >= MIN_PRECISION:
        return severity, None
    return (
        Severity.INFO,
        f"a note: this rule was {right}/{labelled} right on held-out code, under the {MIN_PRECISION:.0%} a warning needs",
    )


def rule_severity(finding: Finding) -> Severity:
    """The severity the rule itself gave a finding, before the earned-severity note (the evidence
    keeps it as `rule_severity` where it was lowered)."""
    claimed = finding.evidence.get("rule_severity")
    return Severity(claimed) if isinstance(claimed, str) else finding.severity
