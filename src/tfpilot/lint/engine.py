"""The lint engine: parse each file once, walk it once, dispatch nodes to the selected rules.

``lint_source`` lints one string; ``lint_paths`` lints files and directories, in parallel
worker processes when there is enough code to pay for starting them. Engines return data
(Findings and a LintReport); only ``tfpilot.cli`` prints.
"""

from __future__ import annotations

import ast
import dataclasses
import gc
import io
import os
import sys
import threading
import time
import tokenize
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from tfpilot.errors import LintError
from tfpilot.findings import Finding, Severity
from tfpilot.lint.config import LintConfig
from tfpilot.lint.context import FileContext
from tfpilot.lint.discovery import discover_files
from tfpilot.lint.earned import earned_severity
from tfpilot.lint.noqa import file_suppresses, line_suppresses, parse_file_suppressions
from tfpilot.lint.rule import Rule, Violation
from tfpilot.lint.rules import RULES

__all__ = [
    "LintReport",
    "FileResult",
    "SkippedPath",
    "SYNTAX_ERROR_CODE",
    "lint_source",
    "lint_paths",
    "check_source",
    "select_rules",
    "violation_to_finding",
    "default_jobs",
    "decode_source",
    "read_source",
]

SYNTAX_ERROR_CODE = "TFP000"
# Below this much source, starting worker processes costs more than it saves.
_PARALLEL_MIN_BYTES = 400_000
# The walk recurses once per nesting level. Python compiles expressions about 3,000 levels deep
# (a long `a + b + ...` is one level per term), more than the default recursion limit of 1,000
# lets the linter follow; a file that hits the limit is retried once under this one. Python 3.11
# frames of Python-to-Python calls live off the C stack, so this much depth is safe.
_DEEP_RECURSION_LIMIT = 20_000

# TFP000 problems: (finding title, fix hint).
_PROBLEMS = {
    "syntax": ("syntax-error", "fix the syntax error; no other rule can check this file until it parses"),
    "undecodable": (
        "undecodable-file",
        "save the file as UTF-8, or declare its encoding on line 1 or 2 (`# -*- coding: latin-1 -*-`)",
    ),
    "too-deep": (
        "too-deeply-nested",
        "split the expression into several statements; Python itself stops compiling at about 3,000 levels",
    ),
    "internal": ("internal-error", "report the crash; suppress with --ignore for now"),
}


@dataclasses.dataclass(frozen=True)
class FileResult:
    path: str
    lines: int
    violations: tuple[Violation, ...]
    # A TFP000 problem (syntax error, undecodable bytes, nesting too deep): no rule ran.
    syntax_error: Violation | None = None
    # Why the file could not be read at all (permissions, a broken symlink); None when it was.
    skipped: str | None = None


@dataclasses.dataclass(frozen=True)
class SkippedPath:
    """A file or directory the run could not read: a note in the report, not a finding."""

    path: str
    reason: str


@dataclasses.dataclass(frozen=True)
class LintReport:
    findings: list[Finding]
    files: int
    lines: int
    seconds: float
    skipped: tuple[SkippedPath, ...] = ()

    @property
    def lines_per_second(self) -> float:
        return self.lines / self.seconds if self.seconds > 0 else float("inf")

    @property
    def fixable(self) -> int:
        return sum(1 for finding in self.findings if finding.evidence.get("fixable"))

    def failing(self, threshold: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity.rank >= threshold.rank]


def select_rules(config: LintConfig | None = None) -> list[type[Rule]]:
    config = config or LintConfig()
    return [rule for rule in RULES if config.is_enabled(rule.code)]


_RULE_BY_CODE = {rule.code: rule for rule in RULES}
_HANDLER_CACHE: dict[type[Rule], tuple[list[tuple[type, str]], list[tuple[type, str]], bool]] = {}


def _handlers(rule: type[Rule]) -> tuple[list[tuple[type, str]], list[tuple[type, str]], bool]:
    cached = _HANDLER_CACHE.get(rule)
    if cached is None:
        enter = [(getattr(ast, n[6:]), n) for n in dir(rule) if n.startswith("visit_")]
        leave = [(getattr(ast, n[6:]), n) for n in dir(rule) if n.startswith("leave_")]
        cached = (enter, leave, hasattr(rule, "on_reference"))
        _HANDLER_CACHE[rule] = cached
    return cached


def check_source(
    source: str,
    path: str,
    rules: Sequence[type[Rule]],
    *,
    ignored_prefixes: tuple[str, ...] = (),
) -> FileResult:
    """Run ``rules`` over ``source``; suppressions applied, results sorted by position."""
    # Parsing allocates hundreds of thousands of acyclic AST nodes; pausing the cyclic garbage
    # collector for the file makes linting about a third faster. The previous state is restored.
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            return _check_source(source, path, rules, ignored_prefixes=ignored_prefixes)
        except RecursionError:
            return _check_deep_source(source, path, rules, ignored_prefixes=ignored_prefixes)
    finally:
        if collecting:
            gc.enable()


def _check_deep_source(
    source: str,
    path: str,
    rules: Sequence[type[Rule]],
    *,
    ignored_prefixes: tuple[str, ...],
) -> FileResult:
    """Retry a file that nests deeper than the default recursion limit; TFP000 if even that fails."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _DEEP_RECURSION_LIMIT))
    try:
        return _check_source(source, path, rules, ignored_prefixes=ignored_prefixes)
    except RecursionError:
        message = f"cannot lint: code nested more than {_DEEP_RECURSION_LIMIT:,} levels deep"
        violation = Violation(SYNTAX_ERROR_CODE, message, 1, 0, 1, 0, "Module", problem="too-deep")
        return FileResult(path, _count_lines(source), (), violation)
    finally:
        sys.setrecursionlimit(limit)


def _count_lines(source: str) -> int:
    return source.count("\n") + (0 if source.endswith("\n") or not source else 1)


def _check_source(
    source: str,
    path: str,
    rules: Sequence[type[Rule]],
    *,
    ignored_prefixes: tuple[str, ...],
) -> FileResult:
    lines = _count_lines(source)
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError) as error:  # ValueError: a NUL byte in the source
        line = getattr(error, "lineno", None) or 1
        column = max((getattr(error, "offset", None) or 1) - 1, 0)
        detail = getattr(error, "msg", None) or str(error)
        violation = Violation(
            SYNTAX_ERROR_CODE, f"cannot parse: {detail}", line, column, line, column, "Module", problem="syntax"
        )
        return FileResult(path, lines, (), violation)
    context = FileContext(path=path, source=source, tree=tree)
    active: list[Rule] = []
    enter: dict[type, list[Callable[[Any], None]]] = {}
    leave: dict[type, list[Callable[[Any], None]]] = {}
    references: list[Callable[[ast.AST, str], None]] = []
    named_calls: dict[str, list[Callable[[Any], None]]] = {}
    present: dict[str, bool] = {}
    for rule_class in rules:
        if ignored_prefixes and rule_class.code.startswith(ignored_prefixes):
            continue
        if rule_class.tokens:
            found = False
            for token in rule_class.tokens:
                hit = present.get(token)
                if hit is None:
                    hit = present[token] = token in source or token in context.inherited_imports
                if hit:
                    found = True
                    break
            if not found:
                continue
        if rule_class.requires is not None and not rule_class.requires(source):
            continue
        rule = rule_class(context)
        active.append(rule)
        enter_names, leave_names, wants_references = _handlers(rule_class)
        for node_type, name in enter_names:
            if node_type is ast.Call and rule_class.calls is not None:
                for callee in rule_class.calls:
                    named_calls.setdefault(callee, []).append(rule.visit_Call)  # type: ignore[attr-defined]
                continue
            enter.setdefault(node_type, []).append(getattr(rule, name))
        for node_type, name in leave_names:
            leave.setdefault(node_type, []).append(getattr(rule, name))
        if wants_references:
            references.append(rule.on_reference)  # type: ignore[attr-defined]
    if not active:
        return FileResult(path, lines, ())
    if named_calls:
        enter.setdefault(ast.Call, []).append(_call_dispatcher(named_calls))
    try:
        context.walk(enter=enter, leave=leave, references=references)
        for rule in active:
            rule.finish()
    except RecursionError:
        raise  # deep code, not a rule bug: check_source retries the whole file with more depth
    except Exception:  # a rule bug must not stop the run: find the culprit, lint with the rest
        if len(active) == 1:
            raise
        return _isolate_crash(source, path, [type(rule) for rule in active], lines)
    file_suppressions = parse_file_suppressions(source)
    seen: set[tuple[str, int, int]] = set()
    kept: list[Violation] = []
    for rule in active:
        for violation in rule.violations:
            key = (violation.code, violation.line, violation.column)
            if key in seen:
                continue
            seen.add(key)
            if file_suppressions and file_suppresses(file_suppressions, violation.code):
                continue
            if line_suppresses(context.line_text(violation.line), violation.code):
                continue
            if any(
                line != violation.line and line_suppresses(context.line_text(line), violation.code)
                for line in {violation.end_line, violation.statement_end_line, violation.shown_line}
            ):
                continue
            kept.append(violation)
    kept.sort(key=lambda v: (v.shown_line, v.shown_column, v.code))
    context.release()  # break the context <-> rule handler cycle so reference counting frees it
    return FileResult(path, lines, tuple(kept))


def _isolate_crash(source: str, path: str, rules: list[type[Rule]], lines: int) -> FileResult:
    """Re-run each rule alone; a crashing rule becomes one TFP000 finding instead of an abort."""
    violations: list[Violation] = []
    for rule in rules:
        try:
            violations.extend(_check_source(source, path, [rule], ignored_prefixes=()).violations)
        except RecursionError:
            raise
        except Exception as error:
            violations.append(
                Violation(
                    SYNTAX_ERROR_CODE,
                    f"internal error: rule {rule.code} crashed on this file ({type(error).__name__}: {error}); "
                    "the other rules ran - please report this",
                    1,
                    0,
                    1,
                    0,
                    "Module",
                    problem="internal",
                )
            )
    violations.sort(key=lambda v: (v.line, v.column, v.code))
    return FileResult(path, lines, tuple(violations))


def _call_dispatcher(named: dict[str, list[Callable[[Any], None]]]) -> Callable[[ast.Call], None]:
    """One Call handler that forwards each call only to the rules that asked for its name."""
    attribute, name_node = ast.Attribute, ast.Name

    def dispatch(node: ast.Call) -> None:
        func = node.func
        kind = func.__class__
        if kind is attribute:
            handlers = named.get(func.attr)  # type: ignore[attr-defined]
        elif kind is name_node:
            handlers = named.get(func.id)  # type: ignore[attr-defined]
        else:
            return
        if handlers:
            for handler in handlers:
                handler(node)

    return dispatch


def violation_to_finding(violation: Violation, path: str) -> Finding:
    location = f"{path}:{violation.shown_line}:{violation.shown_column + 1}"
    if violation.code == SYNTAX_ERROR_CODE:
        title, fix = _PROBLEMS.get(violation.problem, _PROBLEMS["syntax"])
        # a rule that crashed is tfpilot's defect and stays an error; a file that cannot be read as
        # Python is a file no rule checked: a note, as earned (most are exercise templates)
        severity, _ = (
            (Severity.ERROR, None)
            if violation.problem == "internal"
            else earned_severity(SYNTAX_ERROR_CODE, Severity.ERROR)
        )
        return Finding(
            code=SYNTAX_ERROR_CODE,
            severity=severity,
            title=title,
            message=violation.message,
            location=location,
            fix=fix,
        )
    rule = _RULE_BY_CODE[violation.code]
    claimed = violation.severity or rule.severity
    severity, lowered = earned_severity(violation.code, claimed)
    return Finding(
        code=violation.code,
        severity=severity,
        title=rule.name,
        message=violation.message if lowered is None else f"{violation.message} ({lowered})",
        location=location,
        evidence={
            **({"start": f"{violation.line}:{violation.column + 1}"} if violation.anchor_line else {}),
            "end": f"{violation.end_line}:{violation.end_column + 1}",
            "fixable": violation.fix_data is not None,
            "category": rule.category,
            **({"rule_severity": claimed.value} if lowered is not None else {}),
        },
        fix=rule.fix_hint,
    )


def _findings(result: FileResult) -> list[Finding]:
    violations = result.violations if result.syntax_error is None else (result.syntax_error,)
    return [violation_to_finding(violation, result.path) for violation in violations]


def lint_source(source: str, *, path: str = "<string>", config: LintConfig | None = None) -> list[Finding]:
    """Lint one module's source text with the rules ``config`` selects (default: all)."""
    config = config or LintConfig()
    rules = select_rules(config)
    return _findings(check_source(source, path, rules, ignored_prefixes=config.ignored_in(Path(path))))


def read_source(path: Path) -> str:
    """Decode leniently (undecodable bytes become U+FFFD): for code tfpilot itself wrote."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding, errors="replace")


class UndecodableSource(ValueError):
    """The bytes are not text in the file's encoding; ``line``/``column`` locate the first bad byte."""

    def __init__(self, message: str, line: int = 1, column: int = 0) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


def decode_source(data: bytes) -> str:
    """Decode like Python does: UTF-8 unless a PEP 263 cookie says otherwise, strictly.

    Python refuses to run a file that does not decode, so such a file is reported rather than
    linted with replacement characters.
    """
    second_line_end = data.find(b"\n", data.find(b"\n") + 1)
    if b"coding" not in data[: second_line_end if second_line_end >= 0 else len(data)]:
        try:  # no PEP 263 cookie: UTF-8, the fast path for nearly every file
            return data.decode("utf-8")  # a BOM stays, so that --fix writes it back; lint_file drops it
        except UnicodeDecodeError:
            pass
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:  # an unknown codec in the cookie, or a BOM that contradicts it
        raise UndecodableSource(f"cannot decode: {error}") from error
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1)
        declared = "" if encoding == "utf-8" else f" (declared `{encoding}`)"
        raise UndecodableSource(
            f"cannot decode: byte 0x{data[error.start]:02x} is not valid {encoding}{declared}; "
            "Python refuses to run this file",
            line,
            column,
        ) from error
    except LookupError as error:
        raise UndecodableSource(f"cannot decode: unknown encoding `{encoding}`") from error
    return text


def unreadable_reason(path: Path, error: OSError) -> str:
    """One line on why ``path`` could not be read: a broken symlink reads as its own reason."""
    if path.is_symlink() and not path.exists():
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return f"broken symbolic link (its target `{target}` does not exist)"
    return f"cannot read: {error.strerror or error}"


def lint_file(path: Path, *, config: LintConfig, rules: Sequence[type[Rule]]) -> FileResult:
    try:
        data = path.read_bytes()
    except OSError as error:
        # Not the code's fault and no reason to stop: a note in the report, the rest is linted.
        return FileResult(str(path), 0, (), skipped=unreadable_reason(path, error))
    try:
        source = decode_source(data)
    except UndecodableSource as error:
        violation = Violation(
            SYNTAX_ERROR_CODE,
            str(error),
            error.line,
            error.column,
            error.line,
            error.column,
            "Module",
            problem="undecodable",
        )
        return FileResult(str(path), data.count(b"\n"), (), violation)
    if source.startswith("\ufeff"):
        source = source[1:]
    if config.select or config.ignore or config.per_file_ignores:
        ignored = config.ignored_in(path)
    else:
        ignored = ()
    if path.suffix == ".ipynb":
        return _lint_notebook(source, path, rules, ignored)
    return check_source(source, str(path), rules, ignored_prefixes=ignored)


def _lint_notebook(text: str, path: Path, rules: Sequence[type[Rule]], ignored: tuple[str, ...]) -> FileResult:
    """A notebook's code cells as one module (lint.notebooks); each finding names its code cell."""
    from tfpilot.lint.notebooks import notebook_to_python

    try:
        notebook = notebook_to_python(text)
    except ValueError as error:
        note = Violation(SYNTAX_ERROR_CODE, str(error), 1, 0, 1, 0, "Module", problem="undecodable")
        return FileResult(str(path), text.count("\n"), (), note)
    result = check_source(notebook.source, str(path), rules, ignored_prefixes=ignored)
    if result.syntax_error is not None and result.syntax_error.problem == "syntax":
        isolated = notebook_to_python(text, isolate_broken_cells=True)
        if isolated.unparsed:
            notebook = isolated
            result = check_source(notebook.source, str(path), rules, ignored_prefixes=ignored)

    def located(violation: Violation) -> Violation:
        cell, line = notebook.where(violation.shown_line)
        # fix_data goes: --fix does not rewrite a notebook's JSON, so nothing here is offered as fixable
        message = f"{violation.message} [code cell {cell}, line {line}]"
        return dataclasses.replace(violation, message=message, fix_data=None)

    skipped_cells = tuple(
        Violation(
            SYNTAX_ERROR_CODE,
            f"cannot parse this code cell ({message}); Jupyter runs each cell on its own, so the others were checked",
            line,
            0,
            line,
            0,
            "Module",
            problem="syntax",
        )
        for line, message in notebook.unparsed
    )
    return dataclasses.replace(
        result,
        violations=tuple(located(v) for v in (*skipped_cells, *result.violations)),
        syntax_error=located(result.syntax_error) if result.syntax_error is not None else None,
    )


def _lint_chunk(paths: list[str], config: LintConfig) -> list[FileResult]:
    """Worker entry point (module level so that spawned processes can import it)."""
    rules = select_rules(config)
    return [lint_file(Path(path), config=config, rules=rules) for path in paths]


def default_jobs() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:
        return max(os.cpu_count() or 1, 1)


def _chunks(files: list[Path], sizes: list[int], count: int) -> list[list[str]]:
    """Split files into ``count`` groups of similar total size (largest files first)."""
    order = sorted(range(len(files)), key=lambda i: -sizes[i])
    groups: list[list[str]] = [[] for _ in range(count)]
    totals = [0] * count
    for index in order:
        target = totals.index(min(totals))
        groups[target].append(str(files[index]))
        totals[target] += sizes[index]
    return [group for group in groups if group]


def lint_paths(
    paths: Iterable[str | Path],
    *,
    config: LintConfig | None = None,
    jobs: int | None = None,
) -> LintReport:
    """Lint files and directories. ``jobs``: worker processes (None or 0 = one per CPU)."""
    config = config or LintConfig()
    started = time.perf_counter()
    unreadable: list[tuple[Path, str]] = []
    files = discover_files(paths, config, unreadable=unreadable)
    jobs = default_jobs() if not jobs else jobs
    if jobs < 1:
        raise LintError(f"--jobs must be >= 1 (or 0 for one per CPU), got {jobs}")
    sizes = [_size(path) for path in files]
    results: list[FileResult]
    if jobs == 1 or len(files) < 2 or sum(sizes) < _PARALLEL_MIN_BYTES:
        rules = select_rules(config)
        results = [lint_file(path, config=config, rules=rules) for path in files]
    else:
        groups = _chunks(files, sizes, min(jobs * 4, len(files)))
        workers = min(jobs, len(groups))
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context(_start_method())) as pool:
            futures = [pool.submit(_lint_chunk, group, config) for group in groups]
            results = [result for future in futures for result in future.result()]
        order = {str(path): index for index, path in enumerate(files)}
        results.sort(key=lambda result: order[result.path])
    findings = [finding for result in results for finding in _findings(result)]
    skipped = [SkippedPath(str(path), reason) for path, reason in unreadable]
    skipped += [SkippedPath(result.path, result.skipped) for result in results if result.skipped is not None]
    return LintReport(
        findings=findings,
        files=len(files) - sum(1 for result in results if result.skipped is not None),
        lines=sum(result.lines for result in results),
        seconds=time.perf_counter() - started,
        skipped=tuple(skipped),
    )


def _start_method() -> str:
    """fork starts workers in milliseconds, but is only safe from a single-threaded process
    (TensorFlow starts threads); otherwise spawn fresh interpreters."""
    if sys.platform.startswith("linux") and threading.active_count() == 1 and "tensorflow" not in sys.modules:
        return "fork"
    return "spawn"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
