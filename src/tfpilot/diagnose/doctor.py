"""Diagnose users' own code: ``watch()`` in-process, ``doctor_script()`` in a subprocess.

``doctor_script`` runs the script with ``python -m tfpilot.diagnose.bootstrap``, which installs a
Watcher (retrace counters on every tf.function, host-sync and step-gap timing, eager-step
detection, a profile window around steps k..k+n, a numerics replay on NaN) before the script
runs, and writes watch.json and profile/ into the output directory for analysis here.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tfpilot.diagnose.analysis import WATCH_FILE, analyze
from tfpilot.diagnose.outcomes import (
    OUTPUT_FILE,
    crash_finding,
    no_step_finding,
    short_window_finding,
    window_finding,
)
from tfpilot.diagnose.watchers import Watcher, WatchReport
from tfpilot.diagnose.window_spec import DEFAULT_PROFILE_STEPS
from tfpilot.diagnose.xplane import ProfileSummary, summarize_profile
from tfpilot.errors import ConfigError, TfpilotError
from tfpilot.findings import Finding, Severity, write_findings

__all__ = ["watch", "WatchSession", "doctor_script", "DoctorResult"]


class WatchSession:
    """What ``watch()`` yields; after the block: ``report``, ``summary`` and ``findings``."""

    def __init__(self, watcher: Watcher, output_dir: Path | None) -> None:
        self.watcher = watcher
        self.output_dir = output_dir
        self.report: WatchReport | None = None
        self.summary: ProfileSummary | None = None
        self.findings: list[Finding] = []

    def finish(self) -> None:
        self.watcher.stop()
        self.report = self.watcher.report()
        if self.report.profile_dir:
            self.summary = summarize_profile(self.report.profile_dir)
        self.findings = analyze(summary=self.summary, watch=self.report, location=str(self.output_dir or ""))
        if self.watcher.profile_dir is not None:
            location = str(self.output_dir or "")
            window = window_finding(self.report, location=location) or short_window_finding(
                self.report, self.summary, location=location
            )
            if window is not None:
                self.findings.append(window)
        if self.output_dir is not None:
            from tfpilot.atomic import atomic_write_json

            atomic_write_json(self.output_dir / WATCH_FILE, self.report.to_dict())
            write_findings(self.output_dir / "findings.json", self.findings, append=True)


@contextlib.contextmanager
def watch(
    output_dir: str | Path | None = None,
    *,
    profile_start: int = 5,
    profile_steps: int = DEFAULT_PROFILE_STEPS,
    profile: bool = True,
    replay_numerics: bool = True,
) -> Iterator[WatchSession]:
    """Instrument the block; ``session.findings`` holds the diagnosis afterwards.

    With ``output_dir`` the watch report, the profile (steps ``profile_start`` ..
    ``profile_start + profile_steps - 1`` of the most-called tf.function) and findings.json are
    written there; without it nothing is profiled and nothing is written.
    """
    directory = Path(output_dir) if output_dir is not None else None
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
    watcher = Watcher(
        profile_dir=(directory / "profile") if directory is not None and profile else None,
        profile_start=profile_start,
        profile_steps=profile_steps,
        replay_numerics=replay_numerics,
    )
    session = WatchSession(watcher, directory)
    watcher.start()
    try:
        yield session
    finally:
        session.finish()


class DoctorResult:
    def __init__(
        self,
        *,
        output_dir: Path,
        findings: list[Finding],
        returncode: int,
        summary: ProfileSummary | None,
        report: WatchReport | None,
        stderr_tail: str,
        timings: dict[str, float] | None = None,
    ) -> None:
        self.output_dir = output_dir
        self.findings = findings
        self.returncode = returncode
        self.summary = summary
        self.report = report
        self.stderr_tail = stderr_tail
        # Seconds per phase: child (the instrumented script), summary (xprof), rules.
        self.timings = timings or {}


def watchers_off_finding(reason: str, *, location: str) -> Finding:
    """The doctor degraded rather than crashed: the script ran, nothing was measured."""
    return Finding(
        code="DOC-WATCHERS-OFF",
        severity=Severity.WARNING,
        title="The doctor could not observe this script",
        message=f"the script ran, but unobserved: {reason}",
        location=location,
        evidence={"reason": reason},
        fix="use the TensorFlow and Keras versions tfpilot pins (pyproject.toml); a crash is still reported",
    )


def doctor_script(
    path: str | Path,
    args: list[str] | None = None,
    *,
    output_dir: str | Path | None = None,
    profile_start: int = 5,
    profile_steps: int = DEFAULT_PROFILE_STEPS,
    timeout: float | None = None,
) -> DoctorResult:
    """Run a user's training script under instrumentation and return its findings."""
    script = Path(path)
    if not script.is_file() or script.suffix != ".py":
        raise ConfigError(f"`{path}` is not a Python script; expected an existing SCRIPT.py")
    directory = Path(output_dir) if output_dir else Path("runs") / f"doctor-{script.stem}"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / WATCH_FILE).unlink(missing_ok=True)
    (directory / "findings.json").unlink(missing_ok=True)
    command = [
        sys.executable,
        "-m",
        "tfpilot.diagnose.bootstrap",
        "--output",
        str(directory),
        "--profile-start",
        str(profile_start),
        "--profile-steps",
        str(profile_steps),
        "--",
        str(script),
        *(args or []),
    ]
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2")}
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=environment)
    child_done = time.perf_counter()
    # The script's own output is kept beside the findings: a crash must never be swallowed.
    output_path = directory / OUTPUT_FILE
    output_path.write_text(f"--- stdout ---\n{completed.stdout}\n--- stderr ---\n{completed.stderr}")
    watch_path = directory / WATCH_FILE
    if not watch_path.exists():
        tail = completed.stderr.strip().splitlines()[-1:] or ["no output"]
        raise TfpilotError(f"`{script}` did not run under the doctor (exit {completed.returncode}): {tail[0]}")
    report = WatchReport.from_dict(json.loads(watch_path.read_text()))
    # This process never imports TensorFlow (xplane reads the profile with protobuf and xprof alone): a
    # second import would cost seconds of CPU, most of the doctor's fixed overhead.
    summary = summarize_profile(report.profile_dir) if report.profile_dir else None
    summary_done = time.perf_counter()
    findings = analyze(summary=summary, watch=report, location=str(script))
    crash = crash_finding(
        returncode=completed.returncode, stderr=completed.stderr, script=script, output_path=output_path
    )
    if report.watchers_off:
        findings.insert(0, watchers_off_finding(report.watchers_off, location=str(script)))
    if crash is not None:
        findings.insert(0, crash)
    else:
        no_step = no_step_finding(report, location=str(script))
        if no_step is not None:
            findings.insert(0, no_step)
        window = window_finding(report, location=str(script)) or short_window_finding(
            report, summary, location=str(script)
        )
        if window is not None:
            findings.append(window)
    write_findings(directory / "findings.json", findings, append=True)
    return DoctorResult(
        output_dir=directory,
        findings=findings,
        returncode=completed.returncode,
        summary=summary,
        report=report,
        stderr_tail="\n".join(completed.stderr.strip().splitlines()[-15:]),
        timings={
            "child_s": round(child_done - started, 3),
            "summary_s": round(summary_done - child_done, 3),
            "rules_s": round(time.perf_counter() - summary_done, 3),
        },
    )
