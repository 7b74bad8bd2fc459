"""``tfpilot migrate SRC DEST``: TensorFlow's tf_upgrade_v2, then tfpilot's rules, one report.

1. tf_upgrade_v2 (it ships with TensorFlow) rewrites every Python file into DEST: renames,
   argument reorders, and ``tf.compat.v1`` for whatever has no direct TF2 equivalent.
2. tfpilot applies its mechanical fixes to the result (Keras 3 renames, check-numerics, ...).
3. tfpilot lints the result; every remaining finding, and every warning tf_upgrade_v2 raised,
   is something a person has to change, with the reason and the fix.

DEST appears only once everything succeeded (it is built in a temporary sibling and renamed).
TensorFlow is imported inside ``migrate`` only: the rest of the lint package never imports it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from tfpilot.atomic import atomic_directory, atomic_write_text
from tfpilot.errors import LintError
from tfpilot.lint.config import LintConfig
from tfpilot.lint.discovery import DEFAULT_EXCLUDED_DIRS
from tfpilot.lint.engine import check_source, read_source, select_rules
from tfpilot.lint.fixer import fix_source
from tfpilot.lint.rules import rule_by_code

__all__ = ["MigrationItem", "MigrationReport", "migrate", "render_markdown", "default_report_path"]

_LOG_RE = re.compile(r"^(\d+):(\d+): (INFO|WARNING|ERROR): (.*)$")


_UPGRADER_WHY = "tf_upgrade_v2 changed or kept this call but cannot prove the behaviour is unchanged"


def _upgrader_fix(message: str) -> str:
    # tf_upgrade_v2 predates Keras 3; its advice about model.save is wrong there.
    if message.startswith("*.save requires manual check"):
        return (
            "Keras 3: ignore the save_format advice (save_format is gone); save to a .keras path, "
            "or call model.export(dir) for a SavedModel (tfpilot TFP402/TFP403)"
        )
    return "read tf_upgrade_v2's note and check the call by hand"


@dataclasses.dataclass(frozen=True)
class MigrationItem:
    path: str  # relative to DEST (or the DEST file name)
    line: int
    column: int
    tool: str  # "tf_upgrade_v2" or "tfpilot"
    code: str  # tfpilot rule code, or the tf_upgrade_v2 level (INFO / WARNING / ERROR)
    message: str
    why: str = ""
    fix: str = ""


@dataclasses.dataclass(frozen=True)
class MigrationReport:
    source: Path
    destination: Path
    report_path: Path
    files: int
    rewritten: tuple[MigrationItem, ...]
    needs_person: tuple[MigrationItem, ...]


def default_report_path(destination: Path, *, is_directory: bool) -> Path:
    if is_directory:
        return destination / "MIGRATION_REPORT.md"
    return destination.with_name(destination.name + ".migration.md")


def _upgrader() -> Any:
    """tf_upgrade_v2's upgrader (imports TensorFlow, hence only here)."""
    try:
        from tensorflow.tools.compatibility import ast_edits, tf_upgrade_v2
    except ImportError as error:  # pragma: no cover - TensorFlow is a dependency of tfpilot
        raise LintError(
            f"cannot import tf_upgrade_v2 from TensorFlow ({error}); install tensorflow to use `tfpilot migrate`"
        ) from error
    return ast_edits.ASTCodeUpgrader(tf_upgrade_v2.TFAPIChangeSpec(import_rename=False, upgrade_compat_v1_import=True))


def _plan(source: Path, destination: Path) -> list[tuple[Path, Path]]:
    """(input, output) pairs; outputs are relative to the destination root."""
    if source.is_file():
        return [(source, Path(destination.name))]
    pairs: list[tuple[Path, Path]] = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if any(part in DEFAULT_EXCLUDED_DIRS or part.startswith(".") for part in relative.parts[:-1]):
            continue
        if path.is_file() and not path.is_symlink():
            pairs.append((path, relative))
    return pairs


def _upgrade_file(
    upgrader: Any, source: Path, target: Path, relative: str
) -> tuple[list[MigrationItem], list[MigrationItem]]:
    rewritten: list[MigrationItem] = []
    attention: list[MigrationItem] = []
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):  # tf_upgrade_v2 prints every log line
        processed, log_text, _errors = upgrader.process_file(str(source), str(target))
    if not processed:
        shutil.copyfile(source, target)
        attention.append(
            MigrationItem(
                relative,
                1,
                1,
                "tf_upgrade_v2",
                "ERROR",
                "tf_upgrade_v2 could not parse this file",
                why="the file was copied unchanged",
                fix="make the file valid Python, then run migrate again",
            )
        )
        return rewritten, attention
    for raw in log_text.splitlines():
        match = _LOG_RE.match(raw.strip())
        if match is None:
            continue
        line, column, level, message = int(match[1]), int(match[2]), match[3], match[4]
        item = MigrationItem(relative, line, column + 1, "tf_upgrade_v2", level, message)
        if level == "INFO":
            rewritten.append(item)
        else:
            attention.append(dataclasses.replace(item, why=_UPGRADER_WHY, fix=_upgrader_fix(message)))
    return rewritten, attention


def migrate(
    source: str | Path,
    destination: str | Path,
    *,
    report_path: str | Path | None = None,
    config: LintConfig | None = None,
) -> MigrationReport:
    """Upgrade SRC (a file or a directory) into DEST and write the migration report."""
    source = Path(source)
    destination = Path(destination)
    if not source.exists():
        raise LintError(f"source `{source}` does not exist; pass a Python file or a directory to migrate")
    if destination.exists():
        raise LintError(f"destination `{destination}` already exists; pass a new path (migrate never overwrites)")
    if source.is_dir() and destination.resolve().is_relative_to(source.resolve()):
        raise LintError(f"destination `{destination}` is inside the source tree `{source}`; pick a path outside it")
    config = config or LintConfig()
    rules = select_rules(config)
    is_directory = source.is_dir()
    report_file = Path(report_path) if report_path else default_report_path(destination, is_directory=is_directory)
    upgrader = _upgrader()
    rewritten: list[MigrationItem] = []
    attention: list[MigrationItem] = []
    files = 0

    def process(root: Path) -> None:
        nonlocal files
        for input_path, relative in _plan(source, destination):
            output_path = root / relative
            output_path.parent.mkdir(parents=True, exist_ok=True)
            if input_path.suffix != ".py":
                shutil.copyfile(input_path, output_path)
                continue
            files += 1
            name = relative.as_posix()
            upgraded, warnings = _upgrade_file(upgrader, input_path, output_path, name)
            rewritten.extend(upgraded)
            attention.extend(warnings)
            text = read_source(output_path)
            fixed = fix_source(text, path=name, config=config, rules=rules)
            if fixed.changed:
                atomic_write_text(output_path, fixed.fixed_source)
            rewritten.extend(
                MigrationItem(name, fix.line, fix.column, "tfpilot", fix.code, fix.description) for fix in fixed.applied
            )
            remaining = check_source(fixed.fixed_source, name, rules, ignored_prefixes=config.ignored_in(Path(name)))
            for violation in (remaining.syntax_error,) if remaining.syntax_error else remaining.violations:
                rule = rule_by_code(violation.code)
                attention.append(
                    MigrationItem(
                        name,
                        violation.line,
                        violation.column + 1,
                        "tfpilot",
                        violation.code,
                        violation.message,
                        why=rule.summary() if rule else "",
                        fix=rule.fix_hint if rule else "",
                    )
                )

    if is_directory:
        with atomic_directory(destination) as staging:
            process(staging)
            report = _report(source, destination, report_file, files, rewritten, attention)
            if report_file.resolve().is_relative_to(destination.resolve()):
                staged_report = staging / report_file.resolve().relative_to(destination.resolve())
                atomic_write_text(staged_report, render_markdown(report))
            else:
                atomic_write_text(report_file, render_markdown(report))
    else:
        with tempfile.TemporaryDirectory(prefix="tfpilot-migrate-") as staging_name:
            process(Path(staging_name))
            atomic_write_text(destination, (Path(staging_name) / destination.name).read_text(encoding="utf-8"))
        report = _report(source, destination, report_file, files, rewritten, attention)
        atomic_write_text(report_file, render_markdown(report))
    return report


def _report(
    source: Path,
    destination: Path,
    report_file: Path,
    files: int,
    rewritten: list[MigrationItem],
    attention: list[MigrationItem],
) -> MigrationReport:
    def order(item: MigrationItem) -> tuple[str, int, int, str]:
        return (item.path, item.line, item.column, item.code)

    return MigrationReport(
        source=source,
        destination=destination,
        report_path=report_file,
        files=files,
        rewritten=tuple(sorted(rewritten, key=order)),
        needs_person=tuple(sorted(attention, key=order)),
    )


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render_markdown(report: MigrationReport) -> str:
    lines = [
        "# TensorFlow 2 / Keras 3 migration report",
        "",
        f"- Source: `{report.source}`",
        f"- Destination: `{report.destination}`",
        f"- Python files migrated: {report.files}",
        f"- Rewritten automatically: {len(report.rewritten)} "
        f"(tf_upgrade_v2: {sum(1 for i in report.rewritten if i.tool == 'tf_upgrade_v2')}, "
        f"tfpilot: {sum(1 for i in report.rewritten if i.tool == 'tfpilot')})",
        f"- Needs a person: {len(report.needs_person)}",
        "",
        "Line numbers of tf_upgrade_v2 entries refer to the source file; tfpilot entries refer to",
        "the migrated file in the destination.",
        "",
        "## Needs a person",
        "",
    ]
    if report.needs_person:
        lines += ["| file | line | tool | code | what | why | fix |", "|---|---|---|---|---|---|---|"]
        for item in report.needs_person:
            lines.append(
                f"| {_cell(item.path)} | {item.line}:{item.column} | {item.tool} | {item.code} | "
                f"{_cell(item.message)} | {_cell(item.why)} | {_cell(item.fix)} |"
            )
    else:
        lines.append("Nothing: every finding was rewritten automatically.")
    lines += ["", "## Rewritten automatically", ""]
    if report.rewritten:
        lines += ["| file | line | tool | code | change |", "|---|---|---|---|---|"]
        for item in report.rewritten:
            lines.append(
                f"| {_cell(item.path)} | {item.line}:{item.column} | {item.tool} | {item.code} | {_cell(item.message)} |"
            )
    else:
        lines.append("Nothing needed rewriting.")
    return "\n".join(lines) + "\n"
