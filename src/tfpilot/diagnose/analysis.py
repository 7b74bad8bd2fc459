"""Run every rule over what was observed; the entry points for profiles and run directories."""

from __future__ import annotations

import json
from pathlib import Path

from tfpilot.diagnose.rules import RULES, Observations
from tfpilot.diagnose.watchers import WatchReport
from tfpilot.diagnose.xplane import ProfileSummary, find_xplane_files, load_summary, summarize_profile
from tfpilot.errors import ConfigError
from tfpilot.findings import Finding

__all__ = ["analyze_profile", "analyze", "analyze_run", "WATCH_FILE"]

WATCH_FILE = "watch.json"


def analyze(
    *, summary: ProfileSummary | None = None, watch: WatchReport | None = None, location: str = ""
) -> list[Finding]:
    observations = Observations(summary=summary, watch=watch, location=location)
    findings: list[Finding] = []
    for rule in RULES:
        findings.extend(rule.check(observations))
    return findings


def analyze_profile(summary: ProfileSummary | str | Path, *, watch: WatchReport | None = None) -> list[Finding]:
    """Findings for a profile (a ProfileSummary, or a profile directory to summarise first)."""
    if not isinstance(summary, ProfileSummary):
        summary = summarize_profile(summary)
    return analyze(summary=summary, watch=watch, location=summary.profile_dir)


def analyze_run(run_dir: str | Path) -> list[Finding]:
    """Re-analyse a tfpilot run directory (or a doctor output directory) from its profile and watch data."""
    root = Path(run_dir)
    if not root.is_dir():
        raise ConfigError(f"`{run_dir}` is not a directory; expected a run directory such as runs/<name>")
    profile_dir = root / "profile"
    summary = None
    try:
        find_xplane_files(profile_dir)
        summary = summarize_profile(profile_dir)
    except Exception:  # no or unreadable session: fall back to a summary written earlier, if any
        summary = load_summary(profile_dir)
    watch_path = root / WATCH_FILE
    watch = WatchReport.from_dict(json.loads(watch_path.read_text())) if watch_path.exists() else None
    if summary is None and watch is None:
        raise ConfigError(
            f"`{root}` holds neither a profile (profile/plugins/profile/*/*.xplane.pb) nor {WATCH_FILE}; "
            "capture one with `tfpilot profile CONFIG --steps A:B` or `tfpilot doctor SCRIPT.py`"
        )
    return analyze(summary=summary, watch=watch, location=str(root))
