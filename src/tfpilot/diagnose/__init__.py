"""Diagnose: profile capture, xprof summaries, runtime watchers and rules that turn them into findings."""

from tfpilot.diagnose.analysis import analyze, analyze_profile, analyze_run
from tfpilot.diagnose.capture import ProfileHook, ProfileWindow, parse_step_window
from tfpilot.diagnose.doctor import DoctorResult, WatchSession, doctor_script, watch
from tfpilot.diagnose.watchers import Watcher, WatchReport
from tfpilot.diagnose.xplane import ProfileSummary, load_summary, summarize_profile

__all__ = [
    "ProfileHook",
    "ProfileWindow",
    "ProfileSummary",
    "summarize_profile",
    "load_summary",
    "analyze",
    "analyze_profile",
    "analyze_run",
    "watch",
    "WatchSession",
    "Watcher",
    "WatchReport",
    "doctor_script",
    "DoctorResult",
    "parse_step_window",
]
