"""Feature names as users write them vs. the names a SavedModel signature can hold.

A signature input becomes a graph placeholder, whose name must match TensorFlow's op-name
pattern `[A-Za-z0-9.][A-Za-z0-9_.\\-]*`. scikit-learn's own CSV headers (`sepal length (cm)`)
do not, so export failed with an error about argument names from TensorFlow's internals.
Features keep their names everywhere else (config, reports, tf.Example keys of classify);
only the signature key is this sanitised form. A Python keyword (`class`) cannot be a signature
input either (TensorFlow makes each one a parameter of the serving function): it gets a `_`.
"""

from __future__ import annotations

import keyword
import re

from tfpilot.errors import DataError

__all__ = ["keyword_aliases", "signature_key", "signature_keys"]

_INVALID = re.compile(r"[^A-Za-z0-9_.\-]+")


def signature_key(name: str) -> str:
    """`sepal length (cm)` -> `sepal_length_cm`; names that are already valid are unchanged."""
    key = _INVALID.sub("_", name).strip("_") or "feature"
    if not re.match(r"[A-Za-z0-9.]", key):
        key = f"f{key}"
    if keyword.iskeyword(key):
        # TensorFlow makes each signature input a Python parameter of the serving function, and
        # `class` (the Titanic CSV's column) or `from` cannot be one: `class_`, which `tfpilot
        # serve` also answers under `class` (keyword_aliases).
        key = f"{key}_"
    return key


def keyword_aliases(keys: list[str]) -> dict[str, str]:
    """`class` -> `class_` for each signature key that is a Python keyword plus `_` (what
    signature_key made of it, as TensorFlow allows no keyword there), unless `class` is a key too."""
    return {key[:-1]: key for key in keys if key.endswith("_") and keyword.iskeyword(key[:-1]) and key[:-1] not in keys}


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
