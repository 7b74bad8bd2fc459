"""``--fix``: apply the mechanical rules' rewrites with libcst, keeping the file's formatting.

Linting finds violations with positions (stdlib ast); the fixer parses the same source with
libcst, finds the node at each fixable violation's exact span and asks the rule for its
replacement. The result must still parse, or the file is left untouched. Files are rewritten
atomically. Fixes repeat (at most a few passes) until nothing fixable is left, since one fix can
expose another (a renamed optimizer class, then its ``lr=`` keyword).
"""

from __future__ import annotations

import ast
import dataclasses
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tfpilot.atomic import atomic_write_text
from tfpilot.lint.config import LintConfig
from tfpilot.lint.engine import UndecodableSource, check_source, decode_source, select_rules
from tfpilot.lint.rule import Rule, Violation
from tfpilot.lint.rules import rule_by_code

__all__ = ["AppliedFix", "FixResult", "fix_source", "fix_files"]

_MAX_PASSES = 4


@dataclasses.dataclass(frozen=True)
class AppliedFix:
    code: str
    line: int
    column: int
    description: str


@dataclasses.dataclass(frozen=True)
class FixResult:
    path: str
    source: str
    fixed_source: str
    applied: tuple[AppliedFix, ...]

    @property
    def changed(self) -> bool:
        return self.fixed_source != self.source


def _cst_types() -> dict[str, Any]:
    import libcst as cst

    return {
        "Call": cst.Call,
        "Attribute": cst.Attribute,
        "Name": cst.Name,
        "keyword": cst.Arg,
        "ImportFrom": cst.ImportFrom,
        "Import": cst.Import,
        "Expr": cst.Expr,
    }


def _apply_once(source: str, fixable: Sequence[Violation]) -> tuple[str, list[AppliedFix]]:
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    types = _cst_types()
    wanted: dict[tuple[Any, int, int, int, int], Violation] = {}
    for violation in fixable:
        node_type = types.get(violation.node_type)
        if node_type is not None:
            key = (node_type, violation.line, violation.column, violation.end_line, violation.end_column)
            wanted.setdefault(key, violation)
    if not wanted:
        return source, []
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
    except cst.ParserSyntaxError:
        return source, []
    positions = wrapper.resolve(PositionProvider)
    applied: list[AppliedFix] = []

    class _Transformer(cst.CSTTransformer):
        def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> Any:
            position = positions.get(original)
            if position is None:
                return updated
            key = (
                type(original),
                position.start.line,
                position.start.column,
                position.end.line,
                position.end.column,
            )
            violation = wanted.get(key)
            if violation is None or violation.fix_data is None:
                return updated
            rule = rule_by_code(violation.code)
            replacement = rule.fix(updated, violation.fix_data) if rule is not None else None
            if replacement is None:
                return updated
            applied.append(
                AppliedFix(
                    violation.code,
                    violation.shown_line,
                    violation.column + 1,
                    str(violation.fix_data.get("description") or (rule.fix_hint if rule else "")),
                )
            )
            return replacement

    fixed = wrapper.module.visit(_Transformer()).code
    try:
        ast.parse(fixed)
    except SyntaxError:
        return source, []
    return fixed, applied


def fix_source(
    source: str,
    *,
    path: str = "<string>",
    config: LintConfig | None = None,
    rules: Sequence[type[Rule]] | None = None,
) -> FixResult:
    """Apply every mechanical fix the selected rules offer; returns the new text (writes nothing)."""
    config = config or LintConfig()
    rules = list(rules) if rules is not None else select_rules(config)
    ignored = config.ignored_in(Path(path))
    current = source
    applied: list[AppliedFix] = []
    for _ in range(_MAX_PASSES):
        result = check_source(current, path, rules, ignored_prefixes=ignored)
        fixable = [v for v in result.violations if v.fix_data is not None]
        if not fixable:
            break
        try:
            updated, done = _apply_once(current, fixable)
        except RecursionError:  # libcst's tree is recursive too; leave such deep code unfixed
            break
        if not done or updated == current:
            break
        current = updated
        applied.extend(done)
    return FixResult(path, source, current, tuple(applied))


def fix_files(paths: Iterable[str | Path], *, config: LintConfig | None = None) -> list[FixResult]:
    """Fix files in place (atomically); returns one result per file that had fixable findings.

    Files that cannot be read or decoded are left alone: linting reports them afterwards.
    """
    config = config or LintConfig()
    rules = select_rules(config)
    results: list[FixResult] = []
    for raw in paths:
        path = Path(raw)
        if path.suffix == ".ipynb":
            continue  # a notebook's cells are JSON strings: its findings are reported, never rewritten
        try:
            source = decode_source(path.read_bytes())
        except (OSError, UndecodableSource):
            continue
        result = fix_source(source, path=str(path), config=config, rules=rules)
        if result.changed:
            mode = stat.S_IMODE(path.stat().st_mode)
            atomic_write_text(path, result.fixed_source)
            os.chmod(path, mode)  # the temporary file was created 0600; keep the user's mode
        if result.applied:
            results.append(result)
    return results
