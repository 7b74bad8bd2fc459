"""What every doctor rule receives (the profile summary and/or the runtime watch report), and the shared cut-offs."""

from __future__ import annotations

import dataclasses

from tfpilot.diagnose.watchers import EAGER_DRIVER, KERAS_TRAINER_MODULE, FunctionRecord, WatchReport
from tfpilot.diagnose.xplane import ProfileSummary
from tfpilot.findings import Severity

__all__ = ["Observations", "MATERIAL_PERCENT", "severity_for_share", "KERAS_TRAINER_MODULE"]

# A cost is material from this share of step time (or of input wait) on: a warning from here, info below.
# The TF Profiler's own "moderately input-bound" line is the same 5%.
MATERIAL_PERCENT = 5.0


def severity_for_share(percent: float, *, error_percent: float | None = None) -> Severity:
    """Warning from MATERIAL_PERCENT of step time, error from ``error_percent`` when given, info below."""
    if error_percent is not None and percent >= error_percent:
        return Severity.ERROR
    return Severity.WARNING if percent >= MATERIAL_PERCENT else Severity.INFO


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
