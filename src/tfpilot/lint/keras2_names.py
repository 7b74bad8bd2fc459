"""Keras 2 public names that Keras 3 removed (TFP504), generated from Keras 2's own API listing.

The table lives in ``keras2_removed_data.py``: every public name of tf_keras 2.15 (Keras 2's last
release line, the API of ``tf.keras`` in TF <= 2.15) listed in its generated ``api/_v2/keras``
modules, kept where it does not resolve on the installed Keras 3 (``keras.<name>``) or in TF 2.21's
``tf.keras`` (which keeps some Keras 2 aliases, such as ``losses.mse``), each namespace separately.
A name gets as its replacement another name Keras 2 gave the same function in that module, where
the namespace has one (``losses.mse`` -> ``mean_squared_error`` in keras; ``losses.mean_squared_error``
-> ``mse`` in TF 2.21's tf.keras, which kept only the short aliases). Lint never imports Keras; regenerate after a Keras
upgrade with the tf_keras wheel (``pip download tf_keras==2.15.1 --no-deps``)::

    python -m tfpilot.lint.keras2_names --regenerate path/to/tf_keras-2.15.1-py3-none-any.whl
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from tfpilot.lint.keras2_removed_data import GONE_FROM_KERAS, GONE_FROM_TF_KERAS, GONE_KERAS2_MODULES
from tfpilot.lint.tf1_names import resolves

__all__ = [
    "GONE_FROM_KERAS",
    "GONE_FROM_TF_KERAS",
    "GONE_KERAS2_MODULES",
    "keras2_module_removal",
    "keras2_removal",
    "regenerate",
]

_DATA_FILE = Path(__file__).with_name("keras2_removed_data.py")
_API_ROOT = "tf_keras/api/_v2/keras/"
# Namespaces with their own, finer tables (lint/apis.py): backend (KERAS3_BACKEND) and __internal__.
_OWNED_ELSEWHERE = ("backend", "__internal__")


@functools.lru_cache(maxsize=4096)
def keras2_removal(namespace: str, path: str) -> tuple[str, str | None] | None:
    """(the removed entry ``path`` is or is inside, its Keras 3 replacement or None) in ``namespace``
    ("keras" or "tensorflow.keras"), or None where ``path`` is no removed Keras 2 name."""
    table = GONE_FROM_KERAS if namespace == "keras" else GONE_FROM_TF_KERAS
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in table:
            return candidate, table[candidate]
    return None


def keras2_module_removal(path: str) -> str | None:
    """The removed Keras 2 module ``path`` is or is inside (``utils.data_utils`` for
    ``utils.data_utils.get_file``), or None. Such modules fail to import under `keras` and `tf.keras` alike."""
    parts = path.split(".")
    for end in range(1, len(parts) + 1):
        candidate = ".".join(parts[:end])
        if candidate in _GONE_MODULES:
            return candidate
    return None


_GONE_MODULES = frozenset(GONE_KERAS2_MODULES)
# Modules of the multi-backend Keras 2.0-2.3 (`keras/engine/topology.py`, `keras/backend/tensorflow_backend.py`)
# that tf_keras 2.15 no longer has but old code imports; the generator keeps those Keras 3 lacks too.
_MULTI_BACKEND_MODULES = (
    "engine.topology",
    "engine.training",
    "engine.saving",
    "backend.tensorflow_backend",
    "objectives",
    "layers.recurrent",
    "layers.convolutional_recurrent",
    "layers.advanced_activations",
    "layers.embeddings",
    "layers.local",
    "layers.noise",
    "layers.wrappers",
    "layers.cudnn_recurrent",
    "callbacks.callbacks",
    "utils.multi_gpu_utils",
    "utils.training_utils",
    "utils.io_utils",
    "utils.conv_utils",
)
# Parts of the wheel that were never importable Keras API: test helpers, benchmarks, integration tests.
_NOT_API = ("tests", "testing_infra", "benchmarks", "integration_test", "protobuf", "distribute")


def _keras2_modules(wheel: Path) -> list[str]:
    """Every module path of Keras 2 (``utils.data_utils``), from the wheel's source tree (`tf_keras/src/...`,
    which was standalone Keras 2's `keras/...`), plus the multi-backend ones old code still imports."""
    found = set(_MULTI_BACKEND_MODULES)
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if not (member.startswith("tf_keras/src/") and member.endswith(".py")) or member.endswith("_test.py"):
                continue
            parts = member[len("tf_keras/src/") : -len(".py")].split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts and parts[0] not in _NOT_API and not any(part.startswith("_") for part in parts):
                found.add(".".join(parts))
    return sorted(found)


def _gone_modules(wheel: Path) -> list[str]:  # pragma: no cover - needs Keras
    import importlib

    def imports(name: str) -> bool:
        try:
            importlib.import_module(name)
        except ImportError:
            return False
        return True

    gone: list[str] = []
    for module in _keras2_modules(wheel):
        if any(module.startswith(parent + ".") for parent in gone):
            continue  # inside a removed package: the package's entry says it
        if not imports(f"keras.{module}") and not imports(f"tensorflow.keras.{module}"):
            gone.append(module)
    return gone


def _keras2_names(wheel: Path) -> dict[str, str]:
    """Every public name of the wheel's Keras 2 API -> the name it was defined as (itself unless an alias)."""
    names: dict[str, str] = {}
    pattern = re.compile(r"^from (\S+) import (\w+)(?: as (\w+))?$", re.MULTILINE)
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if not (member.startswith(_API_ROOT) and member.endswith("/__init__.py")):
                continue
            module = member[len(_API_ROOT) : -len("/__init__.py")]
            parts = [part for part in module.split("/") if part]
            if parts and parts[0] in _OWNED_ELSEWHERE:
                continue
            for match in pattern.finditer(archive.read(member).decode()):
                source, defined, alias = match.groups()
                public = alias or defined
                if public.startswith("_"):
                    continue
                # a submodule import (`from tf_keras.api._v2.keras.models import experimental`) is itself
                names[".".join([*parts, public])] = defined if not source.startswith("tf_keras.api.") else public
    return names


def _table(wheel: Path) -> tuple[dict[str, str | None], dict[str, str | None]]:  # pragma: no cover - needs Keras
    import keras
    import tensorflow as tf

    names = _keras2_names(wheel)
    tables = []
    # the two namespaces keep different Keras 2 names: compared on purpose
    tf_keras = tf.keras  # tfpilot: noqa[TFP502]
    for root in (keras, tf_keras):
        gone = {name for name in names if not resolves(root, name)}
        table: dict[str, str | None] = {}
        for name in sorted(gone):
            parts = name.split(".")
            if any(".".join(parts[:end]) in gone for end in range(1, len(parts))):
                continue  # inside a removed module: the module's entry says it
            # the same Keras 2 function under another of its names in that module (`mse` for
            # `mean_squared_error` in tf.keras, `mean_squared_error` for `mse` in keras)
            module = ".".join(parts[:-1])
            candidates = [".".join([*parts[:-1], names[name]])]
            candidates += sorted(
                (
                    other
                    for other, defined in names.items()
                    if defined == names[name] and other.rsplit(".", 1)[0] == module and "." in other
                ),
                key=lambda other: (other.rsplit(".", 1)[-1].isupper(), other),  # `mse` before `MSE`
            )
            table[name] = next(
                (candidate for candidate in candidates if candidate != name and resolves(root, candidate)), None
            )
        tables.append(table)
    return tables[0], tables[1]


def _render(wheel: Path) -> str:  # pragma: no cover - needs Keras
    import keras

    gone, gone_tf = _table(wheel)

    def block(name: str, table: dict[str, str | None]) -> list[str]:
        return [f"{name}: dict[str, str | None] = {{", *(f"    {k!r}: {v!r}," for k, v in table.items()), "}"]

    modules = _gone_modules(wheel)
    lines = [
        f'"""Generated by `python -m tfpilot.lint.keras2_names --regenerate` from {wheel.name}\'s public API',
        f"against Keras {keras.__version__}; do not edit. Names are relative to the keras namespace; each maps to its",
        "Keras 3 replacement (the name a Keras 2 alias stood for) or None. GONE_KERAS2_MODULES: Keras 2's modules",
        '(its source tree, and multi-backend Keras\' old ones) that neither `keras.` nor `tensorflow.keras.` imports."""',
        "",
        *block("GONE_FROM_KERAS", gone),
        "",
        *block("GONE_FROM_TF_KERAS", gone_tf),
        "",
        "GONE_KERAS2_MODULES: tuple[str, ...] = (",
        *(f"    {module!r}," for module in modules),
        ")",
        "",
    ]
    return "\n".join(lines)


def regenerate(wheel: Path) -> None:  # pragma: no cover - needs Keras
    _DATA_FILE.write_text(_render(wheel))
    subprocess.run([sys.executable, "-m", "ruff", "format", str(_DATA_FILE)], check=False)


if __name__ == "__main__":  # pragma: no cover
    if len(sys.argv) == 3 and sys.argv[1] == "--regenerate":
        regenerate(Path(sys.argv[2]))
    else:
        raise SystemExit("usage: python -m tfpilot.lint.keras2_names --regenerate TF_KERAS_WHEEL")
