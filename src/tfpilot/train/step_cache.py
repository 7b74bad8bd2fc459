"""A tuned step choice, reused by later runs of the same training step on the same machine.

Timing candidates costs seconds to tens of seconds, and on a machine shared with other work the
timings move (the bundled CNN measured 0.90x fit's best when quiet and picked other settings with
other work running). What was chosen once is therefore kept, keyed by everything that makes the
step what it is (the model's config, the batches' shapes and dtypes, the optimizer, clipping, L2,
precision and loss settings, what the config fixed itself) and by the machine and library versions
that decide its speed (CPU model and count, TensorFlow and Keras versions, the devices TensorFlow
sees). A later run with the same key takes the stored choice without timing, so repeated runs of
a model train with the same settings whatever the load was at the time.

Where: $TFPILOT_STEP_CACHE (a directory; `off` disables it), default ~/.cache/tfpilot/. One JSON
file, written to a temporary file and renamed; an unreadable file is ignored and rewritten.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import time
from pathlib import Path
from typing import Any

from tfpilot.atomic import atomic_write_json

__all__ = ["CACHE_ENV", "cache_file", "step_key", "load_choice", "store_choice"]

CACHE_ENV = "TFPILOT_STEP_CACHE"
FILE_NAME = "step_choices.json"
SCHEMA = 1
MAX_ENTRIES = 200  # oldest dropped beyond this: the file stays small


def cache_file() -> Path | None:
    """The cache file, or None when $TFPILOT_STEP_CACHE is `off`."""
    setting = os.environ.get(CACHE_ENV, "")
    if setting.strip().lower() in ("off", "0", "false", "no"):
        return None
    root = Path(setting) if setting else Path.home() / ".cache" / "tfpilot"
    return root / FILE_NAME


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_identity() -> dict[str, Any]:
    import keras
    import tensorflow as tf

    return {
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "devices": sorted(device.device_type for device in tf.config.list_logical_devices()),
        "onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS", ""),
    }


def step_key(*, model_config: Any, element_spec: str, settings: dict[str, Any]) -> str:
    """A digest of the step (model, batches, settings) and of this machine."""
    payload = {
        "schema": SCHEMA,
        "model": model_config,
        "batches": element_spec,
        "settings": settings,
        "machine": machine_identity(),
    }
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("schema") == SCHEMA else {}


def load_choice(key: str) -> dict[str, Any] | None:
    """The stored choice for this key: {jit_compile, stack_batches, steps_per_execution, timings, measured_at}."""
    path = cache_file()
    if path is None:
        return None
    entry = _read(path).get("entries", {}).get(key)
    needed = ("jit_compile", "stack_batches", "steps_per_execution", "timings", "measured_at")
    if not isinstance(entry, dict) or any(name not in entry for name in needed):
        return None
    return entry


def store_choice(key: str, *, jit_compile: bool, stack_batches: bool, steps_per_execution: int, timings: dict) -> None:
    """Keep a measured choice (best effort: a read-only home directory only loses the reuse)."""
    path = cache_file()
    if path is None:
        return
    entries = dict(_read(path).get("entries", {}))
    entries[key] = {
        "jit_compile": bool(jit_compile),
        "stack_batches": bool(stack_batches),
        "steps_per_execution": int(steps_per_execution),
        # JSON has no inf: a candidate XLA could not compile is left out.
        "timings": {name: float(value) for name, value in timings.items() if math.isfinite(value)},
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    if len(entries) > MAX_ENTRIES:
        entries = dict(sorted(entries.items(), key=lambda item: item[1]["measured_at"])[-MAX_ENTRIES:])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, {"schema": SCHEMA, "entries": entries})
    except OSError:
        pass
