"""Push a blessed SavedModel into a serving base path as its next version, atomically.

The copy is written to a dot-prefixed temporary directory inside the base path (same file
system, and a name a model server ignores because it is not an integer), then renamed to the
version number with os.replace, so a polling server sees either nothing or a complete version.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from pathlib import Path

from tfpilot.errors import MonitorError
from tfpilot.monitor.gate import model_fingerprint, read_blessing
from tfpilot.rundir import RunDir
from tfpilot.savedmodel.versions import next_version

__all__ = ["PushResult", "push_blessed"]


@dataclasses.dataclass(frozen=True)
class PushResult:
    version: int
    path: Path
    source: Path
    fingerprint: str


def _refuse(message: str) -> MonitorError:
    # Exit code 1: the model failed a check (as validation does), not a usage error.
    return MonitorError(message, exit_code=1)


def push_blessed(run_path: str | Path, base_path: str | Path, *, attempts: int = 5) -> PushResult:
    """Copy the run's blessed SavedModel to ``base_path/<next version>``; refuse anything else."""
    run = RunDir.existing(run_path)
    blessing = read_blessing(run)
    if blessing is None:
        raise _refuse(
            f"run `{run.root}` has no blessing record; run `tfpilot validate --candidate {run.root} --baseline MODEL_DIR` first"
        )
    if not blessing.blessed:
        failed = ", ".join(f"{c.threshold} (got {c.observed:.4g})" for c in blessing.failed)
        raise _refuse(f"run `{run.root}` was not blessed: {failed}; improve the model and validate again")
    source = Path(blessing.candidate["model_path"])
    if not (source / "saved_model.pb").is_file():
        raise _refuse(f"the blessed SavedModel `{source}` no longer exists; export and validate again")
    fingerprint = model_fingerprint(source)
    if fingerprint != blessing.candidate["fingerprint"]:
        raise _refuse(
            f"the SavedModel `{source}` changed after it was blessed; run `tfpilot validate` again before pushing"
        )
    base = Path(base_path)
    base.mkdir(parents=True, exist_ok=True)
    for _ in range(attempts):
        version = next_version(base)
        staging = Path(tempfile.mkdtemp(prefix=f".push-{version}-", dir=base))
        try:
            shutil.copytree(source, staging, dirs_exist_ok=True)
            final = base / str(version)
            if final.exists():  # another pusher took this version number meanwhile: try the next one
                continue
            # mkdtemp creates mode 0700; a server running as another user must be able to read the version.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(staging, 0o777 & ~umask)
            os.replace(staging, final)
            return PushResult(version=version, path=final, source=source, fingerprint=fingerprint)
        except OSError as error:
            if (base / str(version)).exists():
                continue
            raise MonitorError(f"could not copy `{source}` into `{base}`: {error}") from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    raise MonitorError(
        f"could not claim a version number in `{base}` after {attempts} attempts; another process keeps pushing"
    )
