"""Where the user's code created a Keras layer, found from its class (and name) in the user's files.

Why: under model.fit a NaN born inside a built-in layer (LayerNormalization with epsilon=0, a
Softmax over -inf) has no user frame in its traceback: the replayed step is Keras' own function
calling the layer's call(). The line a user can act on is the one that created the layer.
Keras records no creation site, so the doctor reads the user's source: the calls of the layer's
class there, narrowed by an explicit `name=` when the layer has one. One candidate is an answer;
several are reported as candidates, never guessed between.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

from tfpilot.diagnose.frames import is_library

__all__ = ["layer_sites"]

MAX_FILE_BYTES = 2_000_000  # a user's module, not a generated one


def _user_files() -> list[Path]:
    """The running program's own modules: `__main__` first, then every imported module whose file
    is the user's (not under an installed package's directory)."""
    files: list[Path] = []
    main = sys.modules.get("__main__")
    if not isinstance(getattr(main, "__file__", None), str):
        files.append(Path("<no script>"))  # keeps the script's place first (read as nothing)
    for module in [main, *list(sys.modules.values())]:
        name = getattr(module, "__file__", None)
        if not isinstance(name, str) or not name.endswith(".py") or is_library(name):
            continue
        path = Path(name)
        if path not in files and path.is_file() and path.stat().st_size <= MAX_FILE_BYTES:
            files.append(path)
    return files


def _given_name(node: ast.Call) -> str | None:
    for keyword in node.keywords:
        if keyword.arg == "name" and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
            return keyword.value.value
    return None


def layer_sites(layer: Any, files: list[Path] | None = None) -> list[str]:
    """`file:line` of each call in the user's files that may have created `layer`: calls of its
    class, and of those only the one passing its name when one passes it. The script itself is
    read first; the other user modules only when it has no such call."""
    if files is not None:
        return _sites_in(layer, files)
    user_files = _user_files()
    return _sites_in(layer, user_files[:1]) or _sites_in(layer, user_files[1:])


def _sites_in(layer: Any, files: list[Path]) -> list[str]:
    # Imported here: read only when a NaN is being located, not on every doctor start.
    from tfpilot.lint.patterns import callee_name

    class_name = type(layer).__name__
    layer_name = getattr(layer, "name", None)
    calls: list[tuple[str, str | None]] = []
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and callee_name(node) == class_name:
                calls.append((f"{path}:{node.lineno}", _given_name(node)))
    named = [site for site, given in calls if given is not None and given == layer_name]
    return named or [site for site, given in calls if given is None]
