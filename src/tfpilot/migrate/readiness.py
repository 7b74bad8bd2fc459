"""Will a migrated file start on this TensorFlow? Checked statically, against the installed TF.

A file is expected to run when

1. it parses,
2. every import resolves here (TensorFlow / Keras modules are imported, which TensorFlow already
   is; any other package is only looked up, never imported, so checking runs no user code),
3. every ``tf.a.b.c`` it names exists in the installed TensorFlow (``tf.estimator``,
   ``tf.contrib``, ``tf.compat.v1.layers.dense`` under Keras 3 do not), and
4. a file that builds a TF1 graph (placeholders, sessions) turns v2 behaviour off.

This is what stops a migrated TF1 script before its first step; it cannot see a shape error
or a wrong value. Each blocker says what is missing and what to do instead.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["Blocker", "check_runs"]

_TENSORFLOW_FAMILY = ("tensorflow", "keras", "tf_keras")

# What replaces a removed API, by the longest matching prefix of its dotted name.
_REPLACEMENTS: tuple[tuple[str, str], ...] = (
    (
        "tensorflow.estimator",
        "tf.estimator was removed in TF 2.16 and migrate's Estimator shim does not cover this part (it covers "
        "Estimator, EstimatorSpec, RunConfig, numpy_input_fn, train_and_evaluate, export and the DNN / Linear "
        "classifiers and regressors): port the model_fn to a keras.Model and train with model.fit "
        "(or pin TensorFlow <= 2.15)",
    ),
    (
        "tensorflow.compat.v1.estimator",
        "tf.estimator was removed in TF 2.16 and migrate's Estimator shim does not cover this part: port the "
        "model_fn to a keras.Model",
    ),
    ("tensorflow.contrib", "tf.contrib was removed in TF 2.0: use the TF2 / Keras equivalent of this piece"),
    (
        "tensorflow.compat.v1.layers",
        "tf.layers needs Keras 2: use keras.layers (TF2 code), or `pip install tf-keras` and set TF_USE_LEGACY_KERAS=1",
    ),
    (
        "tensorflow.compat.v1.nn.rnn_cell",
        "TF1 RNN cells need Keras 2: use keras.layers.LSTM / GRU / RNN, or `pip install tf-keras` and set "
        "TF_USE_LEGACY_KERAS=1",
    ),
    ("tensorflow.examples", "tensorflow.examples was removed: load the data with keras.datasets or tf.data"),
    ("tensorflow.keras", "Keras 3 removed or moved this API (see the Keras 3 migration guide)"),
    ("keras", "Keras 3 removed or moved this API (see the Keras 3 migration guide)"),
)

_GRAPH_ONLY = ("placeholder", "Session", "InteractiveSession", "sparse_placeholder", "placeholder_with_default")
_DISABLERS = ("disable_v2_behavior", "disable_eager_execution")


@dataclasses.dataclass(frozen=True)
class Blocker:
    line: int
    column: int  # 1-based
    what: str
    fix: str
    # inside an `if` / `elif` / `else` branch (not the main guard): the program stops there only when
    # that branch runs (`elif FLAGS.loss == "cross_entropy": tf.nn.cross_entropy_with_logits(...)`)
    in_branch: bool = False


def _branch_lines(tree: ast.AST) -> set[int]:
    """Lines of the statements inside if / elif / else branches other than the main guard's, and
    inside `except` handlers: a handler runs only when its `try` failed (`try: tf.nn.conv2d_transpose(...)
    except AttributeError: tf.nn.deconv2d(...)`, a fallback for TensorFlow before 0.7)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler):
            statements: list[ast.stmt] = list(node.body)
        elif isinstance(node, ast.If) and not _is_main_guard(node.test):
            statements = [*node.body, *node.orelse]
        else:
            continue
        for statement in statements:
            lines.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    return lines


def _is_main_guard(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


# TF1 options the compat shims (migrate/shims/) refuse with TF1OptionRefused (a NotImplementedError) when the
# migrated file runs: (callee's last name, keyword, the value that does no harm). Named here so
# the report says "will not run" before anyone runs it. The shims refuse rather than guess: each
# option changes what the layer computes (peepholes, projections, renorm, variational dropout).
_SHIM_LIMITS: tuple[tuple[str, str, object], ...] = (
    # tf.layers spells it channels_last, contrib.layers NHWC: the same layout
    ("conv2d_transpose", "data_format", ("channels_last", "NHWC")),
    ("LSTMBlockCell", "use_peephole", False),
    ("LSTMBlockCell", "cell_clip", None),
    ("batch_normalization", "renorm", False),
    ("batch_normalization", "virtual_batch_size", None),
    ("batch_normalization", "adjustment", None),
    ("LSTMCell", "use_peepholes", False),
    ("LSTMCell", "num_proj", None),
    ("LSTMCell", "cell_clip", None),
    ("DropoutWrapper", "variational_recurrent", False),
    ("batch_norm", "batch_weights", None),
    ("batch_norm", "zero_debias_moving_mean", False),
    # _tf1_estimator (tf.estimator on a TF1-graph runner): one device, no warm start, plain heads.
    ("Estimator", "warm_start_from", None),
    ("RunConfig", "train_distribute", None),
    ("RunConfig", "eval_distribute", None),
    ("RunConfig", "experimental_distribute", None),
    ("RunConfig", "device_fn", None),
    *(
        (canned, option, harmless)
        for canned in ("DNNClassifier", "DNNRegressor", "LinearClassifier", "LinearRegressor")
        for option, harmless in (("warm_start_from", None), ("weight_column", None))
    ),
    ("DNNClassifier", "label_vocabulary", None),
    ("LinearClassifier", "label_vocabulary", None),
    ("DNNClassifier", "batch_norm", False),
    ("DNNRegressor", "batch_norm", False),
)


def _shim_limits(tree: ast.AST, skip_lines: range) -> list[Blocker]:
    """Calls that pass an option the shims do not emulate (a literal other than the harmless one;
    a computed value is not judged)."""
    blockers: list[Blocker] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or node.lineno in skip_lines:
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        for name, option, harmless in _SHIM_LIMITS:
            if callee != name:
                continue
            for keyword in node.keywords:
                if (
                    keyword.arg == option
                    and isinstance(keyword.value, ast.Constant)
                    and keyword.value.value not in (harmless if isinstance(harmless, tuple) else (harmless,))
                ):
                    blockers.append(
                        Blocker(
                            node.lineno,
                            node.col_offset + 1,
                            f"`{name}({option}={keyword.value.value!r})`: the migrated {name} does not emulate {option}",
                            f"port this layer to Keras by hand (keras.layers), or drop {option} if the results may change",
                        )
                    )
    return blockers


def _replacement(name: str) -> str:
    for prefix, advice in _REPLACEMENTS:
        if name == prefix or name.startswith(prefix + "."):
            return advice
    return "find the TF 2.21 equivalent (the TensorFlow API docs list every symbol) and use it instead"


def _import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except Exception:  # an import that fails for any reason is what this check reports
        return None


def _module_exists(name: str, local_modules: frozenset[str]) -> bool:
    top = name.split(".")[0]
    if top in local_modules:
        return True
    if top in _TENSORFLOW_FAMILY:
        return _import(name) is not None
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _resolve(path: str) -> tuple[bool, str]:
    """(exists, the longest prefix that does) for a dotted TensorFlow / Keras name."""
    parts = path.split(".")
    obj: Any = _import(parts[0])
    if obj is None:
        return False, ""
    for index, part in enumerate(parts[1:], start=1):
        if not isinstance(obj, ModuleType):
            return True, path  # an attribute of a class or function: not the API surface this checks
        try:
            obj = getattr(obj, part)
        except Exception:  # lazy loaders raise AttributeError / ImportError for removed APIs
            submodule = _import(".".join(parts[: index + 1]))
            if submodule is None:
                return False, ".".join(parts[:index])
            obj = submodule
    return True, path


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def check_runs(
    source: str,
    *,
    local_modules: Iterable[str] = (),
    skip_lines: range = range(0),
    nearby_modules: Mapping[str, str] = {},
    imported: bool = False,
) -> list[Blocker]:
    """What stops ``source`` from starting on the installed TensorFlow (empty: expected to run).

    ``nearby_modules``: module name -> the file outside SRC that provides it (a sibling of a single
    migrated file, say), so a missing import is named as the file to bring along.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return [Blocker(error.lineno or 1, (error.offset or 0) + 1, f"does not parse: {error.msg}", "fix the syntax")]
    local = frozenset(local_modules)
    blockers: list[Blocker] = []
    bindings: dict[str, str] = {}
    lazy = _function_body_lines(tree)
    guarded = _guarded_import_lines(tree)
    if imported:
        # Another file of SRC imports this one: its `if __name__ == "__main__":` block (a module's own sanity
        # check that plots with matplotlib, say) runs only when someone runs the module as a script.
        lazy |= _main_block_lines(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bindings[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
                if node.lineno in guarded and alias.name.split(".")[0] not in _TENSORFLOW_FAMILY:
                    continue  # `try: import cv2 except ImportError: cv2 = None`: the program runs on without it
                if not _module_exists(alias.name, local):
                    blockers.append(_missing_module(node, alias.name, nearby_modules, node.lineno in lazy))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.lineno in guarded and node.module.split(".")[0] not in _TENSORFLOW_FAMILY:
                continue
            if not _module_exists(node.module, local):
                blockers.append(_missing_module(node, node.module, nearby_modules, node.lineno in lazy))
                continue
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                bindings[alias.asname or alias.name] = full
                if alias.name != "*" and node.module.split(".")[0] in _TENSORFLOW_FAMILY:
                    exists, _ = _resolve(full)
                    if not exists:
                        blockers.append(
                            Blocker(node.lineno, node.col_offset + 1, f"`from {node.module} import {alias.name}` fails: "
                                    f"{full} does not exist in this TensorFlow", _replacement(full))
                        )  # fmt: skip

    covered: set[str] = set()  # names checked, and every prefix of them
    branches: set[int] | None = None  # read only when a name is missing (one more walk)
    graph_line = 0
    disabled = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.lineno in skip_lines:
            continue
        name = _dotted(node)
        if name is None:
            continue
        head, _, rest = name.partition(".")
        bound = bindings.get(head)
        if bound is None or bound.split(".")[0] not in _TENSORFLOW_FAMILY:
            continue
        qualified = f"{bound}.{rest}"
        last = qualified.rpartition(".")[2]
        if last in _DISABLERS:
            disabled = True
        if last in _GRAPH_ONLY and qualified.startswith("tensorflow.") and not graph_line:
            graph_line = node.lineno
        if qualified in covered:
            continue
        parts = qualified.split(".")
        covered.update(".".join(parts[:end]) for end in range(1, len(parts) + 1))
        exists, found = _resolve(qualified)
        if not exists:
            missing = ".".join(parts[: len(found.split(".")) + 1]) if found else parts[0]
            if branches is None:
                branches = _branch_lines(tree)
            blockers.append(
                Blocker(
                    node.lineno,
                    node.col_offset + 1,
                    f"`{name}` does not exist in this TensorFlow ({missing} is gone)",
                    _replacement(missing),
                    in_branch=node.lineno in branches,
                )
            )
    if graph_line and not disabled:
        blockers.append(
            Blocker(
                graph_line,
                1,
                "builds a TF1 graph (placeholders / sessions) while TF2 runs eagerly: it fails at the first placeholder",
                "add tf.compat.v1.disable_v2_behavior() right after `import tensorflow as tf` (migrate --mode compat "
                "does this)",
            )
        )
    blockers.extend(_shim_limits(tree, skip_lines))
    return sorted(blockers, key=lambda blocker: (blocker.line, blocker.column))


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _guarded_import_lines(tree: ast.AST) -> set[int]:
    """Lines of imports in the body of a `try` that catches ImportError (or a bare / broader except): a
    missing optional package is what the handler is for."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught: set[str] = set()
        for handler in node.handlers:
            kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            caught.update(
                "BaseException" if kind is None else (_dotted(kind) or "").rpartition(".")[2] for kind in kinds
            )
        if not caught & _IMPORT_ERRORS:
            continue
        for statement in node.body:
            if isinstance(statement, ast.Import | ast.ImportFrom):
                lines.add(statement.lineno)
    return lines


def _main_block_lines(tree: ast.AST) -> set[int]:
    """Lines of the module's `if __name__ == "__main__":` blocks."""
    lines: set[int] = set()
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.If) and _is_main_guard(node.test):
            for statement in node.body:
                lines.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    return lines


def _function_body_lines(tree: ast.AST) -> set[int]:
    """Lines inside function bodies: an import there runs only when the function is called."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for statement in node.body:
                lines.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    return lines


def _missing_module(node: ast.stmt, module: str, nearby_modules: Mapping[str, str], lazy: bool = False) -> Blocker:
    """``lazy``: imported inside a function. A third-party package imported there (matplotlib in a plot
    helper) stops the program only when the function is called, as a branch does; TensorFlow's own
    modules and the project's are what the program runs on, and keep stopping the file."""
    top = module.split(".")[0]
    if top in _TENSORFLOW_FAMILY:
        return Blocker(node.lineno, node.col_offset + 1, f"`{module}` cannot be imported here", _replacement(module))
    if top in nearby_modules:
        return Blocker(
            node.lineno,
            node.col_offset + 1,
            f"local module `{top}` is missing from the migrated files: `{nearby_modules[top]}` was not part of SRC",
            f"migrate the folder that holds {nearby_modules[top]} (or copy it into SRC) so it is migrated too",
        )
    return Blocker(
        node.lineno,
        node.col_offset + 1,
        f"`{top}` is neither a file in SRC (`{top}.py` or a `{top}/` package) nor an installed package"
        + (" (imported inside a function or the main block of a module SRC imports)" if lazy else ""),
        f"if `{top}` is one of your modules, add {top}.py to SRC and migrate again; if it is a third-party "
        "package, install it",
        in_branch=lazy,
    )
