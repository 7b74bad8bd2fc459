"""Lint settings from ``[tool.tfpilot.lint]`` in pyproject.toml, merged with command-line flags.

[tool.tfpilot.lint]
select = ["TFP1", "TFP301"]          # codes or prefixes; empty = every rule
ignore = ["TFP607"]
exclude = ["legacy/*", "notebooks"]  # globs, relative to the pyproject.toml's directory
per-file-ignores = { "tests/*" = ["TFP2"] }
fail-on = "warning"                  # lowest severity that makes the exit code 1
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tfpilot.errors import LintError
from tfpilot.findings import Severity

__all__ = ["LintConfig", "load_lint_config", "find_pyproject", "parse_codes"]

_CODE_RE = re.compile(r"^(ALL|TFP\d{0,3})$")
_KNOWN_KEYS = {"select", "ignore", "exclude", "per-file-ignores", "fail-on"}


@dataclasses.dataclass(frozen=True)
class LintConfig:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    fail_on: Severity = Severity.INFO
    root: Path | None = None
    source: Path | None = None

    def is_enabled(self, code: str) -> bool:
        if self.select and "ALL" not in self.select and not code.startswith(self.select):
            return False
        return not ("ALL" in self.ignore or code.startswith(self.ignore))

    def ignored_in(self, path: Path) -> tuple[str, ...]:
        """Code prefixes that ``per-file-ignores`` turns off for ``path``."""
        if not self.per_file_ignores:
            return ()
        relative = _relative_posix(path, self.root)
        prefixes: list[str] = []
        for pattern, codes in self.per_file_ignores:
            if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path.name, pattern):
                prefixes.extend(codes)
        return tuple(prefixes)

    def is_excluded(self, path: Path) -> bool:
        if not self.exclude:
            return False
        relative = _relative_posix(path, self.root)
        for pattern in self.exclude:
            if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path.name, pattern):
                return True
            if relative == pattern.rstrip("/") or relative.startswith(pattern.rstrip("/") + "/"):
                return True
        return False

    def with_overrides(
        self,
        *,
        select: Iterable[str] | None = None,
        ignore: Iterable[str] | None = None,
        fail_on: Severity | None = None,
    ) -> LintConfig:
        """Command-line ``--select`` replaces the file's select; ``--ignore`` adds to it."""
        changes: dict[str, Any] = {}
        if select:
            changes["select"] = parse_codes(select, where="--select")
        if ignore:
            changes["ignore"] = self.ignore + parse_codes(ignore, where="--ignore")
        if fail_on is not None:
            changes["fail_on"] = fail_on
        return dataclasses.replace(self, **changes)


def _relative_posix(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def parse_codes(values: Iterable[str], *, where: str) -> tuple[str, ...]:
    """Split comma lists, upper-case and validate codes against the registered rules."""
    from tfpilot.lint.rules import RULES

    known = [rule.code for rule in RULES]
    codes: list[str] = []
    for value in values:
        for part in str(value).split(","):
            code = part.strip().upper()
            if not code:
                continue
            if not _CODE_RE.match(code) or (code != "ALL" and not any(k.startswith(code) for k in known)):
                raise LintError(
                    f"unknown rule code `{part.strip()}` in {where}; expected a code or prefix such "
                    f"as TFP101 or TFP1 (run `tfpilot lint --list-rules` to see all {len(known)})"
                )
            codes.append(code)
    return tuple(codes)


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start``."""
    start = start.resolve()
    for directory in [start, *start.parents] if start.is_dir() else list(start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_lint_config(pyproject: Path | None) -> LintConfig:
    """Read ``[tool.tfpilot.lint]``; no file or no table means the defaults."""
    if pyproject is None:
        return LintConfig()
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise LintError(f"cannot read {pyproject}: {error}; fix the TOML or pass --config") from error
    table = data.get("tool", {}).get("tfpilot", {}).get("lint")
    if table is None:
        return LintConfig(root=pyproject.parent, source=pyproject)
    if not isinstance(table, Mapping):
        raise LintError(f"[tool.tfpilot.lint] in {pyproject} must be a table, got {type(table).__name__}")
    unknown = sorted(set(table) - _KNOWN_KEYS)
    if unknown:
        raise LintError(
            f"unknown key(s) {', '.join(unknown)} in [tool.tfpilot.lint] of {pyproject}; "
            f"expected any of {', '.join(sorted(_KNOWN_KEYS))}"
        )
    where = f"[tool.tfpilot.lint] of {pyproject}"
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, Mapping):
        raise LintError(f"per-file-ignores in {where} must be a table of glob = [codes]")
    fail_on = table.get("fail-on", "info")
    try:
        severity = Severity(str(fail_on).lower())
    except ValueError as error:
        raise LintError(f"fail-on in {where} must be info, warning or error, got {fail_on!r}") from error
    return LintConfig(
        select=parse_codes(_string_list(table.get("select", []), "select", where), where=where),
        ignore=parse_codes(_string_list(table.get("ignore", []), "ignore", where), where=where),
        exclude=tuple(_string_list(table.get("exclude", []), "exclude", where)),
        per_file_ignores=tuple(
            (pattern, parse_codes(_string_list(codes, f"per-file-ignores.{pattern}", where), where=where))
            for pattern, codes in per_file.items()
        ),
        fail_on=severity,
        root=pyproject.parent,
        source=pyproject,
    )


def _string_list(value: Any, key: str, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise LintError(f"`{key}` in {where} must be a list of strings, got {value!r}")
    return value
