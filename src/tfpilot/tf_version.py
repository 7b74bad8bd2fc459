"""A TensorFlow version test decided on a version string alone: ``int(tf.__version__.split('.')[0]) < 2``.

Shared by migrate (native mode keeps the branch TF 2.21 runs) and lint (rules about TF1 APIs leave
alone a branch only TF 1 runs). Only tests built from ``tf.__version__``, literals, comparisons and
``int`` / ``float`` / ``str`` / ``len`` / ``split`` / ``startswith`` are decided; the expression is
checked node by node against that list before it is evaluated, with no builtins but those four and
the version string as the only value, so nothing of the program ever runs.
"""

from __future__ import annotations

import ast
import importlib.metadata

__all__ = ["decide_version_test", "installed_tensorflow"]

_CALLS = {"int": int, "float": float, "str": str, "len": len}
_METHODS = frozenset({"split", "startswith", "strip", "lstrip", "rstrip"})
_NODES = (
    ast.Expression,
    ast.Compare,
    ast.BoolOp,
    ast.UnaryOp,
    ast.Not,
    ast.And,
    ast.Or,
    ast.Call,
    ast.Attribute,
    ast.Subscript,
    ast.Slice,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.Tuple,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.Eq,
    ast.NotEq,
    ast.USub,
)


def installed_tensorflow() -> str:
    """The TensorFlow version the migrated code runs on (read from the package metadata)."""
    try:
        return importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        return "2.21.0"


def decide_version_test(test: str, tf_names: set[str], version: str) -> bool | None:
    """The test's value on `version`, or None when it is no pure version check."""
    try:
        tree = ast.parse(test.strip(), mode="eval")
    except SyntaxError:
        return None
    reads_version = False
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            return None
        if isinstance(node, ast.Name) and node.id not in tf_names and node.id not in _CALLS:
            return None
        if isinstance(node, ast.Attribute):
            if node.attr == "__version__" and isinstance(node.value, ast.Name) and node.value.id in tf_names:
                reads_version = True
            elif node.attr not in _METHODS:
                return None
    if not reads_version:
        return None

    class Version:
        __version__ = version

    scope = {name: Version for name in tf_names}
    try:
        return bool(eval(compile(tree, "<version check>", "eval"), {"__builtins__": _CALLS}, scope))  # noqa: S307
    except Exception:  # noqa: BLE001 - a test that fails on this version is no check to decide
        return None
