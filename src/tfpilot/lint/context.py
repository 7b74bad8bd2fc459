"""FileContext: one parsed file, its imports, and the state of the single walk over its tree.

The engine walks each tree once. While it walks, the context keeps what rules need to know
about the position of the current node: the enclosing function (and whether TensorFlow traces
it as a graph), the enclosing loops, GradientTape blocks and classes. Rules read this state in
their visit_* handlers instead of walking the tree again.

Split in three: this module (imports, names, bindings, the graph/eager heuristics and the hot
``_visit`` loop), ``scope`` (the Scope and TapeBlock state) and ``walker`` (how functions,
classes, loops, tapes, branches and assignments update that state).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from typing import Any

from tfpilot.lint.apis import (
    KERAS2_ONLY_LIBRARIES,
    PRIVATE_KERAS,
    TF_FUNCTION_QUALNAMES,
    is_dataset_constructor,
    keras_name,
)
from tfpilot.lint.bindings import Bindings
from tfpilot.lint.chains import Pipeline, method_steps, resolve_pipeline
from tfpilot.lint.installed_tf import installed_tf1_at, tf_installs
from tfpilot.lint.loaded_snippets import conventional_imports, loader_imports
from tfpilot.lint.local_modules import imported_class
from tfpilot.lint.naming import is_dataset_name
from tfpilot.lint.nodes import walk_nodes
from tfpilot.lint.project import ProjectPins, project_pins
from tfpilot.lint.scope import Scope, TapeBlock
from tfpilot.lint.walker import STRUCTURAL

__all__ = ["FileContext", "Scope", "TapeBlock"]

# Keras compiles these Model methods with tf.function inside fit/evaluate/predict.
_KERAS_GRAPH_METHODS = frozenset({"train_step", "test_step", "predict_step"})
# The Model methods that run those steps as a tf.function.
_KERAS_ENTRY_POINTS = frozenset(
    {"fit", "evaluate", "predict", "train_on_batch", "test_on_batch", "predict_on_batch", "make_train_function"}
)
# no leading \b: the word start is checked by hand (a leading \b makes the scan ~50x slower)
_WRAPPED_RE = re.compile(r"function\(\s*(?:self\.)?([A-Za-z_]\w*)\s*[,)]")
_DATASET_FN_RE = re.compile(r"\.\s*(?:map|filter|flat_map|interleave)\(\s*(?:self\.)?([A-Za-z_]\w*)\s*[,)]")
_RECEIVER_RE = re.compile(r"([\w)\]]+)\s*$")
_LINE_BREAK_RE = re.compile(r"\r\n?|\n")
# `model.compile(..., run_eagerly=True)` or `model.run_eagerly = True`: Keras runs the step eagerly.
_RUN_EAGERLY_RE = re.compile(r"\brun_eagerly\s*=\s*True\b")
_LEGACY_KERAS_RE = re.compile(r"""["']TF_USE_LEGACY_KERAS["']\s*\]?\s*[=,]\s*["']?(?:1|True|true)""")
_KERAS_MODEL_PATHS = frozenset({"Model", "models.Model", "Sequential", "models.Sequential"})
_KERAS_LAYER_PATHS = frozenset({"layers.Layer", "Layer", "engine.base_layer.Layer"})
_TF_MODULE_QUALNAMES = frozenset({"tensorflow.Module", "tensorflow.compat.v2.Module", "tensorflow.compat.v1.Module"})
_EAGER_RE = re.compile(
    r"(?:py_function|numpy_function|py_func|eager_py_func)\(\s*(?:func\s*=\s*)?(?:self\.)?([A-Za-z_]\w*)"
)
# What a `try` body's import binds on TF 2.21, where it succeeds: its except handler's import is the
# fallback for older TensorFlow (a contrib import in the body fails there, so its handler's binds).
_PRESENT_ON_TF2 = ("tensorflow.compat.", "tensorflow.keras", "keras")
# Fields that never hold a node a rule needs: contexts, operators, and plain strings/ints
# (identifiers, import aliases) - skipping them saves a getattr and a type check per node.
_SKIP_FIELDS = frozenset(
    {
        "ctx",
        "op",
        "ops",
        "type_comment",
        "kind",
        "arg",
        "id",
        "attr",
        "name",
        "module",
        "level",
        "asname",
        "conversion",
        "is_async",
        "simple",
        "names",
        "type_ignores",
    }
)
_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_AST = ast.AST
_NAME = ast.Name
_ATTRIBUTE = ast.Attribute
_CONSTANT = ast.Constant
_LOAD = ast.Load
# Child fields per node type, minus those that never hold nodes worth visiting.
_FIELDS: dict[type, tuple[str, ...]] = {}


PRIVATE_KERAS_REASON = "its `keras` is TensorFlow's private Keras 2 copy, tensorflow.python.keras"
# Names code uses for TensorFlow and its friends without importing them itself only when something else
# imported them: a snippet loaded into a notebook (lint.loaded_snippets) is the case worth a look.
_USES_UNBOUND_ALIAS = re.compile(r"(?<![\w.])(tf|keras|layers|optimizers|np)\.\w|(?<![\w.])(Sequential|Dense)\(")


class FileContext:
    """Everything about one file that rules share; built once per file by the engine."""

    def __init__(self, *, path: str, source: str, tree: ast.Module) -> None:
        self.path = path
        self._project: ProjectPins | None = None
        self.source = source
        self.tree = tree
        self.imports: dict[str, str] = {}
        # local name -> (level, module, name) of every `from X import name` (relative ones too)
        self.local_imports: dict[str, tuple[int, str, str]] = {}
        # "model" / "self.acc" -> qualified name of the call it was last assigned from.
        self.assigned_calls: dict[str, str] = {}
        # tf.function names seen (wrapped or decorated) -> has input_signature.
        self.graph_functions: dict[str, bool] = {}
        self.stack: list[ast.AST] = []
        self.scopes: list[Scope] = [Scope(tree)]
        self.loops: list[ast.AST] = []
        self.tapes: list[TapeBlock] = []
        self.classes: list[ast.ClassDef] = []
        self._lines: list[str] | None = None
        self._qualname_cache: dict[int, str | None] = {}
        self._function_defs: dict[str, list[ast.AST]] = {}
        self._class_defs: dict[str, list[ast.ClassDef]] = {}
        self._class_kinds: dict[int, str] = {}
        self._star_modules: list[tuple[int, str]] = []
        # name -> [(line, qualified)] for module-level names imported as different modules: a
        # notebook imports `tensorflow.compat.v1 as tf` in one cell and `tensorflow as tf` later
        self._rebound: dict[str, list[tuple[int, str]]] = {}
        self.inherited_imports = ""  # the imports of a notebook that `%load`s this file, as text
        self._collect_statements(tree.body, module_level=True)
        self._rebound = {name: lines for name, lines in self._rebound.items() if len({q for _, q in lines}) > 1}
        if self._star_modules:
            self._add_star_imports()
        if "tf" not in self.imports and "keras" not in self.imports and self._uses_unbound_alias(source):
            # a snippet a notebook `%load`s: it runs where the notebook's imports hold (lint.loaded_snippets)
            inherited = loader_imports(path) or conventional_imports(tree)
            for name, qualified in inherited.items():
                self.imports.setdefault(name, qualified)
            # the rules' text gates (Rule.tokens) read these too: the file's own text names no import
            self.inherited_imports = " ".join(f"import {qualified} as {name}" for name, qualified in inherited.items())
        self.uses_tensorflow = any(
            value.split(".")[0] in ("tensorflow", "keras", "tf_keras") for value in self.imports.values()
        )
        self._wrapped_names, self._dataset_fn_names = self._scan_graph_function_names()
        # Functions handed to tf.py_function & co. run eagerly even when called from a graph.
        self._eager_names = (
            frozenset(m.group(1) for m in _EAGER_RE.finditer(source))
            if self.uses_tensorflow and "_func" in source
            else frozenset()
        )
        # Keras models compiled with run_eagerly=True run train_step & co. as plain Python.
        self.keras_runs_eagerly = "run_eagerly" in source and _RUN_EAGERLY_RE.search(source) is not None
        self._keras2_reason: str | None | bool = False  # False: not computed yet
        self._bindings: Bindings | None = None
        self._returns_dataset: dict[str, bool] = {}
        # command-line option -> literal default (lint.paths; built on the first question)
        self.flag_defaults: dict[str, str] | None = None
        self._layer_aliases: dict[str, str] | None = None
        self._tf1_only: list[tuple[int, int]] | None = None
        self._installs: list[tuple[int, int, str]] | None = None

    def _uses_unbound_alias(self, source: str) -> bool:
        """The file uses `tf.`, `np.`, `Dense(` ... without importing that name (a NumPy-only module that
        imports numpy as np does not ask where its names come from)."""
        for match in _USES_UNBOUND_ALIAS.finditer(source):
            if (match.group(1) or match.group(2)) not in self.imports:
                return True
        return False

    @property
    def bindings(self) -> Bindings:
        """What names refer to where (built on the first question; most files never ask)."""
        if self._bindings is None:
            self._bindings = Bindings(self)
        return self._bindings

    @property
    def keras2_reason(self) -> str | None:
        """Why this file's tf.keras is Keras 2 (tf_keras), or None: Keras 3, as on a plain TF 2.21.

        tensorflow_recommenders refuses to import under Keras 3 (it asks for TF_USE_LEGACY_KERAS=1),
        and a file that sets that variable or imports tf_keras runs on Keras 2 too. A standalone
        `import keras` is Keras 3 whatever the variable says, so such a file gets no reason.
        """
        if self._keras2_reason is False:
            tops = {value.split(".")[0] for value in self.imports.values()}
            reason = None
            if self.imports.get("keras", "").startswith(PRIVATE_KERAS):
                # `from tensorflow.python import keras`: the file's `keras` is TensorFlow's frozen Keras 2 copy, whose
                # objects behave as Keras 2 (TFP509 reports the import itself).
                reason = PRIVATE_KERAS_REASON
            elif "keras" not in tops:
                library = next((name for name in KERAS2_ONLY_LIBRARIES if name in tops), None)
                if library is not None:
                    reason = f"it imports {library}, which needs TF_USE_LEGACY_KERAS=1"
                elif "tf_keras" in tops:
                    reason = "it imports tf_keras"
                elif _LEGACY_KERAS_RE.search(self.source):
                    reason = "it sets TF_USE_LEGACY_KERAS=1"
                else:
                    reason = self.project.keras2
            self._keras2_reason = reason
        return self._keras2_reason  # type: ignore[return-value]

    @property
    def project(self) -> ProjectPins:
        """What the file's project packaging pins (TensorFlow below 2.16, tf_keras)."""
        if self._project is None:
            self._project = project_pins(self.path)
        return self._project

    # --- source positions ---------------------------------------------------------------------

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            # Python's own line breaks only: str.splitlines also splits on form feeds and other
            # separators, which would shift line numbers against the AST's.
            self._lines = _LINE_BREAK_RE.split(self.source)
        return self._lines

    def line_text(self, line: int) -> str:
        lines = self.lines
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def char_span(self, node: ast.AST) -> tuple[int, int, int, int]:
        """(line, column, end_line, end_column) with character (not UTF-8 byte) columns."""
        line = getattr(node, "lineno", 1)
        column = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", None) or line
        end_column = getattr(node, "end_col_offset", None)
        if end_column is None:
            end_column = column
        return line, self.char_column(line, column), end_line, self.char_column(end_line, end_column)

    def char_column(self, line: int, byte_column: int) -> int:
        text = self.line_text(line)
        if text.isascii():
            return byte_column
        return len(text.encode("utf-8")[:byte_column].decode("utf-8", errors="replace"))

    # --- names ----------------------------------------------------------------------------------

    def _collect_statements(self, statements: list[ast.stmt], *, module_level: bool, fallback: bool = False) -> None:
        """Imports (including function-local ones: TF code imports lazily) and function defs.

        Walks statements only, never expressions, so it costs a fraction of the main walk.
        ``fallback``: the handlers of a ``try`` whose body imports: ``try: import tensorflow.compat.v1
        as tf`` / ``except ImportError: import tensorflow as tf`` binds what the body imports on TF 2.21,
        where that import succeeds, so a handler's import binds only names the body left unbound.
        """
        for statement in statements:
            kind = statement.__class__
            if kind is ast.Import:
                for alias in statement.names:  # type: ignore[attr-defined]
                    if alias.asname:
                        self._bind_import(alias.asname, alias.name, statement, module_level, fallback)
                    else:
                        top = alias.name.split(".")[0]
                        self.imports.setdefault(top, top)
                continue
            if kind is ast.ImportFrom:
                for alias in statement.names:  # type: ignore[attr-defined]
                    # where to look for a class of this project (tfpilot.lint.local_modules)
                    self.local_imports[alias.asname or alias.name] = (
                        statement.level,  # type: ignore[attr-defined]
                        statement.module or "",  # type: ignore[attr-defined]
                        alias.name,
                    )
                if statement.names[0].name == "*" and statement in self.tree.body:  # type: ignore[attr-defined]
                    self._star_modules.append((statement.level, statement.module or ""))  # type: ignore[attr-defined]
                reexported: set[str] = set()
                for alias in statement.names:  # type: ignore[attr-defined]
                    if alias.name in ("keras", "tf", "tensorflow") and self.path:
                        # a project package re-exporting the library: the library itself
                        from tfpilot.lint.local_modules import reexported_library

                        library = reexported_library(
                            self.path,
                            statement.level,  # type: ignore[attr-defined]
                            statement.module or "",  # type: ignore[attr-defined]
                            alias.name,
                        )
                        if library is not None:
                            self._bind_import(alias.asname or alias.name, library, statement, module_level, fallback)
                            reexported.add(alias.asname or alias.name)
                if statement.level or not statement.module:  # type: ignore[attr-defined]
                    continue
                for alias in statement.names:  # type: ignore[attr-defined]
                    if alias.name != "*" and (alias.asname or alias.name) not in reexported:
                        qualified = f"{statement.module}.{alias.name}"  # type: ignore[attr-defined]
                        self._bind_import(alias.asname or alias.name, qualified, statement, module_level, fallback)
                continue
            if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                self._function_defs.setdefault(statement.name, []).append(statement)  # type: ignore[attr-defined]
            elif kind is ast.ClassDef:
                self._class_defs.setdefault(statement.name, []).append(statement)  # type: ignore[arg-type, attr-defined]
            inner = module_level and kind is not ast.FunctionDef and kind is not ast.AsyncFunctionDef
            inner = inner and kind is not ast.ClassDef
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                block = getattr(statement, field, None)
                if block:
                    handler = fallback or (field == "handlers" and kind is ast.Try)
                    self._collect_statements(block, module_level=inner, fallback=handler)

    def _bind_import(self, name: str, qualified: str, statement: ast.stmt, module_level: bool, fallback: bool) -> None:
        if fallback and self.imports.get(name, "").startswith(_PRESENT_ON_TF2):
            return  # the try body's import succeeds on TF 2.21; `import tensorflow.contrib...` would not
        self.imports[name] = qualified
        if module_level:
            self._rebound.setdefault(name, []).append((statement.lineno, qualified))

    def _imported_as(self, name: str, node: ast.AST) -> str | None:
        """What ``name`` is imported as where ``node`` is: module code sees the last import above it."""
        history = self._rebound.get(name)
        if history is None:
            return self.imports.get(name)
        line = getattr(node, "lineno", 0)
        chosen = history[0][1]  # a use above every import (a function body): the first
        for at, qualified in history:
            if at > line:
                break
            chosen = qualified
        return chosen

    def _add_star_imports(self) -> None:
        """``from utils.tf_utils import *`` of a module of the project: the names it binds come with it.

        Research code keeps ``import tensorflow as tf`` in one utility module and star-imports it everywhere
        (akanyaani/gpt-2-tensorflow2.0): without this, ``tf`` is unknown in every file but that one. The module's
        imports (and its own star imports, transitively) and its classes and functions are added where this file
        binds nothing under the name; the module is read from disk, never imported.
        """
        from tfpilot.lint.local_modules import star_exports

        for level, module in self._star_modules:
            imports, definitions = star_exports(self.path, level, module)
            for name, qualified in imports.items():
                self.imports.setdefault(name, qualified)
            for name in definitions:
                self.local_imports.setdefault(name, (level, module, name))

    def qualname(self, node: ast.AST | None) -> str | None:
        """``tf.compat.v1.Session`` -> ``tensorflow.compat.v1.Session`` through the imports."""
        if node is None:
            return None
        key = id(node)
        cache = self._qualname_cache
        if key in cache:
            return cache[key]
        parts: list[str] = []
        current = node
        while isinstance(current, ast.Attribute):
            parts.append(current.attr)
            current = current.value
        result = None
        if isinstance(current, ast.Name):
            base = self._imported_as(current.id, current) if self._rebound else self.imports.get(current.id)
            if base is not None:
                parts.append(base)
                result = ".".join(reversed(parts))
                if result.startswith("tensorflow.compat.v2."):
                    # `import tensorflow.compat.v2 as tf` is TF2's own namespace (TF's libraries
                    # are written so): every rule sees `tf.data.Dataset` as `tensorflow.data.Dataset`
                    result = "tensorflow." + result[len("tensorflow.compat.v2.") :]
        cache[key] = result
        return result

    def root_binding(self, node: ast.AST) -> str | None:
        """What the leftmost name of a dotted expression was imported as."""
        while isinstance(node, ast.Attribute):
            node = node.value
        if isinstance(node, ast.Name):
            return self._imported_as(node.id, node) if self._rebound else self.imports.get(node.id)
        return None

    @staticmethod
    def dotted(node: ast.AST | None) -> str | None:
        """Plain dotted text of a Name/Attribute chain (``self.model``), no import resolution."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        return None

    def local_alias(self, module: str) -> str | None:
        """The local name bound to ``module`` (``tf`` for tensorflow), if the file imports it."""
        for local, qualified in self.imports.items():
            if qualified == module:
                return local
        return None

    def installed_tf1_at(self, line: int) -> tuple[int, str] | None:
        """The file's own TensorFlow 1 install in force at ``line`` (``!pip install tensorflow==1.14`` in a
        notebook), as (line, text), or None (lint.installed_tf)."""
        if self._installs is None:
            self._installs = tf_installs(self.source)
        return installed_tf1_at(self._installs, line) if self._installs else None

    @property
    def tf1_only_blocks(self) -> list[tuple[int, int]]:
        """Line ranges of the blocks only TensorFlow 1 runs (lint.tf1_branches; computed once)."""
        if self._tf1_only is None:
            from tfpilot.lint.tf1_branches import tf1_only_lines

            self._tf1_only = tf1_only_lines(self)
        return self._tf1_only

    def keras_layer_path(self, func: ast.expr) -> str | None:
        """``layers.BatchNormalization`` for ``tf.keras.layers.BatchNormalization`` and for a name
        the file binds to a Keras layer class: ``BatchNormalization = tf.keras.layers.BatchNormalization``
        or ``Conv2D = functools.partial(tf.keras.layers.Conv2D, padding="same")``, as model-building
        functions often shorten their layers. A name bound to different things is not followed."""
        found = keras_name(self.qualname(func))
        if found is not None:
            return found[1] if found[1].startswith("layers.") else None
        if not isinstance(func, ast.Name):
            return None
        if self._layer_aliases is None:
            bound: dict[str, set[str | None]] = {}
            for node in walk_nodes(self.tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    value = node.value
                    if isinstance(value, ast.Call) and self.qualname(value.func) == "functools.partial" and value.args:
                        value = value.args[0]
                    path = keras_name(self.qualname(value)) if isinstance(value, (ast.Name, ast.Attribute)) else None
                    bound.setdefault(node.targets[0].id, set()).add(
                        path[1] if path is not None and path[1].startswith("layers.") else None
                    )
            self._layer_aliases = {
                name: path for name, paths in bound.items() if len(paths) == 1 for path in paths if path is not None
            }
        return self._layer_aliases.get(func.id)

    def class_defs(self, name: str) -> list[ast.ClassDef]:
        """All classes called ``name`` anywhere in the file."""
        return self._class_defs.get(name, [])

    def function_defs(self, name: str) -> list[ast.AST]:
        """All functions and methods called ``name`` anywhere in the file."""
        return self._function_defs.get(name, [])

    def resolve_function(self, name: str, call: ast.AST, *, method: bool = False) -> ast.AST | None:
        """The definition a call of ``name`` runs when the file defines it more than once.

        Module-level code runs top to bottom, so there the last definition above the call
        wins; a call inside a function runs later, when every definition has executed, so
        the last one in the file wins. ``method``: only methods of the enclosing class count.
        """
        definitions = self._function_defs.get(name, [])
        if method:
            klass = self.current_class()
            if klass is None:
                return None
            start, end = klass.lineno, klass.end_lineno or klass.lineno
            definitions = [d for d in definitions if start <= getattr(d, "lineno", 0) <= end]
        if not definitions:
            return None
        line = getattr(call, "lineno", 0)
        if isinstance(self.scope.node, ast.Module):
            above = [d for d in definitions if getattr(d, "lineno", 0) < line]
            if above:
                return above[-1]
        return definitions[-1]

    def class_kind(self, klass: ast.ClassDef | str | None) -> str:
        """``"keras-model"``, ``"keras-layer"``, ``"tf-module"`` (a tf.Module that is no Keras
        object) or ``"unknown"``, following base classes defined in this file (and a class this
        file imports from a module of its own project)."""
        if isinstance(klass, str):
            definitions = self._class_defs.get(klass)
            if not definitions:
                found = imported_class(self, klass)
                return found[1].class_kind(found[0]) if found is not None else "unknown"
            klass = definitions[-1]
        if klass is None:
            return "unknown"
        known = self._class_kinds.get(id(klass))
        if known is not None:
            return known
        self._class_kinds[id(klass)] = "unknown"  # a cycle of local bases resolves to unknown
        kinds: list[str] = []
        for base in klass.bases:
            qualname = self.qualname(base)
            path = keras_name(qualname)
            if path is not None and path[1] in _KERAS_MODEL_PATHS:
                kinds.append("keras-model")
            elif path is not None and path[1] in _KERAS_LAYER_PATHS:
                kinds.append("keras-layer")
            elif qualname in _TF_MODULE_QUALNAMES:
                kinds.append("tf-module")
            elif isinstance(base, ast.Name) and base.id in self._class_defs:
                kinds.append(self.class_kind(base.id))
        # Keras classes are tf.Modules too: any Keras base makes the class Keras.
        kind = next((k for k in ("keras-model", "keras-layer", "tf-module") if k in kinds), "unknown")
        self._class_kinds[id(klass)] = kind
        return kind

    def _is_keras_model_class(self, klass: ast.ClassDef) -> bool:
        kind = self.class_kind(klass)
        if kind != "unknown":
            return kind == "keras-model"
        # A base imported from the user's own package: trust a name that says it is a model.
        return any((self.dotted(base) or "").endswith("Model") for base in klass.bases)

    def returns_dataset(self, name: str) -> bool:
        """``name()`` builds a tf.data.Dataset: a tf.data.Dataset subclass of this file (the
        data_performance guide's ``ArtificialDataset``) or a function that returns a pipeline."""
        cache = self._returns_dataset
        if name not in cache:
            cache[name] = False  # recursion guard
            found = any(
                (self.qualname(base) or "").endswith("data.Dataset")
                for k in self._class_defs.get(name, ())
                for base in k.bases
            ) or any(_returns_pipeline(d, self) for d in self._function_defs.get(name, ()))
            cache[name] = found
        return cache[name]

    def _step_runs_eagerly(self, klass: ast.ClassDef, method: str) -> bool:
        """``model.train_step(batch)`` called by hand on instances that are never fit: Keras
        never compiles the step, so it is plain eager Python (migration guides do this)."""
        if f".{method}(" not in self.source:
            return False
        return self.bindings.only_called_directly(klass.name, method, _KERAS_ENTRY_POINTS)

    def is_graph_function_name(self, name: str) -> bool:
        return name in self.graph_functions or (self.uses_tensorflow and name in self._wrapped_names)

    # --- walk state -----------------------------------------------------------------------------

    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    @property
    def parent(self) -> ast.AST | None:
        """Parent of the node being visited (the node itself is ``stack[-1]``)."""
        return self.stack[-2] if len(self.stack) > 1 else None

    def ancestors(self) -> Iterator[ast.AST]:
        """Ancestors of the current node, innermost first (the node itself excluded)."""
        return reversed(self.stack[:-1])

    def function_loops(self) -> list[ast.AST]:
        """Loops enclosing the current node inside the current function."""
        depth = self.scope.loop_depth
        return self.loops[len(self.loops) - depth :] if depth else []

    def current_class(self) -> ast.ClassDef | None:
        return self.classes[-1] if self.classes else None

    def pipeline(self, expr: ast.expr) -> Pipeline:
        return resolve_pipeline(expr, self)

    # --- the walk -------------------------------------------------------------------------------

    def walk(
        self,
        *,
        enter: dict[type, list[Callable[[Any], None]]],
        leave: dict[type, list[Callable[[Any], None]]],
        references: list[Callable[[ast.AST, str], None]],
    ) -> None:
        self._enter = enter
        self._leave = leave
        self._references = references
        # Names and constants are half of all nodes; unless a rule subscribes to them directly
        # they are handled inline by their parent instead of through a recursive _visit.
        self._fast_names = _NAME not in enter and _NAME not in leave
        self._fast_constants = _CONSTANT not in enter and _CONSTANT not in leave
        self._visit(self.tree)

    def _visit(self, node: ast.AST) -> None:
        # The hot loop of the linter: kept flat, with the common leaves inlined. Every visited
        # node is pushed on ``stack`` so that handlers can look at their ancestors.
        kind = node.__class__
        stack = self.stack
        stack.append(node)
        handlers = self._enter.get(kind)
        if handlers:
            for handler in handlers:
                handler(node)
        if kind is _ATTRIBUTE:
            if self._references and node.ctx.__class__ is _LOAD:  # type: ignore[attr-defined]
                self._emit_reference(node)
            value = node.value  # type: ignore[attr-defined]
            # A Name under an Attribute is never the longest dotted name: nothing to do.
            if value.__class__ is not _NAME or not self._fast_names:
                self._visit(value)
        elif kind is _NAME:
            if self._references and node.id in self.imports and node.ctx.__class__ is _LOAD:  # type: ignore[attr-defined]
                self._emit_reference(node)
        elif kind is not _CONSTANT:
            structural = STRUCTURAL.get(kind)
            if structural is not None:
                structural(self, node)
            else:
                fields = _FIELDS.get(kind)
                if fields is None:
                    fields = _FIELDS[kind] = tuple(n for n in kind._fields if n not in _SKIP_FIELDS)
                visit = self._visit
                fast_names = self._fast_names
                fast_constants = self._fast_constants
                for name in fields:
                    value = getattr(node, name, None)
                    if value is None:
                        continue
                    if value.__class__ is list:
                        for item in value:
                            cls = item.__class__
                            if cls is _NAME and fast_names:
                                if self._references and item.id in self.imports and item.ctx.__class__ is _LOAD:
                                    self._emit_name_reference(item)
                            elif cls is _CONSTANT and fast_constants:
                                continue
                            elif isinstance(item, _AST):
                                visit(item)
                    else:
                        cls = value.__class__
                        if cls is _NAME and fast_names:
                            if self._references and value.id in self.imports and value.ctx.__class__ is _LOAD:
                                self._emit_name_reference(value)
                        elif cls is _CONSTANT and fast_constants:
                            continue
                        elif isinstance(value, _AST):
                            visit(value)
        handlers = self._leave.get(kind)
        if handlers:
            for handler in handlers:
                handler(node)
        stack.pop()

    def release(self) -> None:
        """Drop the handlers (bound methods of rules that point back here) after the walk."""
        self._enter = {}
        self._leave = {}
        self._references = []
        self._qualname_cache.clear()

    def _emit_name_reference(self, node: ast.Name) -> None:
        """A bare imported name used by a non-Attribute parent (that parent is on the stack)."""
        qualname = (self._imported_as(node.id, node) if self._rebound else None) or self.imports[node.id]
        self.stack.append(node)
        for handler in self._references:
            handler(node, qualname)
        self.stack.pop()

    def _visit_list(self, nodes: list[Any]) -> None:
        for item in nodes:
            if isinstance(item, _AST):
                self._visit(item)

    def _emit_reference(self, node: ast.AST) -> None:
        stack = self.stack
        parent = stack[-2] if len(stack) > 1 else None
        if type(parent) is _ATTRIBUTE and parent.value is node:  # type() is: hot path, no subclasses
            return  # only the longest dotted name is a reference
        qualname = self.qualname(node)
        if qualname is not None:
            for handler in self._references:
                handler(node, qualname)

    def _scan_graph_function_names(self) -> tuple[frozenset[str], frozenset[str]]:
        """Names wrapped by ``tf.function(f)`` or passed to ``dataset.map(f)`` (traced as graphs).

        A text scan, because the def usually comes before the wrap and its body is visited first.
        """
        if not self.uses_tensorflow:
            return frozenset(), frozenset()
        source = self.source
        wrapped = (
            frozenset(
                m.group(1)
                for m in _WRAPPED_RE.finditer(source)
                if m.start() == 0 or not (source[m.start() - 1].isalnum() or source[m.start() - 1] == "_")
            )
            if "function(" in source
            else frozenset()
        )
        dataset_fns: set[str] = set()
        for match in _DATASET_FN_RE.finditer(source):
            before = _RECEIVER_RE.search(source, max(match.start() - 60, 0), match.start())
            receiver = before.group(1) if before else ""
            if receiver.endswith((")", "]")) or is_dataset_name(receiver):
                dataset_fns.add(match.group(1))
        return wrapped, frozenset(dataset_fns)

    def _graph_status(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[bool, str, bool]:
        if node.name in self._eager_names:
            return False, "", False
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self.qualname(target) in TF_FUNCTION_QUALNAMES:
                signature = isinstance(decorator, ast.Call) and any(
                    keyword.arg == "input_signature" for keyword in decorator.keywords
                )
                self.graph_functions[node.name] = signature
                return True, "tf.function", signature
        if self.scope.is_graph and not isinstance(self.scope.node, ast.Module):
            return True, self.scope.graph_reason, False
        if self.uses_tensorflow and node.name in self._wrapped_names:
            return True, "tf.function", self.graph_functions.get(node.name, False)
        klass = self.current_class()
        if (
            klass is not None
            and node.name in _KERAS_GRAPH_METHODS
            and self.stack[-2] is klass
            and not self.keras_runs_eagerly
            and self._is_keras_model_class(klass)
            and not self._step_runs_eagerly(klass, node.name)
        ):
            return True, f"Keras {node.name}", False
        if node.name in self._dataset_fn_names:
            return True, "tf.data map function", False
        return False, "", False


def _is_pipeline_expr(value: ast.AST, context: FileContext) -> bool:
    """A dataset constructor call, possibly followed by dataset methods."""
    if not isinstance(value, ast.expr):
        return False
    root, steps = method_steps(value)
    if isinstance(root, ast.Call):
        if is_dataset_constructor(context.qualname(root.func)):
            return True
        return isinstance(root.func, ast.Name) and context.returns_dataset(root.func.id)
    first = steps[0] if steps else None
    return first is not None and is_dataset_constructor(context.qualname(first.call.func))


def _returns_pipeline(function: ast.AST, context: FileContext) -> bool:
    assigned: dict[str, ast.AST] = {}
    returns: list[ast.AST] = []
    for node in walk_nodes(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, node.value)
        elif isinstance(node, ast.Return) and node.value is not None:
            returns.append(node.value)
    for value in returns:
        if isinstance(value, ast.Name) and value.id in assigned:
            value = assigned[value.id]
        if _is_pipeline_expr(value, context):
            return True
    return False
