"""``import tfpilot.doctor``: the doctor's user-facing names (alias of tfpilot.diagnose)."""

from tfpilot.diagnose import analyze_run, doctor_script, watch

__all__ = ["watch", "doctor_script", "analyze_run"]
