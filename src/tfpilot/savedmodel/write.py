"""Writing a SavedModel version: claim its number, write it aside, verify it, then let it appear.

A server polling the base path must never see a version that was not proven: the archive is
written to a hidden temporary sibling (tfpilot.atomic), the caller's verification runs there,
and only a version that passed is renamed to its number. Export of a configured run and of a
tfpilot.fit run both write through here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from tfpilot.atomic import atomic_directory
from tfpilot.errors import ExportError
from tfpilot.savedmodel.versions import next_version

if TYPE_CHECKING:
    import keras

__all__ = ["claim_version", "write_verified_version"]

Verified = TypeVar("Verified")


def claim_version(base_path: str | Path, version: int | None = None) -> tuple[int, Path]:
    """The version to write (``version``, or the next free number) and its directory, which must not exist."""
    base = Path(base_path)
    number = version or next_version(base)
    target = base / str(number)
    if target.exists():
        raise ExportError(
            f"version {number} already exists at `{target}`; choose another with --version or omit it", exit_code=2
        )
    return number, target


def write_verified_version(
    archive: keras.export.ExportArchive, target: Path, verify: Callable[[Path], Verified]
) -> Verified:
    """Write ``archive`` aside, run ``verify`` on the written directory, and rename it to ``target``."""
    with atomic_directory(target) as tmp:
        try:
            archive.write_out(str(tmp), verbose=False)
        except Exception as exc:  # keras raises plain errors for layers it cannot trace or serialise
            raise ExportError(f"SavedModel export failed: {exc}") from None
        return verify(tmp)
