"""What the TF1 source needs before tf_upgrade_v2 reads it.

* A UTF-8 byte order mark goes (Windows editors write one; Python runs such a file, tf_upgrade_v2
  fails to parse U+FEFF).
* TF 0.x's positional cross-entropy calls get their keywords: ``softmax_cross_entropy_with_logits(y,
  y_)`` meant (logits, labels) before TF 1.0, and TF 1.x refused positional arguments there (a
  ``_sentinel`` parameter), so a positional call is TF 0.x code. tf_upgrade_v2 reads it with the 1.x
  order (labels first) and swaps logits and labels without a word: the loss then has no gradient
  for the model (`No gradients provided`), or the wrong one.
* Python 2 source (TF1 books and tutorials were written for it: ``print x``, ``except E, e:``) is
  converted with 2to3's default fixers when, and only when, the file does not parse as Python 3
  and the converted one does: neither tf_upgrade_v2 nor Python 3 reads it otherwise.
"""

from __future__ import annotations

import ast
import codecs
import warnings

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

__all__ = ["prepare"]

# function -> the keywords its first two positional arguments had before TF 1.0
_PRE_1_0_ORDER = {
    "softmax_cross_entropy_with_logits": ("logits", "labels"),
    "sparse_softmax_cross_entropy_with_logits": ("logits", "labels"),
    "sigmoid_cross_entropy_with_logits": ("logits", "labels"),  # TF 0.x called the second `targets`
}


class _Keywords(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.changed: list[tuple[int, str]] = []

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        order = _PRE_1_0_ORDER.get(name)
        if order is None:
            return updated
        positional = [arg for arg in updated.args if arg.keyword is None and not arg.star]
        if len(positional) < 2 or updated.args[0].keyword is not None:
            return updated
        args = list(updated.args)
        for index, keyword in enumerate(order):
            args[index] = args[index].with_changes(
                keyword=cst.Name(keyword), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
            )
        line = self.get_metadata(PositionProvider, original).start.line
        self.changed.append((line, name))
        return updated.with_changes(args=args)


def _python2_converted(data: bytes) -> tuple[bytes, int] | None:
    """(the source converted by 2to3's default fixers, the first line Python 3 refused) for Python 2
    source; None when it parses already, or when the conversion does not parse either."""
    try:
        ast.parse(data)
        return None
    except SyntaxError as error:
        first = error.lineno or 1
    except ValueError:
        return None  # a NUL byte: not Python 2 either
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lib2to3 is deprecated (gone in Python 3.13)
        try:
            from lib2to3.refactor import RefactoringTool, get_fixers_from_package
        except ImportError:
            return None
        try:
            text = data.decode("utf-8")
            tool = RefactoringTool(get_fixers_from_package("lib2to3.fixes"))
            converted = str(tool.refactor_string(text if text.endswith("\n") else text + "\n", "<source>"))
        except Exception:  # noqa: BLE001 - lib2to3 raises its own ParseError and others: not Python 2
            return None
    try:
        ast.parse(converted)
    except SyntaxError:
        return None
    return converted.encode("utf-8"), first


def prepare(data: bytes) -> tuple[bytes, list[tuple[int, str]]]:
    """The bytes tf_upgrade_v2 should read, and (line, what) for each change made for it."""
    changes: list[tuple[int, str]] = []
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    python2 = _python2_converted(data)
    if python2 is not None:
        data, line = python2
        changes.append(
            (
                line,
                "Python 2 source (Python 3 refuses this line): converted with 2to3's default fixers "
                "(print statements, `except E, e`, integer division is NOT changed: check `/` on ints)",
            )
        )
    if not any(name.encode() in data for name in _PRE_1_0_ORDER):
        return data, changes
    try:
        module = cst.parse_module(data)
    except cst.ParserSyntaxError:
        return data, changes  # tf_upgrade_v2 says what does not parse
    keywords = _Keywords()
    rewritten = MetadataWrapper(module).visit(keywords)
    for line, name in keywords.changed:
        changes.append(
            (
                line,
                f"positional `{name}(a, b)` is TF 0.x's (logits, labels) order (TF 1.x refused positional "
                "arguments there) -> `logits=a, labels=b`, before tf_upgrade_v2 (which reads labels first)",
            )
        )
    return rewritten.bytes, changes
