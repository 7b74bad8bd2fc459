"""Capture a window of training steps with the TensorFlow Profiler.

Each step is wrapped in ``Trace('train', step_num=i, _r=1)`` so xprof can split time per step.
The marker must enclose the iterator's ``next()`` (in a tfpilot run the compiled call contains
``get_next``), otherwise input time happens outside every step and the run looks compute-bound.
Besides the ``.xplane.pb`` the window writes ``capture.json``: wall-clock step and gap times
measured in Python, which the step-gap rule needs and the profile alone cannot give.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tfpilot.atomic import atomic_write_json
from tfpilot.diagnose.window_spec import parse_step_window
from tfpilot.diagnose.xplane import CAPTURE_FILE, read_capture
from tfpilot.errors import ConfigError
from tfpilot.train.callbacks import TrainHook

__all__ = ["ProfileWindow", "ProfileHook", "parse_step_window", "CAPTURE_FILE", "read_capture"]


class ProfileWindow:
    """Profile steps ``start_step <= step < stop_step`` into ``logdir``.

    Usable from any script::

        window = ProfileWindow("profile", start_step=5, stop_step=10)
        for step in range(20):
            with window.step(step):
                batch = next(iterator)
                train_step(batch)
        window.close()
    """

    def __init__(
        self,
        logdir: str | Path,
        *,
        start_step: int,
        stop_step: int,
        name: str = "train",
        measure_from: int | None = None,
        context: dict[str, Any] | None = None,
    ) -> None:
        if start_step >= stop_step:
            raise ConfigError(f"profile window needs start_step < stop_step, got {start_step}:{stop_step}")
        # Steps start_step..measure_from-1 are profiled but left out of the step breakdown (their data may
        # have been computed before the profiler started); capture.json says so for the summary.
        self.measure_from = start_step if measure_from is None else min(max(measure_from, start_step), stop_step - 1)
        self.context = dict(context or {})
        self.logdir = Path(logdir)
        self.start_step = start_step
        self.stop_step = stop_step
        self.name = name
        self.active = False
        self.finished = False
        self._trace: Any = None
        self._step_started: float | None = None
        self._last_step_ended: float | None = None
        self._started_at = 0.0
        self.step_times_ms: list[float] = []
        self.gaps_ms: list[float] = []
        self.steps: list[int] = []

    # -------------------------------------------------------------- profiler session
    def start(self) -> None:
        import tensorflow as tf

        self.logdir.mkdir(parents=True, exist_ok=True)
        tf.profiler.experimental.start(str(self.logdir))
        self.active = True
        self._started_at = time.perf_counter()

    def stop(self) -> None:
        import tensorflow as tf

        if not self.active:
            return
        unfinished = None
        if self._trace is not None:
            # A marker still open here never reached its step's end (the script ended, or a later window took
            # over): it is no step, and counting it would spread the session's per-step figures over one too many.
            self._trace.__exit__(None, None, None)
            self._trace = None
            unfinished = self.steps.pop()
        wall = time.perf_counter() - self._started_at
        tf.profiler.experimental.stop()
        self.active = False
        self.finished = True
        atomic_write_json(
            self.logdir / CAPTURE_FILE,
            {
                "start_step": self.start_step,
                "stop_step": self.stop_step,
                "measure_from": self.measure_from,
                **self.context,
                "steps": self.steps,
                "steps_captured": len(self.steps),
                "wall_seconds": wall,
                "step_times_ms": self.step_times_ms,
                "gaps_ms": self.gaps_ms,
                **({"unfinished_step": unfinished} if unfinished is not None else {}),
            },
        )

    # -------------------------------------------------------------- step markers
    def begin_step(self, step: int) -> None:
        """Open step ``step``'s marker (starting the session on the first step of the window)."""
        import tensorflow as tf

        if self.finished or self._trace is not None:
            return
        if step >= self.stop_step:
            self.stop()
            return
        if step < self.start_step:
            return
        if not self.active:
            self.start()
        now = time.perf_counter()
        if self._last_step_ended is not None:
            self.gaps_ms.append((now - self._last_step_ended) * 1e3)
        self._trace = tf.profiler.experimental.Trace(self.name, step_num=step, _r=1)
        self._trace.__enter__()
        self._step_started = now
        self.steps.append(step)

    def end_step(self, *, last_step: int | None = None) -> None:
        """Close the open marker; stop the session once ``last_step`` reaches the window's end."""
        if self._trace is not None:
            self._trace.__exit__(None, None, None)
            self._trace = None
            now = time.perf_counter()
            self.step_times_ms.append((now - (self._step_started or now)) * 1e3)
            self._last_step_ended = now
        if self.active and last_step is not None and last_step >= self.stop_step - 1:
            self.stop()

    def step(self, step: int):
        window = self

        class _Step:
            def __enter__(self_inner):
                window.begin_step(step)
                return window

            def __exit__(self_inner, *exc):
                window.end_step(last_step=step)
                return False

        return _Step()

    def close(self) -> None:
        self.stop()


class ProfileHook(TrainHook):
    """Profile global steps ``start_step..stop_step-1`` of a tfpilot run into ``profile_dir``.

    After the window closes the profile is summarised (summary.json, trace.json.gz,
    op_stats.csv) and analysed; ``self.findings`` holds the result for the caller to write.
    """

    def __init__(self, profile_dir: str | Path, *, start_step: int, stop_step: int, analyze: bool = True) -> None:
        self.window = ProfileWindow(profile_dir, start_step=start_step, stop_step=stop_step)
        self.analyze = analyze
        self.summary: Any = None  # the ProfileSummary, once the window has been converted
        self.findings: list = []

    @classmethod
    def from_spec(cls, profile_dir: str | Path, spec: str, **kwargs: Any) -> ProfileHook:
        start, stop = parse_step_window(spec)
        return cls(profile_dir, start_step=start, stop_step=stop, **kwargs)

    def before_execution(self, *, step: int) -> None:
        self.window.begin_step(step)
        self._finish_if_done()

    def next_boundary(self, *, step: int) -> int | None:
        later = [b for b in (self.window.start_step, self.window.stop_step) if b > step]
        return min(later, default=None)

    def after_execution(self, *, step: int, steps_run: int) -> None:
        # `step` is the global step after the call, so the call covered step-steps_run..step-1.
        self.window.end_step(last_step=step - 1)
        self._finish_if_done()

    def on_train_end(self, *, logs: dict[str, Any]) -> None:
        self.window.stop()
        self._finish_if_done()

    def _finish_if_done(self) -> None:
        if not self.window.finished or self.summary is not None or not self.analyze:
            return
        from tfpilot.diagnose.analysis import analyze_profile
        from tfpilot.diagnose.xplane import summarize_profile

        self.summary = summarize_profile(self.window.logdir)
        self.findings = analyze_profile(self.summary)
