"""Feature names as users write them vs. the names a SavedModel signature can hold.

A signature input becomes a graph placeholder, whose name must match TensorFlow's op-name
pattern `[A-Za-z0-9.][A-Za-z0-9_.\\-]*`. scikit-learn's own CSV headers (`sepal length (cm)`)
do not, so export failed with an error about argument names from TensorFlow's internals.
Features keep their names everywhere else (config, reports, tf.Example keys of classify);
only the signature key is this sanitised form.
"""

from __future__ import annotations

import re

from tfpilot.errors import DataError

__all__ = ["signature_key", "signature_keys"]

_INVALID = re.compile(r"[^A-Za-z0-9_.\-]+")


def signature_key(name: str) -> str:
    """`sepal length (cm)` -> `sepal_length_cm`; names that are already valid are unchanged."""
    key = _INVALID.sub("_", name).strip("_") or "feature"
    if not re.match(r"[A-Za-z0-9.]", key):
        key = f"f{key}"
    return key


def signature_keys(names: list[str]) -> dict[str, str]:
    """name -> signature key for every feature; two names that sanitise alike are an error naming both."""
    keys: dict[str, str] = {}
    taken: dict[str, str] = {}
    for name in names:
        key = signature_key(name)
        if key in taken:
            raise DataError(
                f"columns `{taken[key]}` and `{name}` both become the serving input name `{key}` (signature names "
                "allow only letters, digits, `_`, `.`, `-`); rename one of them in the file",
                exit_code=2,
            )
        taken[key] = name
        keys[name] = key
    return keys
