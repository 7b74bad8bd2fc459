"""TF1 names that TF 2.x removed from the ``tf`` namespace, and their TF2 spelling (TFP614).

The table lives in ``tf1_removed_data.py``, generated from TensorFlow's own upgrade tables
(tf_upgrade_v2's ``all_renames_v2.symbol_renames``, its function transformers and
``module_deprecations_v2``) checked against the installed TensorFlow: a name is listed only
where ``tf.<name>`` raises AttributeError, and its replacement only where it resolves. Lint
never imports TensorFlow; regenerate after a TensorFlow upgrade with::

    python -m tfpilot.lint.tf1_names --regenerate
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path
from typing import Any

from tfpilot.lint.tf1_removed_data import IN_COMPAT_V2, REMOVED, REMOVED_DATASET_METHODS, REMOVED_KEYWORDS

__all__ = [
    "IN_COMPAT_V2",
    "REMOVED",
    "REMOVED_DATASET_METHODS",
    "REMOVED_KEYWORDS",
    "removed_match",
    "regenerate",
    "resolves",
]

_DATA_FILE = Path(__file__).with_name("tf1_removed_data.py")
# Whole namespaces other rules own: tf.contrib (TFP604), tf.estimator (TFP611), tf.layers (TFP612),
# tensorflow.examples (TFP613), and tf.keras (Keras 3's removals, TFP504).
_OWNED_ELSEWHERE = ("contrib", "estimator", "layers", "examples", "keras")


@functools.lru_cache(maxsize=8192)
def removed_match(name: str) -> str | None:
    """The entry of REMOVED that ``name`` (relative to ``tf``) is or is inside: ``gfile.Exists``
    -> ``gfile.Exists``; ``app.flags.DEFINE_string`` -> ``app.flags``."""
    if name in REMOVED:
        return name
    parts = name.split(".")
    for end in range(len(parts) - 1, 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in REMOVED:
            return candidate
    return None


def resolves(module: Any, dotted: str) -> bool:
    """Whether `module.a.b.c` exists on the installed package (a lazy submodule that fails to load does not)."""
    value = module
    for part in dotted.split("."):
        try:
            value = getattr(value, part)
        except Exception:  # noqa: BLE001 - AttributeError, or the ImportError of a lazy module: gone either way
            return False
    return True


def _table() -> tuple[dict[str, str | None], dict[str, str], frozenset[str]]:  # pragma: no cover - needs TensorFlow
    import tensorflow as tf
    from tensorflow.tools.compatibility import all_renames_v2, module_deprecations_v2, tf_upgrade_v2

    spec = tf_upgrade_v2.TFAPIChangeSpec()
    renames: dict[str, str | None] = {}
    for old, new in all_renames_v2.symbol_renames.items():
        if old.startswith("tf.") and new.startswith("tf."):
            renames[old[3:]] = new[3:]
    dataset_methods: dict[str, str] = {}
    for old, transformer in spec.function_transformers.items():
        if old.startswith("*."):
            method = old[2:]
            if not resolves(tf.data.Dataset, method) and resolves(tf, f"compat.v1.data.{method}"):
                dataset_methods[method] = f"compat.v1.data.{method}"
            continue
        if not old.startswith("tf."):
            continue
        name = old[3:]
        if getattr(transformer, "__name__", "") == "_cast_transformer":
            dtype = {"float": "float32", "double": "float64"}.get(name[3:], name[3:])
            renames[name] = f"cast(x, tf.{dtype})"  # the TF2 spelling, not compat.v1.to_float
        else:
            renames.setdefault(name, None)
    for old in module_deprecations_v2.MODULE_DEPRECATIONS:
        if old.startswith("tf."):
            renames.setdefault(old[3:], None)

    removed: dict[str, str | None] = {}
    for name, new in sorted(renames.items()):
        if name.startswith("compat.") or name.split(".")[0] in _OWNED_ELSEWHERE or resolves(tf, name):
            continue
        removed[name] = _replacement(tf, name, new)
        # `tf.gfile` itself is gone, not only `tf.gfile.Exists`: list the first missing module
        # too, so a member the tables do not name (or `gfile = tf.gfile`) is still found.
        parts = name.split(".")
        for end in range(1, len(parts)):
            module = ".".join(parts[:end])
            if not resolves(tf, module):
                if module not in renames:
                    removed.setdefault(module, _replacement(tf, module, None))
                break
    # `import tensorflow.compat.v2 as tf` keeps a few (tf.enable_v2_behavior): not removed there.
    in_compat_v2 = frozenset(name for name in removed if resolves(tf.compat.v2, name))
    return dict(sorted(removed.items())), dict(sorted(dataset_methods.items())), in_compat_v2


def _keyword_table() -> dict[str, dict[str, str | None]]:  # pragma: no cover - needs TensorFlow
    """TF 2.x functions that no longer take a TF1 keyword (`tf.reduce_sum(keep_dims=)`): tf_upgrade_v2's
    function_keyword_renames, kept where the TF 2.21 function's signature lacks the keyword (TypeError) and
    has no **kwargs; the new name where the signature has it, else None (the keyword is gone)."""
    import inspect

    import tensorflow as tf
    from tensorflow.tools.compatibility import tf_upgrade_v2

    table: dict[str, dict[str, str | None]] = {}
    for old, renames in tf_upgrade_v2.TFAPIChangeSpec().function_keyword_renames.items():
        if not old.startswith("tf.") or old.startswith("tf.compat."):
            continue
        name = old[3:]
        function: Any = tf
        try:
            for part in name.split("."):
                function = getattr(function, part)
            parameters = inspect.signature(function).parameters
        except (AttributeError, TypeError, ValueError):
            continue
        if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters.values()):
            continue
        gone = {
            keyword: new if new in parameters else None for keyword, new in renames.items() if keyword not in parameters
        }
        if gone:
            table[name] = dict(sorted(gone.items()))
    return dict(sorted(table.items()))


def _replacement(tf: Any, name: str, new: str | None) -> str | None:  # pragma: no cover - needs TensorFlow
    """The TF2 spelling where TensorFlow names one that resolves, else the compat.v1 one."""
    if new is not None and resolves(tf, new.split("(")[0]) and new.split(".")[0] != "compat":
        return new
    if new is not None and new.startswith("compat.v1.") and resolves(tf, new):
        return new
    if resolves(tf, f"compat.v1.{name}"):
        return f"compat.v1.{name}"
    return None


def regenerate() -> Path:  # pragma: no cover - needs TensorFlow
    import tensorflow as tf

    removed, dataset_methods, in_compat_v2 = _table()
    lines = [
        f'"""Generated by `python -m tfpilot.lint.tf1_names --regenerate` from TensorFlow {tf.__version__}\'s',
        "tf_upgrade_v2 tables; do not edit. Names are relative to ``tf``; each maps to its TF2 spelling",
        '(or the tf.compat.v1 one, or None where neither resolves)."""',
        "",
        "REMOVED: dict[str, str | None] = {",
        *(f"    {name!r}: {new!r}," for name, new in removed.items()),
        "}",
        "",
        "# tf.data.Dataset methods TF2 removed, and the compat.v1 function that replaces each.",
        "REMOVED_DATASET_METHODS: dict[str, str] = {",
        *(f"    {name!r}: {new!r}," for name, new in dataset_methods.items()),
        "}",
        "",
        "# Listed above, yet still present under `import tensorflow.compat.v2 as tf`.",
        "IN_COMPAT_V2: frozenset[str] = frozenset({",
        *(f"    {name!r}," for name in sorted(in_compat_v2)),
        "})",
        "",
        "# TF 2.x functions that refuse a TF1 keyword (TypeError): keyword -> its TF2 name, or None where it is gone.",
        "REMOVED_KEYWORDS: dict[str, dict[str, str | None]] = {",
        *(f"    {name!r}: {keywords!r}," for name, keywords in _keyword_table().items()),
        "}",
        "",
    ]
    _DATA_FILE.write_text("\n".join(lines))
    # In the project's format (make check runs `ruff format --check`); ruff is a dev dependency.
    subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(_DATA_FILE)], check=False)
    return _DATA_FILE


if __name__ == "__main__":  # pragma: no cover - needs TensorFlow
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit("usage: python -m tfpilot.lint.tf1_names --regenerate")
    print(f"wrote {regenerate()}")
