"""Which files ``tfpilot lint PATH...`` reads: Python files under the paths, minus exclusions."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from tfpilot.errors import LintError
from tfpilot.lint.config import LintConfig

__all__ = ["discover_files", "DEFAULT_EXCLUDED_DIRS"]

# Directories nobody wants linted: environments, caches, build output, VCS metadata.
DEFAULT_EXCLUDED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "__pycache__",
        "build",
        "dist",
        "node_modules",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "site-packages",
        ".eggs",
    }
)


def _skip_directory(name: str) -> bool:
    return name in DEFAULT_EXCLUDED_DIRS or name.startswith(".") or name.endswith(".egg-info")


def discover_files(
    paths: Iterable[str | Path],
    config: LintConfig,
    *,
    unreadable: list[tuple[Path, str]] | None = None,
) -> list[Path]:
    """Files to lint, sorted and de-duplicated. A path that does not exist is a usage error.

    Files named explicitly are always linted; directories are walked for ``*.py`` files and Jupyter notebooks (``*.ipynb``),
    skipping hidden and environment directories and the config's ``exclude`` globs. Broken
    symlinks are returned like files (reading them says why they are skipped); directories that
    cannot be listed are appended to ``unreadable`` with the reason, and the walk goes on.
    """
    found: dict[Path, None] = {}
    paths = list(paths)
    if not paths:
        raise LintError("no path given; expected one or more files or directories, e.g. `tfpilot lint src`")

    def unlistable(error: OSError) -> None:
        if unreadable is not None:
            unreadable.append((Path(error.filename), f"cannot list directory: {error.strerror or error}"))

    for raw in paths:
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            raise LintError(f"path `{raw}` does not exist; pass existing files or directories to lint")
        if path.is_file() or not path.exists():  # a broken symlink named explicitly (a shell glob)
            found.setdefault(path, None)
            continue
        for directory, subdirectories, filenames in os.walk(path, onerror=unlistable):
            base = Path(directory)
            subdirectories[:] = sorted(
                name for name in subdirectories if not _skip_directory(name) and not config.is_excluded(base / name)
            )
            for filename in sorted(filenames):
                if filename.endswith((".py", ".ipynb")):  # notebooks: lint.notebooks
                    candidate = base / filename
                    if not config.is_excluded(candidate):
                        found.setdefault(candidate, None)
    return list(found)
