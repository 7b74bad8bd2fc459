"""Doctor rules: one per module, each with CODE and ``check(observations) -> list[Finding]``."""

from tfpilot.diagnose.rules import (
    eager_step,
    host_python_ops,
    host_sync,
    input_bound,
    nonfinite,
    retracing,
    step_gap,
    tiny_ops,
)
from tfpilot.diagnose.rules.base import Observations

RULES = (input_bound, host_python_ops, retracing, eager_step, tiny_ops, host_sync, step_gap, nonfinite)

__all__ = ["RULES", "Observations"]
