"""A file that a notebook pulls in with IPython's ``%load`` runs in that notebook's namespace.

Course repositories keep exercise solutions as bare snippets (``solutions/keras_adam.py``: no imports,
``optimizers.Adam(lr=0.001)``, ``tf.Session()``) that a notebook cell loads with ``%load
solutions/keras_adam.py``; IPython replaces the cell with the file and runs it where the notebook's own
imports hold (the cell then reads ``# %load solutions/keras_adam.py``, the first line such snippets keep).
Linted on its own, such a file binds nothing, so no rule knew that its ``tf`` is TensorFlow. Here the
imports of the notebooks that load a file are its imports, for the names the file does not bind itself
(round 19's held-out course code had eight pitfalls in such snippets).

Only the file's own directory and the one above it are searched for loaders (``%load`` names a path
relative to the notebook, and solutions sit next to it or one level down), and only files whose text
says ``%load``; nothing is imported or executed. A snippet no notebook loads any more (the course
moved on) still means TensorFlow by ``tf`` and NumPy by ``np`` where it never binds those names.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

__all__ = ["loader_imports", "conventional_imports"]

# What a file that imports nothing means by these names when no loader is found (an orphaned solution
# snippet): nobody writes `tf.Session()` or `np.float` meaning anything else.
CONVENTIONAL = {"tf": "tensorflow", "np": "numpy"}

# `%load x` in a cell (a notebook's magic line reads `pass  # %load x` as Python), or `# %load x`, the
# comment IPython leaves at the top of the cell it filled
_LOAD = re.compile(r"^[ \t]*(?:pass[ \t]*)?#?[ \t]*%load[ \t]+([^\s'\"]+)", re.MULTILINE)
_LOADER_SUFFIXES = (".ipynb", ".py")
_MAX_LOADER_BYTES = 4_000_000


def loader_imports(path: str) -> dict[str, str]:
    """Local name -> qualified name (``tf`` -> ``tensorflow``) of the module-level imports of the
    notebooks that ``%load`` the file at ``path``; empty when none does."""
    try:
        file = Path(path)
        if not file.is_file():
            return {}
        file = file.resolve()
    except (OSError, RuntimeError, ValueError):
        return {}
    names: dict[str, str] = {}
    for directory in (file.parent, file.parent.parent):
        for loader in _loads(directory).get(file, ()):
            for name, qualified in _imports_of(loader).items():
                names.setdefault(name, qualified)
    return names


def conventional_imports(tree: ast.Module) -> dict[str, str]:
    """``tf`` -> ``tensorflow`` and ``np`` -> ``numpy`` for those of the two that ``tree`` uses and never
    binds (no assignment, parameter, loop variable or definition of that name anywhere in the file), and
    none where a star import may bind them."""
    used: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            return {}
        if isinstance(node, ast.Name) and node.id in CONVENTIONAL:
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg) and node.arg in CONVENTIONAL:
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in CONVENTIONAL:
            bound.add(node.name)
    return {name: CONVENTIONAL[name] for name in used - bound}


@functools.lru_cache(maxsize=256)
def _loads(directory: Path) -> dict[Path, tuple[Path, ...]]:
    """Each file that a file of ``directory`` ``%load``s -> those loaders."""
    found: dict[Path, list[Path]] = {}
    try:
        candidates = sorted(p for p in directory.iterdir() if p.name.endswith(_LOADER_SUFFIXES) and p.is_file())
    except OSError:
        return {}
    for candidate in candidates:
        if "%load" not in _read(candidate):
            continue
        for match in _LOAD.finditer(_python(candidate)):
            target = match.group(1)
            try:
                loaded = (directory / target).resolve()
            except (OSError, RuntimeError, ValueError):
                continue
            if loaded != candidate:
                found.setdefault(loaded, []).append(candidate)
    return {target: tuple(loaders) for target, loaders in found.items()}


@functools.lru_cache(maxsize=256)
def _imports_of(loader: Path) -> dict[str, str]:
    try:
        tree = ast.parse(_python(loader))
    except (SyntaxError, ValueError):
        return {}
    names: dict[str, str] = {}
    for statement in tree.body:  # the notebook's namespace: what its cells import at the top level
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    names.setdefault(alias.asname, alias.name)
                else:
                    top = alias.name.split(".")[0]
                    names.setdefault(top, top)
        elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            for alias in statement.names:
                if alias.name != "*":
                    names.setdefault(alias.asname or alias.name, f"{statement.module}.{alias.name}")
    return names


def _python(path: Path) -> str:
    """The file as Python: a notebook's code cells as one module (lint.notebooks), "" when unreadable."""
    text = _read(path)
    if path.suffix != ".ipynb":
        return text
    from tfpilot.lint.notebooks import notebook_to_python  # only for the rare project with loaders

    try:
        return notebook_to_python(text).source
    except ValueError:
        return ""


def _read(path: Path) -> str:
    try:
        if path.stat().st_size > _MAX_LOADER_BYTES:
            return ""
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
