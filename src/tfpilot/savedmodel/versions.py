"""Version directories under a TF Serving base path: which exist, which is next, which is ready.

TF Serving reads a base path's children whose names parse as an int64 and ignores everything
else, which is also what lets tfpilot's atomic writers stage a version in a dot-prefixed
sibling (`.3.partial`) that no server or reader ever picks up. Every reader and writer of
versions (the run directory, export, push, the validation gate, the server's registry) lists
them here so they all agree on what a version is.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

__all__ = [
    "MAX_VERSION",
    "scan_versions",
    "version_numbers",
    "next_version",
    "latest_version_dir",
    "is_complete_version",
]

# ASCII digits only: TF Serving parses version names with strings::safe_strto64, which takes no
# other digits, and a version must fit the int64 of ModelSpec.version.
_VERSION_DIR = re.compile(r"[0-9]+")
MAX_VERSION = 2**63 - 1


def scan_versions(base_path: str | Path) -> dict[int, Path]:
    """Version number -> directory, for each numeric subdirectory of ``base_path`` (none when it is missing)."""
    found: dict[int, Path] = {}
    try:
        entries = list(os.scandir(base_path))
    except OSError:
        return found
    for entry in entries:
        if _VERSION_DIR.fullmatch(entry.name) and entry.is_dir():
            number = int(entry.name)
            if number <= MAX_VERSION:
                found[number] = Path(entry.path)
    return found


def version_numbers(base_path: str | Path) -> list[int]:
    """The version numbers under ``base_path``, ascending."""
    return sorted(scan_versions(base_path))


def next_version(base_path: str | Path) -> int:
    """One past the highest version under ``base_path`` (1 for an empty or missing base path)."""
    return max(scan_versions(base_path), default=0) + 1


def latest_version_dir(base_path: str | Path, *, with_graph: bool = False) -> Path | None:
    """The highest version's directory; ``with_graph``: the highest that holds a saved_model.pb."""
    for _, path in sorted(scan_versions(base_path).items(), reverse=True):
        if not with_graph or (path / "saved_model.pb").is_file():
            return path
    return None


_VARIABLE_OPS = frozenset({"VarHandleOp", "VariableV2", "Variable"})


def _declares_variables(graph_file: Path) -> bool | None:
    """Whether the SavedModel's graph holds variables (None: the file does not parse yet).

    Asked on every poll for every version without variables/; the answer is kept per file
    state (size and mtime), so a frozen graph of hundreds of MB is parsed once, not every second."""
    try:
        stat = graph_file.stat()
    except OSError:
        return None
    return _declares_variables_cached(str(graph_file), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _declares_variables_cached(graph_file: str, size: int, mtime_ns: int) -> bool | None:
    from tensorflow.core.protobuf import saved_model_pb2

    path = Path(graph_file)

    proto = saved_model_pb2.SavedModel()
    try:
        if path.suffix == ".pbtxt":
            from google.protobuf import text_format

            text_format.Parse(path.read_text(), proto)
        else:
            proto.ParseFromString(path.read_bytes())
    except Exception:  # a version still being copied, or corrupt: not complete
        return None
    if not proto.meta_graphs:
        return None  # empty or truncated at a message boundary
    return any(node.op in _VARIABLE_OPS for graph in proto.meta_graphs for node in graph.graph_def.node)


def is_complete_version(path: Path) -> bool:
    """A version directory ready to load: its graph and, when the graph holds variables, variables/.

    Without variables/ a SavedModel is loaded when it declares no variables (a frozen graph, an
    ONNX conversion, a copy through git, which keeps no empty directory), as TF Serving loads it
    by skipping the restore. One that declares variables but has no variables/ yet is still
    being copied: it waits, so a half-copied version is never tried."""
    graph_file = next(
        (path / name for name in ("saved_model.pb", "saved_model.pbtxt") if (path / name).is_file()), None
    )
    if graph_file is None:
        return False
    if (path / "variables").is_dir():
        return True
    return _declares_variables(graph_file) is False
