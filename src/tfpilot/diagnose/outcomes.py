"""How a doctored script ended: a crash with its last user frame, or no training step seen at all.

These are findings about the run itself rather than about its performance, so they come from the
script's exit status, its stderr and the watch report, not from the profile rules.
"""

from __future__ import annotations

import re
from pathlib import Path

from tfpilot.diagnose.frames import is_library
from tfpilot.diagnose.watchers import WatchReport
from tfpilot.diagnose.window_spec import MIN_MEASURED_STEPS
from tfpilot.diagnose.xplane import ProfileSummary
from tfpilot.findings import Finding, Severity

__all__ = [
    "crash_finding",
    "no_step_finding",
    "window_finding",
    "short_window_finding",
    "last_user_frame",
    "OUTPUT_FILE",
]

OUTPUT_FILE = "script_output.txt"

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')


def last_user_frame(stderr: str, script: Path) -> str | None:
    """`path:line` of the deepest traceback frame in the user's code (outside libraries and tfpilot)."""
    script_dir = str(script.resolve().parent)
    found: str | None = None
    for line in stderr.splitlines():
        match = _FRAME.match(line)
        if match is None:
            continue
        filename = match.group("file")
        resolved = str(Path(filename).resolve()) if not filename.startswith("<") else filename
        # A file beside the script is the user's even if it sits under a path that looks like a library.
        if resolved.startswith(script_dir) or not is_library(filename):
            found = f"{filename}:{match.group('line')}"
    return found


def _exception_line(stderr: str) -> str:
    """The exception's own line: the last non-empty line that is not part of a traceback frame."""
    for line in reversed(stderr.strip().splitlines()):
        text = line.strip()
        if text and not text.startswith(("File ", "^", "~")):
            return text
    return "no output on stderr"


def crash_finding(*, returncode: int, stderr: str, script: Path, output_path: Path) -> Finding | None:
    if returncode == 0:
        return None
    frame = last_user_frame(stderr, script)
    exception = _exception_line(stderr)
    where = f" at {frame}" if frame else ""
    return Finding(
        code="DOC-SCRIPT-CRASH",
        severity=Severity.ERROR,
        title="The script failed",
        message=f"`{script.name}` exited with status {returncode}{where}: {exception}",
        location=frame or str(script),
        evidence={"returncode": returncode, "exception": exception, "output": str(output_path)},
        fix=f"Fix the error{where}; the script's full output is in {output_path}.",
    )


def no_step_finding(report: WatchReport, *, location: str) -> Finding | None:
    """A run without a repeated step function or eager gradient step has nothing the doctor can judge."""
    if report.timing is not None or report.eager_gradient_calls or report.nonfinite:
        return None
    called = max((f.calls for f in report.functions), default=0)
    return Finding(
        code="DOC-NO-STEP",
        severity=Severity.WARNING,
        title="No training step observed",
        message=(
            "the doctor saw no repeated training step (no tf.function called repeatedly, no eager "
            f"GradientTape step; most calls of one tf.function: {called}), so nothing was measured"
        ),
        location=location,
        evidence={"compiled_calls": report.compiled_calls, "most_calls_of_one_function": called},
        fix=(
            "Run the script so it trains for at least ~10 steps (a step is one call of a tf.function, "
            "model.fit's train_function, or an eager tape.gradient)."
        ),
    )


def window_finding(report: WatchReport, *, location: str) -> Finding | None:
    """A cached pipeline whose script ended inside its first epoch: the steady-state window never opened.

    Said, rather than left out: input timing from the epoch that fills a cache is not judged (that epoch
    always waits), so without this the report would look like a pipeline that keeps up.
    """
    if report.cache_filled is None or report.profile_window == "steady" or report.timing is None:
        return None
    steps = report.timing.steps + report.timing.measured_from_step + 1
    profiled = "the profile covers steps of the filling epoch (op and Python-op costs hold, input waits are not judged)"
    return Finding(
        code="DOC-PROFILE-WINDOW",
        severity=Severity.INFO,
        title="The profile window could not start after the cache filled",
        message=(
            f"the pipeline has a cache() stage and the script ended inside its first epoch (~{steps} steps), "
            "the one that fills the cache, so the window could not start after the cache filled; "
            + (profiled if report.profile_window == "cache-fill" else "no profile was taken")
        ),
        location=location,
        evidence={
            "cache_filled_step": report.cache_filled_step,
            "profile_window": report.profile_window,
            "steps_seen": steps,
        },
        fix="Run the script for more than one epoch (a second pass reads from the cache) to see its steady state.",
    )


def short_window_finding(report: WatchReport, summary: ProfileSummary | None, *, location: str) -> Finding | None:
    """The profile measured fewer than MIN_MEASURED_STEPS steps (or none): say why, so a verdict on 3 steps is
    read as such (one step stretched by the scheduler moves the mean of 3 by a third)."""
    if report.timing is None or report.cache_filled is False:
        return None  # no training step (DOC-NO-STEP), or the cache-fill case window_finding explains
    steps_seen = report.timing.steps + report.timing.measured_from_step + 1
    if summary is None:
        if report.profile_window is not None:
            return None
        why = (
            f"no profile window was taken: the script ran ~{steps_seen} steps, fewer than the window's start "
            f"(--profile-start, after warm-up and the steps a prefetch buffer serves) plus {MIN_MEASURED_STEPS} "
            "measured steps"
        )
        measured = 0
    else:
        capture = summary.capture
        steps = [int(step) for step in capture.get("steps") or []]
        start = int(capture.get("measure_from", capture.get("start_step", 0)) or 0)
        measured = len([step for step in steps if step >= start])
        rows = summary.steps.per_step
        if rows and not any(row.get("source") == "capture" for row in rows):
            measured = min(measured, len(rows))  # xprof's breakdown, which leaves out the session's last marker
        if measured >= MIN_MEASURED_STEPS:
            return None
        guessed_from = int(capture.get("measure_from_guess", start) or start)
        # The window profiles drain_slack steps past those asked for, in case the buffers held more than guessed.
        requested = int(capture.get("stop_step", 0) or 0) - guessed_from - int(capture.get("drain_slack", 0) or 0)
        if requested < MIN_MEASURED_STEPS + 1:
            why = f"the window was asked for {requested} measured steps (--profile-steps)"
        elif steps and steps[-1] < int(capture.get("stop_step", 0) or 0) - 1:
            why = f"the script ended inside the window (~{steps_seen} steps in all)"
        else:
            why = (
                "the pipeline's buffers held more steps than guessed when the window opened "
                f"(drain read {capture.get('drain_steps_read')}, guessed {capture.get('drain_steps')}); those "
                "steps were profiled but not measured"
            )
        why = f"the profile window measured {measured} steps, fewer than {MIN_MEASURED_STEPS}: {why}"
    return Finding(
        code="DOC-PROFILE-WINDOW",
        severity=Severity.INFO,
        title="Short profile window",
        message=why + "; the profile's timing verdicts rest on those steps alone, the watcher's on every step",
        location=location,
        evidence={"measured_steps": measured, "min_measured_steps": MIN_MEASURED_STEPS, "steps_seen": steps_seen},
        fix=f"run the script for more steps, or pass --profile-start/--profile-steps so that {MIN_MEASURED_STEPS} "
        "steps after warm-up fall inside the window",
    )
