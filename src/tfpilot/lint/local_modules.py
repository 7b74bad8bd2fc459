"""Classes a file imports from its own project: ``from network import VGG16`` next to ``network.py``.

Tutorial and research code keeps its models in a module beside the training script. Rules that
ask "is this a Keras model, and does any of its layers depend on ``training``?" then need the
class from the other file. The linter never imports user code: the module is found on disk
(beside the importing file, or above it for a package import, up to the repository root),
parsed with ``ast`` and wrapped in a FileContext of its own, once per process per file.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tfpilot.lint.context import FileContext

__all__ = [
    "imported_class",
    "imported_function",
    "imported_project_function",
    "sibling_metric_defines",
    "sibling_mentions",
    "star_exports",
]

_MAX_LEVELS = 4  # how far above the importing file an absolute module is looked for
_MAX_BYTES = 2_000_000
_MAX_SIBLINGS = 400  # modules of one folder read for sibling_metric_defines


def imported_class(context: FileContext, name: str) -> tuple[ast.ClassDef, FileContext] | None:
    """The class ``name`` that ``context``'s file imports from a module of its own project, with
    that module's context; None when it is not imported so, or the module is not on disk."""
    for _ in range(3):
        found = _imported_module(context, name)
        if found is None:
            return None
        other, attribute = found
        definitions = other.class_defs(attribute)
        if definitions:
            return definitions[-1], other
        if attribute not in other.local_imports or other.path == context.path:
            return None
        # `from retinanet.model import ModelBuilder`: the package's __init__ re-exports it
        context, name = other, attribute
    return None


def imported_function(
    context: FileContext, name: str
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, FileContext] | None:
    """The module-level function ``name`` (``from yolo.models import YoloV3``, a model factory)
    imported from a module of the project, with that module's context; None otherwise."""
    found = _imported_module(context, name)
    if found is None:
        return None
    other, attribute = found
    return _module_function(other, attribute)


def _module_function(
    module: FileContext, name: str
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, FileContext] | None:
    """The module-level function ``name`` of ``module`` (its last definition), with the module's context."""
    definitions = [
        d for d in module.tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == name
    ]
    return (definitions[-1], module) if definitions else None


def imported_project_function(
    context: FileContext, func: ast.expr
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, FileContext] | None:
    """What a call's ``func`` names when it is a module-level function of another module of the project:
    ``conv_bn`` after ``from blocks import conv_bn``, or ``blocks.conv_bn`` after ``import blocks``."""
    if isinstance(func, ast.Name):
        found = imported_function(context, func.id)
        return found if found is not None and found[1].path != context.path else None
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return None
    level, module = 0, context.imports.get(func.value.id)
    origin = context.local_imports.get(func.value.id)
    if origin is not None:  # `from . import blocks`, `from models import blocks`
        level, package, attribute = origin
        module = f"{package}.{attribute}" if package else attribute
    elif module is None or "." in module and func.value.id != module.rsplit(".", 1)[-1]:
        return None
    try:
        here = Path(context.path).resolve().parent
    except (OSError, RuntimeError):
        return None
    path = _module_file(here, level, module)
    other = _context_of(str(path)) if path is not None else None
    if other is None or other.path == context.path:
        return None
    return _module_function(other, func.attr)


def _imported_module(context: FileContext, name: str) -> tuple[FileContext, str] | None:
    origin = context.local_imports.get(name)
    if origin is None:
        return None
    level, module, attribute = origin
    try:
        here = Path(context.path).resolve().parent
    except (OSError, RuntimeError):
        return None
    path = _module_file(here, level, module)
    if path is None:
        return None
    other = _context_of(str(path))
    return (other, attribute) if other is not None else None


_reading: set[str] = set()  # modules whose star exports are being read (a cycle of star imports ends here)


def star_exports(importer: str, level: int, module: str) -> tuple[dict[str, str], frozenset[str]]:
    """(imports, classes and functions) that ``from module import *`` in file ``importer`` binds, when the
    module is a file of the project; empty otherwise (a library's star import binds what only importing it tells)."""
    nothing: tuple[dict[str, str], frozenset[str]] = ({}, frozenset())
    other = _project_module(importer, level, module)
    if other is None:
        return nothing
    names = other.tree.body
    defined = frozenset(
        statement.name
        for statement in names
        if isinstance(statement, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and not statement.name.startswith("_")
    )
    public = {name: qualified for name, qualified in other.imports.items() if not name.startswith("_")}
    return public, defined


_REEXPORTED = frozenset({"keras", "tf", "tensorflow"})
_LIBRARY_TOPS = frozenset({"tensorflow", "keras", "tf_keras", "tf"})


def reexported_library(importer: str, level: int, module: str, name: str) -> str | None:
    """What `from module import name` binds when `name` is `keras`, `tf` or `tensorflow` and `module` is a
    package of the project that imports that library under the name (TensorFlowASR's `from tensorflow_asr
    import keras, tf`, whose `__init__.py` runs `import keras` and `import tensorflow as tf`); None otherwise."""
    if name not in _REEXPORTED or module.split(".")[0] in _LIBRARY_TOPS:
        return None
    other = _project_module(importer, level, module)
    qualified = other.imports.get(name) if other is not None else None
    if qualified is None or qualified.split(".")[0] not in _LIBRARY_TOPS - {"tf"}:
        return None
    return qualified


def _project_module(importer: str, level: int, module: str) -> FileContext | None:
    """The parsed module `module` of the project, as `from module import ...` in file `importer` finds it;
    None for a library or a module being read already (a cycle of imports ends here)."""
    try:
        here = Path(importer).resolve().parent
    except (OSError, RuntimeError):
        return None
    path = _module_file(here, level, module)
    if path is None or str(path) in _reading:
        return None
    _reading.add(str(path))
    try:
        return _context_of(str(path))
    finally:
        _reading.discard(str(path))


@functools.lru_cache(maxsize=4096)
def _module_file(here: Path, level: int, module: str) -> Path | None:
    """Cached: class_kind asks for every name a file imports, once per rule that asks."""
    parts = [part for part in module.split(".") if part]
    if level:
        base = here
        for _ in range(level - 1):
            base = base.parent
        candidates = [base]
    else:
        candidates = []
        base = here
        for _ in range(_MAX_LEVELS):
            candidates.append(base)
            if (base / ".git").exists() or base.parent == base:
                break
            base = base.parent
    for root in candidates:
        target = root.joinpath(*parts) if parts else root
        for path in (target.with_suffix(".py"), target / "__init__.py"):
            if parts and path.is_file():
                return path
    return None


@functools.lru_cache(maxsize=256)
def _context_of(path: str) -> FileContext | None:
    from tfpilot.lint.context import FileContext

    try:
        data = Path(path).read_bytes()[:_MAX_BYTES]
        source = data.decode("utf-8")
        tree = ast.parse(source)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None
    return FileContext(path=path, source=source, tree=tree)


def sibling_metric_defines(path: str, method: str) -> bool:
    """Whether a Metric subclass of a module in the folder of ``path`` (the file itself included) defines
    ``method``: a project whose own Metric subclasses define ``reset_states`` calls its own method there."""
    if not Path(path).is_file():
        return False
    return method in _sibling_metric_methods(str(Path(path).resolve().parent))


@functools.lru_cache(maxsize=256)
def _sibling_metric_methods(folder: str) -> frozenset[str]:
    names: set[str] = set()
    for count, file in enumerate(sorted(Path(folder).glob("*.py"))):
        if count >= _MAX_SIBLINGS:
            break
        try:
            text = file.read_bytes()[:_MAX_BYTES].decode("utf-8", errors="replace")
            if "Metric" not in text:
                continue
            tree = ast.parse(text)
        except (OSError, SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any("Metric" in ast.unparse(base) for base in node.bases):
                names.update(item.name for item in node.body if isinstance(item, ast.FunctionDef))
    return frozenset(names)


def sibling_mentions(path: str, word: str) -> bool:
    """Whether another module in the folder of ``path`` contains ``word`` (read as text, never imported; asked
    rarely - a TF1 batch norm in a file without UPDATE_OPS - so not cached)."""
    if not Path(path).is_file():
        return False
    here = Path(path).resolve()
    return any(other != here and word in text for other, text in _sibling_texts(str(here.parent)))


def _sibling_texts(folder: str) -> tuple[tuple[Path, str], ...]:
    found: list[tuple[Path, str]] = []
    for count, file in enumerate(sorted(Path(folder).glob("*.py"))):
        if count >= _MAX_SIBLINGS:
            break
        try:
            found.append((file.resolve(), file.read_bytes()[:_MAX_BYTES].decode("utf-8", errors="replace")))
        except OSError:
            continue
    return tuple(found)
