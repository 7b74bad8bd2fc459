"""What the linted file's project declares about its TensorFlow and Keras: read from its packaging.

A library that pins ``tensorflow<=2.15`` (where ``tf.keras`` is Keras 2 and ``tf.estimator``
exists) or depends on ``tf-keras`` / sets ``TF_USE_LEGACY_KERAS`` in its ``setup.py`` runs on
Keras 2 by design, and its modules say so nowhere themselves (TF-Agents, TF Privacy). A Keras 3
break in such a module is right in letter only: the finding becomes a note naming the pin.

The project is the nearest directory above the file (up to the first one holding ``.git``, or
the filesystem root) with a ``setup.py``, ``setup.cfg``, ``pyproject.toml`` or
``requirements*.txt``; every such file in that directory is read. Results are cached per
directory, so a tree of thousands of files reads each project's packaging once per process.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

__all__ = ["ProjectPins", "project_pins"]

_PACKAGING = ("setup.py", "setup.cfg", "pyproject.toml")
# `tensorflow<=2.15.0`, `tensorflow>=2.4,<2.16`, `tensorflow-cpu==2.13.*`: an upper bound that
# excludes TF 2.16 (the release that made Keras 3 tf.keras and removed tf.estimator).
_TF_PIN = re.compile(r"""["'\s]tensorflow(?:-cpu|-gpu)?\s*(?:\[[^\]]*\])?\s*[^"'\n#]*?(<=?|==|~=)\s*2\.(\d+)""")
_TF_KERAS = re.compile(r"""["'\s]tf[-_]keras\b|TF_USE_LEGACY_KERAS""")
_MAX_READ = 1_000_000


class ProjectPins:
    """``keras2``: why the project's tf.keras is Keras 2 (None: nothing says so). ``old_tf``: why
    it runs a TensorFlow older than 2.16 (tf.estimator and Keras 2 still there), or None.
    ``newest_tf``: the newest TensorFlow 2 minor version the pins allow (`==2.7.0`: 7, `<2.16`: 15),
    with the file that says so, or None: advice to use an API newer than that would break it."""

    def __init__(self, keras2: str | None, old_tf: str | None, newest_tf: tuple[int, str] | None = None) -> None:
        self.keras2 = keras2
        self.old_tf = old_tf
        self.newest_tf = newest_tf


_NONE = ProjectPins(None, None)


def project_pins(path: str) -> ProjectPins:
    """The pins of the project holding ``path`` (a file path; "<string>" and the like: none)."""
    try:
        file = Path(path)
        if not file.is_file():
            return _NONE  # source given as a string: no project around it
        directory = file.resolve().parent
    except (OSError, RuntimeError, ValueError):
        return _NONE
    return _pins_of(directory)


@functools.lru_cache(maxsize=1024)
def _pins_of(directory: Path) -> ProjectPins:
    files = _packaging_files(directory)
    if files is None:
        if (directory / ".git").exists() or directory.parent == directory:
            return _NONE
        return _pins_of(directory.parent)
    keras2 = old_tf = None
    newest: tuple[int, str] | None = None
    for file in files:
        try:
            text = file.read_text(encoding="utf-8", errors="replace")[:_MAX_READ]
        except OSError:
            continue
        for match in _TF_PIN.finditer(text):
            operator, minor = match.group(1), int(match.group(2))
            if minor < 16 or (operator == "<" and minor <= 16):
                old_tf = old_tf or f"{file.name} pins TensorFlow below 2.16"
            allowed = minor - 1 if operator == "<" else minor
            if newest is None or allowed < newest[0]:
                newest = (allowed, file.name)
        if keras2 is None and _TF_KERAS.search(text):
            keras2 = f"{file.name} asks for tf_keras (Keras 2)"
    return ProjectPins(keras2 or old_tf, old_tf, newest)


def _packaging_files(directory: Path) -> list[Path] | None:
    try:
        found = [directory / name for name in _PACKAGING if (directory / name).is_file()]
        found += sorted(directory.glob("requirements*.txt"))
    except OSError:
        return None
    return found or None
