"""TFP511: TensorFlow's or Keras' version compared as a string (`tf.__version__ > '2.4.0'`)."""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from typing import Any

from tfpilot.lint.rule import Invalid, Rule

_ORDERING: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_VERSIONS = frozenset({"tensorflow.__version__", "tensorflow.version.VERSION", "keras.__version__"})
_NUMBERS = re.compile(r"\d+")
# What the comparison is judged on: the versions tfpilot supports, whose minor versions have two
# digits (every TensorFlow since 2.10, 2022; every Keras since 3.10).
_MODERN = {"tensorflow": "2.21.0", "keras": "3.15.0"}


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in _NUMBERS.findall(text)[:3])


class VersionStringComparison(Rule):
    """A version compared as a string orders `'2.21.0'` before `'2.4.0'`.

    Strings compare character by character, so `tf.__version__ > '2.4.0'` is False on every
    TensorFlow from 2.10 on ('1' < '4'), and the code takes the branch meant for old versions
    (YOLOv3's `if tf.__version__ > '2.4.0': model(x) else: model.predict(x)` runs predict per
    frame on TF 2.21). Reported where the string result differs from the version order for
    TF 2.21; `tf.__version__ >= '2.0'` happens to agree and is left alone. The premise is run
    on the installed TensorFlow by `test_lint_tf_premises.py`.
    """

    code = "TFP511"
    name = "version-string-comparison"
    message = "the version is compared as a string: '2.21.0' < '2.4.0' as strings"
    fix_hint = (
        "Compare parsed versions: packaging.version.parse(tf.__version__) > packaging.version.parse('2.4.0'), "
        "or tuple(int(p) for p in tf.__version__.split('.')[:2]) > (2, 4)"
    )
    category = "keras 3"
    tokens = ("__version__", "VERSION")
    VALID = [
        """
import tensorflow as tf
from packaging import version

if version.parse(tf.__version__) > version.parse("2.4.0"):
    pass
if tf.__version__ >= "2.0":
    pass
""",
    ]
    INVALID = [
        Invalid(
            """
import tensorflow as tf

if tf.__version__ > '2.4.0':
    pass
""",
            line=4,
        ),
    ]

    def visit_Compare(self, node: ast.Compare) -> None:
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            compare = _ORDERING.get(type(op))
            if compare is not None:
                self._check(node, left, right, compare)
            left = right

    def _check(self, node: ast.Compare, left: ast.expr, right: ast.expr, compare: Any) -> None:
        literal: str | None = None
        library = self._library(left)
        version_on_left = library is not None
        if library is not None and isinstance(right, ast.Constant) and isinstance(right.value, str):
            literal = right.value
        elif (
            (library := self._library(right)) is not None
            and isinstance(left, ast.Constant)
            and isinstance(left.value, str)
        ):
            literal = left.value
        if literal is None or library is None or not _numbers(literal):
            return
        modern = _MODERN[library]
        first, second = (modern, literal) if version_on_left else (literal, modern)
        as_strings = compare(first, second)
        as_versions = compare(_numbers(first), _numbers(second))
        if as_strings == as_versions:
            return
        name = "TF" if library == "tensorflow" else "Keras"
        self.report(
            node,
            f"the version is compared as a string: on {name} {modern} this reads {as_strings}, while the version "
            f"order says {as_versions} ('{modern}' {'<' if modern < literal else '>'} '{literal}' as strings)",
        )

    def _library(self, node: ast.expr) -> str | None:
        """ "tensorflow" or "keras" where `node` is that library's version string or a slice of it."""
        if isinstance(node, ast.Subscript):
            node = node.value  # tf.__version__[:3]
        if not isinstance(node, ast.Attribute):
            return None
        qualname = self.context.qualname(node)
        return qualname.split(".")[0] if qualname in _VERSIONS else None
