"""The Rule base class: one rule per file, each with a CODE, a one-line MESSAGE and examples.

A rule subscribes to AST node types by defining ``visit_<NodeType>`` (and ``leave_<NodeType>``)
methods; the engine walks each file once and dispatches every node to the rules that asked for
its type, so adding a rule does not add a tree walk. ``on_reference`` receives every dotted name
(``tf.compat.v1.Session``) already resolved through the file's imports. ``finish`` runs after the
walk for rules that judge the whole module (for example "uses Lambda and saves to HDF5").

The VALID and INVALID examples are code: the test suite turns each one into a test (Fixit's
convention), and ``tfpilot lint --explain CODE`` prints them.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from tfpilot.findings import Severity

if TYPE_CHECKING:
    from tfpilot.lint.context import FileContext

__all__ = ["Rule", "Invalid", "Violation"]

# Rules about what TF 2.21's stack (TF 2, Keras 3, NumPy 2) removed: code that only TensorFlow 1 runs
# (an old-version branch, a notebook that installs TF 1 itself) is not judged by them as a defect.
_NEW_STACK = ("tf1 -> tf2", "keras 3", "numpy 2")


@dataclasses.dataclass(frozen=True)
class Invalid:
    """An INVALID example: ``code`` must raise the rule at ``line`` (1-based, when given).

    ``fixed`` is what ``--fix`` must turn ``code`` into (fixable rules only).
    """

    code: str
    line: int | None = None
    fixed: str | None = None


@dataclasses.dataclass(frozen=True)
class Violation:
    """One raw hit, before it becomes a Finding. Columns are character-based, 0-based."""

    code: str
    message: str
    line: int
    column: int
    end_line: int
    end_column: int
    node_type: str
    # Data the rule's ``fix`` needs; None means "not mechanically fixable here".
    fix_data: dict[str, Any] | None = None
    # Last line of the enclosing statement: a noqa comment there also counts.
    statement_end_line: int = 0
    # TFP000 only: which per-file problem this is ("syntax", "undecodable", "too-deep",
    # "internal"); it picks the finding's title and fix hint.
    problem: str = ""
    # A lower (or higher) severity than the rule's own for this one hit: a rule that is right in
    # letter but not claiming a defect in this code (a deliberate trace marker) reports a note.
    severity: Severity | None = None
    # Where the finding points when that is not the node's start: the method name of a call in a
    # chain written over several lines (`(ds\n .map(f))` starts at `ds`, the problem is `.map`).
    # 0: the node's own start. The fixer keeps using line/column, the node's span.
    anchor_line: int = 0
    anchor_column: int = 0

    @property
    def shown_line(self) -> int:
        return self.anchor_line or self.line

    @property
    def shown_column(self) -> int:
        return self.anchor_column if self.anchor_line else self.column


class Rule:
    """Base class. Subclasses set the class attributes and define visit_* handlers."""

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    message: ClassVar[str] = ""
    fix_hint: ClassVar[str] = ""
    severity: ClassVar[Severity] = Severity.WARNING
    category: ClassVar[str] = ""
    # The rule only runs on files whose text contains at least one of these strings; it keeps
    # the linter fast on files that cannot match (most rules key on an API name).
    tokens: ClassVar[tuple[str, ...]] = ()
    # A second, stricter gate checked after ``tokens``: a predicate on the file's text that must
    # hold too (TFP206 needs a from_logits flag *and* a softmax/sigmoid somewhere in the file).
    # Keep it a plain substring scan: a regex that starts with a lookbehind or ``\b`` gets no
    # literal-prefix search and costs as much as a rule.
    requires: ClassVar[Callable[[str], bool] | None] = None
    fixable: ClassVar[bool] = False
    # The rule claims what breaks on Keras 3 only: in a file that runs on Keras 2 (tf_keras, see
    # FileContext.keras2_reason) the same code works, so its findings there are notes (info).
    keras3_only: ClassVar[bool] = False
    # True for a break TensorFlow 2.16 made (tf.estimator removed): a note, not a defect, in a
    # project whose packaging pins an older TensorFlow.
    gone_in_tf216: ClassVar[bool] = False
    # When set, ``visit_Call`` only receives calls whose callee's last name is listed
    # (``ds.map(...)`` -> "map", ``print(...)`` -> "print"): the engine dispatches by name.
    calls: ClassVar[frozenset[str] | None] = None
    VALID: ClassVar[list[str]] = []
    INVALID: ClassVar[list[Invalid | str]] = []

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.violations: list[Violation] = []

    def _tf1_only(self, node: ast.AST) -> bool:
        line = getattr(node, "lineno", 0)
        return any(first <= line <= last for first, last in self.context.tf1_only_blocks)

    # Called by the engine after the walk; rules that judge the whole module override it.
    def finish(self) -> None:
        return None

    def report(
        self,
        node: ast.AST,
        message: str | None = None,
        *,
        fix_data: dict[str, Any] | None = None,
        severity: Severity | None = None,
    ) -> None:
        if self.category in _NEW_STACK and self._tf1_only(node):
            return  # an API TF 2 / Keras 3 removed, in a branch TF 2 never runs (lint.tf1_branches)
        if self.keras3_only and severity is None:
            reason = self.context.keras2_reason
            if reason is not None:
                severity = Severity.INFO
                message = f"{message or self.message} - a Keras 3 break only, and this file runs on Keras 2 ({reason})"
        if severity is None and (self.category in _NEW_STACK or self.gone_in_tf216):
            installed = self.context.installed_tf1_at(getattr(node, "lineno", 0))
            if installed is not None:
                severity = Severity.INFO
                message = (
                    f"{message or self.message} - right for TF 2.21, but this code runs on the TensorFlow 1 the file "
                    f"installs itself (line {installed[0]}: `{installed[1][:80]}`)"
                )
        if self.gone_in_tf216 and severity is None:
            reason = self.context.project.old_tf
            if reason is not None:
                severity = Severity.INFO
                message = f"{message or self.message} - gone in TF 2.16, and this project runs an older TF ({reason})"
        line, column, end_line, end_column = self.context.char_span(node)
        anchor_line = anchor_column = 0
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method_line = node.func.end_lineno or line
            if method_line != line and node.func.end_col_offset is not None:
                anchor_line = method_line
                anchor_column = self.context.char_column(method_line, node.func.end_col_offset - len(node.func.attr))
        statement_end = end_line
        for ancestor in reversed(self.context.stack):
            if isinstance(ancestor, ast.stmt) and ancestor.lineno <= line <= (ancestor.end_lineno or line):
                statement_end = ancestor.end_lineno or end_line
                break
        self.violations.append(
            Violation(
                code=self.code,
                message=message or self.message,
                line=line,
                column=column,
                end_line=end_line,
                end_column=end_column,
                node_type=type(node).__name__,
                fix_data=fix_data if self.fixable else None,
                statement_end_line=statement_end,
                severity=severity if severity is not None and severity is not self.severity else None,
                anchor_line=anchor_line,
                anchor_column=anchor_column,
            )
        )

    @classmethod
    def fix(cls, node: Any, data: dict[str, Any]) -> Any:
        """Return the libcst replacement for ``node`` (fixable rules override this)."""
        return None

    @classmethod
    def summary(cls) -> str:
        """First paragraph of the docstring: why the rule matters, in one or two sentences."""
        doc = (cls.__doc__ or "").strip()
        return " ".join(doc.split("\n\n", 1)[0].split())

    @classmethod
    def invalid_examples(cls) -> list[Invalid]:
        return [item if isinstance(item, Invalid) else Invalid(item) for item in cls.INVALID]
