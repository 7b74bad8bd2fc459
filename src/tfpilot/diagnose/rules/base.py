"""What every doctor rule receives: the profile summary and/or the runtime watch report."""

from __future__ import annotations

import dataclasses

from tfpilot.diagnose.watchers import WatchReport
from tfpilot.diagnose.xplane import ProfileSummary

__all__ = ["Observations"]


@dataclasses.dataclass
class Observations:
    summary: ProfileSummary | None = None
    watch: WatchReport | None = None
    location: str = ""
