"""Parse a profile window `START:STOP` (no TensorFlow import, so the CLI can reject bad input fast)."""

from __future__ import annotations

import re

from tfpilot.errors import ConfigError

__all__ = ["parse_step_window", "MIN_MEASURED_STEPS", "DEFAULT_PROFILE_STEPS"]

# A profile window's verdict rests on at least this many measured steps: one step stretched by the
# scheduler or a GC pause moves the mean of 4 steps by a quarter, of 10 by a tenth. Fewer is said.
MIN_MEASURED_STEPS = 10
# xprof leaves the session's last step marker out of its step breakdown (measured: 10 measured markers gave 9
# rows on sync_plain.py), so the window measures one step more than the breakdown needs.
DEFAULT_PROFILE_STEPS = MIN_MEASURED_STEPS + 1


def parse_step_window(text: str) -> tuple[int, int]:
    """`A:B` -> (A, B): profile steps A..B-1."""
    match = re.fullmatch(r"\s*(\d+)\s*:\s*(\d+)\s*", text or "")
    if not match or int(match[1]) >= int(match[2]):
        raise ConfigError(f"profile steps must look like `START:STOP` with START < STOP (e.g. `10:20`), got `{text}`")
    return int(match[1]), int(match[2])
