"""What every doctor rule receives (the profile summary and/or the runtime watch report), and the shared cut-offs."""

from __future__ import annotations

import dataclasses

from tfpilot.diagnose.watchers import EAGER_DRIVER, KERAS_TRAINER_MODULE, FunctionRecord, WatchReport
from tfpilot.diagnose.xplane import ProfileSummary
from tfpilot.findings import Severity

__all__ = [
    "Observations",
    "MATERIAL_PERCENT",
    "severity_for_share",
    "step_on_one_core_ms",
    "short_location",
    "KERAS_TRAINER_MODULE",
]

# A cost is material from this share of step time (or of input wait) on: a warning from here, info below.
# The TF Profiler's own "moderately input-bound" line is the same 5%.
MATERIAL_PERCENT = 5.0


def severity_for_share(percent: float, *, error_percent: float | None = None) -> Severity:
    """Warning from MATERIAL_PERCENT of step time, error from ``error_percent`` when given, info below."""
    if error_percent is not None and percent >= error_percent:
        return Severity.ERROR
    return Severity.WARNING if percent >= MATERIAL_PERCENT else Severity.INFO


def step_on_one_core_ms(timing) -> float:
    """The median step on one core's terms: what single-threaded host Python between steps is compared with.

    The loop is sequential: Python between steps runs on the main thread, one core, and delays the next step by its
    CPU time. A step whose kernels run on several cores takes less wall time than process CPU time, so over the
    process's CPU the Python's share reads smaller by up to the number of cores the step used (and the process's
    CPU also holds tf.data's threads preparing the next batch beside the step); on a loaded host the wall time
    stretches with scheduler stops that CPU time does not count, so over the wall time it reads smaller.
    The watcher measures the step's critical path per step (``step_core_median_ms``): the main thread's CPU
    between two calls, plus the call's time, the smaller of its wall time and the process's CPU during it.
    Older reports: the smaller of the median step's wall and process CPU time, or its wall time.
    """
    if getattr(timing, "step_core_median_ms", 0.0):
        return float(timing.step_core_median_ms)
    wall = timing.step_median_ms or timing.step_ms
    cpu = timing.step_cpu_median_ms
    return min(wall, cpu) if cpu and wall else (wall or cpu)


def short_location(location: str) -> str:
    """`file.py:LINE` of a `/path/to/file.py:LINE` location, for messages (the full path stays in the evidence)."""
    path, _, line = location.rpartition(":")
    return f"{path.rsplit('/', 1)[-1]}:{line}" if path else location


@dataclasses.dataclass
class Observations:
    summary: ProfileSummary | None = None
    watch: WatchReport | None = None
    location: str = ""

    def driver(self) -> FunctionRecord | None:
        """The tf.function that drives the steps (the most-called one), None for an eager or unwatched run."""
        timing = self.watch.timing if self.watch is not None else None
        if self.watch is None or not self.watch.functions:
            return None
        if timing is not None and timing.driver == EAGER_DRIVER:
            return None
        named = [f for f in self.watch.functions if timing is not None and f.name == timing.driver]
        return max(named or self.watch.functions, key=lambda f: f.calls)

    def under_keras_fit(self) -> bool:
        """Whether the steps are Keras' model.fit's own compiled step (fit's knobs, not tf.function, are the fix)."""
        driver = self.driver()
        return driver is not None and driver.module.startswith(KERAS_TRAINER_MODULE)
