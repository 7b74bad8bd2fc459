"""Which source files are library code and which are the user's, decided by where they are installed.

A frame is library code when its file lies under a directory Python installs packages or its standard
library into (site-packages / dist-packages as ``sysconfig`` and ``site`` report them), under the
directory of an imported TensorFlow, Keras or tfpilot package (an editable or source install lies
outside site-packages), or in a frozen module. Nothing is decided by a substring of the path: a user's
``keras_demo.py`` or a folder named ``keras-examples/`` or ``tensorflow-tutorials/`` is the user's code.
"""

from __future__ import annotations

import functools
import os
import site
import sys
import sysconfig
from collections.abc import Iterator
from types import FrameType

__all__ = ["is_library", "is_framework", "library_roots", "user_frames", "first_user_frame"]

# The packages whose own directories are library code wherever they are installed (editable, source tree).
_PACKAGES = ("tensorflow", "keras", "tf_keras", "tensorboard", "numpy", "tfpilot")
# The frameworks whose own reads of a tensor are bookkeeping, not the user's (tfpilot's instrumentation included).
_FRAMEWORKS = ("tensorflow", "keras", "tf_keras", "tfpilot")
_MAX_DEPTH = 80


def _directories() -> set[str]:
    found: set[str] = set()
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            found.add(paths[key])
    try:
        found.update(site.getsitepackages())
    except AttributeError:  # virtualenv's old site.py has no getsitepackages
        pass
    user_site = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if isinstance(user_site, str):
        found.add(user_site)
    found.update(path for path in sys.path if os.path.basename(path) in ("site-packages", "dist-packages"))
    return found


@functools.lru_cache(maxsize=1)
def _install_roots() -> tuple[str, ...]:
    return _normalised(_directories())


def _package_roots(names: tuple[str, ...] = _PACKAGES) -> tuple[str, ...]:
    # TensorFlow or Keras may be imported after the first call: the key is which of them are imported now.
    modules = tuple(sys.modules.get(name) for name in names)
    return _roots_of(names, tuple(id(module) for module in modules))


@functools.lru_cache(maxsize=64)
def _roots_of(names: tuple[str, ...], module_ids: tuple[int, ...]) -> tuple[str, ...]:
    del module_ids  # the cache key only: realpath per root costs syscalls, on every frame of every read
    roots = set()
    for name in names:
        module = sys.modules.get(name)
        for path in getattr(module, "__path__", None) or []:
            roots.add(path)
    return _normalised(roots)


def _normalised(paths: set[str]) -> tuple[str, ...]:
    return tuple(sorted({os.path.join(os.path.realpath(path), "") for path in paths if path}))


def library_roots() -> tuple[str, ...]:
    """The directories whose files count as library code (each ends with a separator)."""
    return _union(_install_roots(), _package_roots())


@functools.lru_cache(maxsize=64)
def _union(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted(set(first) | set(second)))


@functools.lru_cache(maxsize=4096)
def _is_library_cached(filename: str, roots: tuple[str, ...]) -> bool:
    if filename.startswith("<"):
        # <frozen importlib._bootstrap>, <string> from exec: only frozen modules are Python's own.
        return filename.startswith("<frozen")
    path = os.path.realpath(filename)
    return any(path.startswith(root) for root in roots)


def is_library(filename: str) -> bool:
    """Whether ``filename`` (a code object's ``co_filename``) is installed library code, not the user's."""
    return _is_library_cached(filename, library_roots())


def is_framework(filename: str) -> bool:
    """Whether ``filename`` belongs to TensorFlow, Keras or tfpilot itself (by their package directories)."""
    return _is_library_cached(filename, _package_roots(_FRAMEWORKS))


def user_frames(frame: FrameType | None) -> Iterator[tuple[FrameType, FrameType | None]]:
    """Walk outwards from ``frame``: (user frame, the library frame it called, or None) for each user frame."""
    called: FrameType | None = None
    depth = 0
    while frame is not None and depth < _MAX_DEPTH:
        if is_library(frame.f_code.co_filename):
            called = frame
        else:
            yield frame, called
            called = None
        frame, depth = frame.f_back, depth + 1


def first_user_frame(frame: FrameType | None) -> tuple[FrameType | None, FrameType | None]:
    """The innermost user frame at or above ``frame``, and the library frame it called (None if it read directly).

    However deep the library call that made the read (a Keras callback's ``variable.numpy()`` goes through
    Keras' Variable and TensorFlow's), the frame that counts is the first one in the user's code.
    """
    for user, called in user_frames(frame):
        return user, called
    return None, None
