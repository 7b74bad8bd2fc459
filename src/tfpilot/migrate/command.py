"""``tfpilot migrate SRC DEST``: TensorFlow's tf_upgrade_v2, then code that runs, one report.

1. tf_upgrade_v2 (it ships with TensorFlow) rewrites every Python file into DEST: renames,
   argument reorders, and ``tf.compat.v1`` for whatever has no direct TF2 equivalent.
2. The compat pass (tfpilot.migrate.compat) makes what is left run on TF 2.21: graph mode for
   files that build a TF1 graph, helpers for APIs that are gone (tf.layers, TF1 RNN cells,
   tf.contrib pieces, the MNIST tutorial loader).
3. tfpilot applies its mechanical fixes (Keras 3 renames, check-numerics, ...) and lints.
4. Each file is checked against the installed TensorFlow (tfpilot.migrate.readiness): does it
   parse, do its imports resolve, does every API it names exist. The report says per file
   whether it is expected to run and what stops it; every tf_upgrade_v2 warning and "requires
   manual check" note is listed under "Needs a person".

DEST appears only once everything succeeded (it is built in a temporary sibling and renamed).
TensorFlow is imported inside ``migrate`` only (tf_upgrade_v2, the readiness check); the lint
package this builds on never imports it.
"""

from __future__ import annotations

import ast
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
from tfpilot.findings import Severity
from tfpilot.lint.config import LintConfig
from tfpilot.lint.discovery import DEFAULT_EXCLUDED_DIRS
from tfpilot.lint.engine import check_source, read_source, select_rules
from tfpilot.lint.fixer import fix_source
from tfpilot.lint.rules import rule_by_code
from tfpilot.migrate.compat import SHIM_MODULE, render_shim_module, unmarked
from tfpilot.migrate.pre_upgrade import prepare

__all__ = [
    "RunResult",
    "entry_scripts",
    "verify",
    "FileStatus",
    "MigrationItem",
    "MigrationReport",
    "MODES",
    "SETUP_HELP",
    "migrate",
    "render_markdown",
    "default_report_path",
]

_LOG_RE = re.compile(r"^(\d+):(\d+): (INFO|WARNING|ERROR): (.*)$")


_UPGRADER_WHY = "tf_upgrade_v2 changed or kept this call but cannot prove the behaviour is unchanged"


def _upgrader_fix(message: str) -> str:
    # tf_upgrade_v2 predates Keras 3; its advice about model.save is wrong there.
    if message.startswith("*.save requires manual check"):
        return (
            "Keras 3: ignore the save_format advice (save_format is gone); save to a .keras path, "
            "or call model.export(dir) for a SavedModel (tfpilot TFP402/TFP403)"
        )
    if message.startswith("tf.summary.") and "requires manual check" in message:
        return (
            "in a TF1 graph file migrate keeps TF1's summary ops (tf.compat.v1.summary.*), so merge_all and "
            "FileWriter work as before; a TF2 port uses tf.summary.create_file_writer(dir).as_default() and "
            "tf.summary.scalar(name, value, step=step)"
        )
    if "tf.stop_gradient(labels)" in message:
        return (
            "harmless when the labels are data (nothing trains them); drop the tf.stop_gradient only if a "
            "gradient should flow into the labels"
        )
    return "read tf_upgrade_v2's note and check the call by hand"


# compat: TF1 graph code kept on tf.compat.v1; native: placeholder + Session training scripts
# rewritten to tf.function + GradientTape + Keras (compat output where that cannot be proven).
MODES = ("compat", "native")

# In compat mode these findings describe TF1 code that now runs on tf.compat.v1 by design: a
# port to TF2 idioms, not something that stops the file.
_KEPT_ON_COMPAT = frozenset({"TFP601", "TFP602", "TFP603", "TFP607", "TFP608", "TFP610"})
# tf_upgrade_v2 files these as INFO although it asks a person to look.
_MANUAL_CHECK_RE = re.compile(r"requires manual check|please check this transformation|manually", re.IGNORECASE)
_UNCONVERTED_RE = re.compile(r"Using member (\S+) in deprecated module")
# What a file needs in place before it runs: a short name for the Files table, explained once below it.
SETUP_HELP = {
    "MNIST file": (
        "the migrated MNIST loader (`_tf1_mnist`) never downloads. It reads, in this order: the mnist.npz named "
        "by the TFPILOT_MNIST environment variable; `mnist.npz` in the directory the script passes to "
        "read_data_sets; TF1's four idx files there (train-images-idx3-ubyte.gz ..., what the TF1 script "
        "downloaded); `~/.keras/datasets/mnist.npz` (run keras.datasets.mnist.load_data() once on a machine "
        "that is online to fill it)."
    ),
}


@dataclasses.dataclass(frozen=True)
class MigrationItem:
    path: str  # relative to DEST (or the DEST file name)
    line: int
    column: int
    tool: str  # "tf_upgrade_v2" or "tfpilot"
    code: str  # tfpilot rule code, RUN (a blocker), compat (a rewrite), or the tf_upgrade_v2 level
    message: str
    why: str = ""
    fix: str = ""
    blocks_run: bool = False  # the file will not start until this is fixed
    changes_program: bool = False  # the migrated program computes something else than the TF1 one

    @property
    def needs_person(self) -> bool:
        """Listed under "Needs a person": it stops the file or changes what the program does."""
        return self.blocks_run or self.changes_program


@dataclasses.dataclass(frozen=True)
class RunResult:
    """What happened when ``--verify`` ran one migrated entry script."""

    path: str
    outcome: str  # "ran" (exit 0), "failed" (another exit code) or "timed out" (no error before the limit)
    seconds: float
    detail: str = ""  # the last error line of a failed run


@dataclasses.dataclass(frozen=True)
class FileStatus:
    path: str
    will_run: bool  # parses, imports resolve, no removed API left, graph mode where needed
    blockers: tuple[str, ...]  # what stops it, one line each
    setup: tuple[str, ...]  # what to put in place before running it (data files)
    rewrite: str = ""  # --mode native: "native", or "compat: why not"


@dataclasses.dataclass(frozen=True)
class MigrationReport:
    source: Path
    destination: Path
    report_path: Path
    files: int
    rewritten: tuple[MigrationItem, ...]
    needs_person: tuple[MigrationItem, ...]
    mode: str = "compat"
    statuses: tuple[FileStatus, ...] = ()
    kept_on_compat: tuple[MigrationItem, ...] = ()  # runs as is; port to TF2 when convenient
    notes: tuple[MigrationItem, ...] = ()  # informational: neither stops nor changes the program
    verified: tuple[RunResult, ...] = ()  # --verify: each entry script, run

    @property
    def will_run(self) -> int:
        return sum(status.will_run for status in self.statuses)

    @property
    def ok(self) -> bool:
        """Every file is expected to run, and every script --verify ran finished or ran until its time limit."""
        return self.will_run == self.files and not any(run.outcome == "failed" for run in self.verified)


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
    data = source.read_bytes()
    prepared, prepared_changes = prepare(data)
    rewritten += [MigrationItem(relative, line, 1, "tfpilot", "compat", what) for line, what in prepared_changes]
    with contextlib.ExitStack() as stack:
        read_from = source
        if prepared != data:
            # tf_upgrade_v2 reads a copy (pre_upgrade.py: no byte order mark, TF 0.x calls with their
            # keywords); the migrated file is plain UTF-8, which Python runs the same.
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tfpilot-prepared-")))
            read_from = folder / source.name
            read_from.write_bytes(prepared)
        with contextlib.redirect_stdout(captured):  # tf_upgrade_v2 prints every log line
            processed, log_text, _errors = upgrader.process_file(str(read_from), str(target))
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
        line, column, level, message = int(match[1]), int(match[2]), match[3], unmarked(match[4])
        item = MigrationItem(relative, line, column + 1, "tf_upgrade_v2", level, message)
        # Its INFO lines include "requires manual check" notes: those are for a person, not done.
        if level == "INFO" and not _MANUAL_CHECK_RE.search(message):
            rewritten.append(item)
        else:
            attention.append(dataclasses.replace(item, why=_UPGRADER_WHY, fix=_upgrader_fix(message)))
    return rewritten, attention


def _nearby_modules(source: Path) -> dict[str, str]:
    """Modules next to SRC that SRC does not hold (a single file's siblings, a folder's neighbours)."""
    folder = source.parent if source.is_file() else source.resolve().parent
    found: dict[str, str] = {}
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path == source or path.name.startswith("."):
            continue
        if path.suffix == ".py" and path.is_file():
            found[path.stem] = str(path)
        elif path.is_dir() and (path / "__init__.py").is_file():
            found[path.name] = str(path) + "/"
    return found


def _import_root(input_path: Path, relative: Path, imported_packages: frozenset[str] = frozenset()) -> Path:
    """The folder (relative to the tree) a migrated file imports top-level modules from: its own,
    or, for a module of a package (``model/model_fn.py`` next to ``model/__init__.py``, or in a
    ``model/`` without one that the tree imports as ``from model.rnn_lm import ...``: a namespace
    package), the folder above the outermost package, which is on sys.path when the scripts there
    import the package."""
    folder, source_folder = relative.parent, input_path.parent
    while folder.parts and ((source_folder / "__init__.py").exists() or folder.as_posix() in imported_packages):
        folder, source_folder = folder.parent, source_folder.parent
    return folder


def _runs_from_its_folder(input_path: Path, parsed: ast.Module) -> bool:
    """A module of a package that is also run as a script from its own folder: ``python
    mnist/convolutional.py`` puts ``mnist/`` first on sys.path, which its ``import model`` (a sibling
    module, imported as a top-level one) shows, as does an ``if __name__ == "__main__":`` block. Its
    helper import then needs tf1_compat_shims.py in that folder too, besides the one above the package."""
    folder = input_path.parent
    if not (folder / "__init__.py").exists():
        return False  # its folder is where the helper module goes anyway
    for node in ast.walk(parsed):
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) and "__main__" in ast.unparse(node.test):
            return True
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
        for name in names:
            first = name.split(".")[0]
            if first != input_path.stem and ((folder / f"{first}.py").exists() or (folder / first).is_dir()):
                return True
    return False


def _tree_imports(pairs: list[tuple[Path, Path]]) -> tuple[frozenset[str], frozenset[Path]]:
    """One parse of every file: the folders (as `a/b`) the tree's files import as packages (`from
    model.x import y`, `import model.x`), and the package folders a module of which runs as a script
    from there (`_runs_from_its_folder`)."""
    found: set[str] = set()
    script_folders: set[Path] = set()
    for input_path, relative in pairs:
        if relative.suffix != ".py":
            continue
        try:
            parsed = ast.parse(input_path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        if _runs_from_its_folder(input_path, parsed):
            script_folders.add(relative.parent)
        for node in ast.walk(parsed):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.append(node.module + ".")  # `from model import x`: model is a package or a module
            elif isinstance(node, ast.ImportFrom) and node.level and len(relative.parts) >= node.level:
                # `from .cifar import x` in data_providers/utils.py: data_providers.cifar (a module or a package)
                package = list(relative.parts[: len(relative.parts) - node.level])
                if node.module:
                    modules.append(".".join([*package, node.module]) + ".")
                else:
                    modules.extend(".".join([*package, alias.name]) + "." for alias in node.names)
            for module in modules:
                parts = module.rstrip(".").split(".")
                keep = len(parts) if module.endswith(".") else len(parts) - 1
                for end in range(1, keep + 1):
                    found.add("/".join(parts[:end]))
    return frozenset(found), frozenset(script_folders)


def _local_modules(pairs: list[tuple[Path, Path]]) -> frozenset[str]:
    """Module names the migrated tree itself provides (sibling files and packages)."""
    names: set[str] = set()
    for _, relative in pairs:
        names.update(part for part in relative.parts[:-1])
        if relative.suffix == ".py":
            names.add(relative.stem)
    return frozenset(names)


@dataclasses.dataclass
class _FileResult:
    text: str
    rewritten: list[MigrationItem]
    attention: list[MigrationItem]
    kept: list[MigrationItem]
    status: FileStatus
    helpers: tuple[str, ...]  # what the file imports from tf1_compat_shims.py


def _unmigrated(text: str, name: str, error: Exception) -> _FileResult:
    """A file tfpilot's rewrites failed on: left as tf_upgrade_v2 wrote it, said so in one line."""
    reason = f"tfpilot's rewrite failed on this file ({type(error).__name__}: {str(error).splitlines()[0][:200]})"
    item = MigrationItem(
        name,
        1,
        1,
        "tfpilot",
        "RUN",
        f"left as tf_upgrade_v2 wrote it: {reason}",
        fix="port the file by hand, or report the failure with the file attached",
        blocks_run=True,
    )
    status = FileStatus(name, will_run=False, blockers=(reason,), setup=())
    return _FileResult(text=text, rewritten=[], attention=[item], kept=[], status=status, helpers=())


def _migrate_file(
    text: str,
    name: str,
    *,
    mode: str,
    config: LintConfig,
    rules: Any,
    local_modules: frozenset[str],
    nearby_modules: dict[str, str] | None = None,
    imported: bool = False,
) -> _FileResult:
    """tf_upgrade_v2's output -> the final text, what was rewritten, what needs a person, the status."""
    from tfpilot.migrate.compat import rewrite_compat, shim_line_range
    from tfpilot.migrate.indentation import expand_indentation_tabs, libcst_reads
    from tfpilot.migrate.readiness import check_runs

    rewritten: list[MigrationItem] = []
    attention: list[MigrationItem] = []
    kept: list[MigrationItem] = []
    setup: list[str] = []
    parses = True
    native_status = ""
    helpers: tuple[str, ...] = ()
    try:
        ast.parse(text)
    except SyntaxError:
        parses = False
    # libcst refuses only what Python reads differently from it: indentation that mixes tabs in. The
    # check is one more parse, so only files with a tab pay for it (a rewrite that fails on any other
    # file is caught per file by the caller).
    if parses and "\t" in text and not libcst_reads(text):
        expanded = expand_indentation_tabs(text)
        if libcst_reads(expanded):
            text = expanded
            rewritten.append(
                MigrationItem(
                    name,
                    1,
                    1,
                    "tfpilot",
                    "compat",
                    "indentation tabs expanded to spaces: the file mixes tabs and spaces, which Python reads and "
                    "libcst (the rewrites' parser) does not",
                )
            )
        else:
            parses = False
            attention.append(
                MigrationItem(
                    name,
                    1,
                    1,
                    "tfpilot",
                    "compat",
                    "left as tf_upgrade_v2 wrote it: libcst, which tfpilot's rewrites use, cannot parse this file",
                    fix="check the file's indentation and encoding, then migrate again",
                    blocks_run=True,
                )
            )
    if parses and mode == "native":
        from tfpilot.migrate.native import rewrite_native

        native = rewrite_native(text)
        if native.converted:
            text = native.source
            rewritten += [MigrationItem(name, c.line, c.column, "tfpilot", "native", c.message) for c in native.changes]
            attention += [
                MigrationItem(
                    name, n.line, n.column, "tfpilot", "native", n.message, fix="check it by hand", changes_program=True
                )
                for n in native.notes
            ]
        else:
            attention.append(
                MigrationItem(
                    name,
                    native.reason_line,
                    1,
                    "tfpilot",
                    "native",
                    f"kept on tf.compat.v1 (compat output): --mode native cannot rewrite this file: {native.reason}",
                    why="the native rewrite is all or nothing per file and only where it keeps the program's meaning",
                    fix="port this part to tf.function + GradientTape by hand, then the rest follows the native pattern",
                )
            )
        native_status = "native" if native.converted else f"compat: {native.reason} (line {native.reason_line})"
    if parses:
        compat = rewrite_compat(text)
        text = compat.source
        helpers = compat.helpers
        rewritten += [
            MigrationItem(name, c.line, c.column, "tfpilot", "compat", unmarked(c.message)) for c in compat.changes
        ]
        attention += [
            MigrationItem(
                name,
                note.line,
                note.column,
                "tfpilot",
                "compat",
                note.message,
                why="migrate could not make this part run by itself" if note.blocks_run else "",
                fix="port this call by hand (the TF2 / Keras equivalent)" if note.blocks_run else "check it by hand",
                blocks_run=note.blocks_run,
            )
            for note in compat.notes
        ]
        if "_tf1_mnist" in compat.helpers:
            setup.append("MNIST file")
    shim = shim_line_range(text)
    fixed = fix_source(text, path=name, config=config, rules=rules)
    if (
        fixed.changed
        and shim_line_range(fixed.fixed_source) == shim
        and _lines(fixed.fixed_source, shim) == _lines(text, shim)
    ):
        text = fixed.fixed_source
        rewritten += [
            MigrationItem(name, fix.line, fix.column, "tfpilot", fix.code, fix.description)
            for fix in fixed.applied
            if fix.line not in shim
        ]
    remaining = check_source(text, name, rules, ignored_prefixes=config.ignored_in(Path(name)))
    for violation in (remaining.syntax_error,) if remaining.syntax_error else remaining.violations:
        if violation.line in shim:
            continue  # the helpers are TF1 graph code on purpose
        rule = rule_by_code(violation.code)
        item = MigrationItem(
            name,
            violation.line,
            violation.column + 1,
            "tfpilot",
            violation.code,
            violation.message,
            why=rule.summary() if rule else "",
            fix=rule.fix_hint if rule else "",
            changes_program=(violation.severity or (rule.severity if rule else None)) == Severity.ERROR,
        )
        (kept if violation.code in _KEPT_ON_COMPAT else attention).append(item)
    blockers = check_runs(
        text, local_modules=local_modules, skip_lines=shim, nearby_modules=nearby_modules or {}, imported=imported
    )
    attention += [
        MigrationItem(
            name,
            b.line,
            b.column,
            "tfpilot",
            "RUN",
            b.what + (" (in a branch or function: the program stops there only if it runs)" if b.in_branch else ""),
            why="the file stops here" + (" when this code runs" if b.in_branch else ""),
            fix=b.fix,
            blocks_run=not b.in_branch,
        )
        for b in blockers
    ]
    status = FileStatus(
        name,
        will_run=not any(item.blocks_run for item in attention),
        blockers=tuple(f"line {item.line}: {item.message}" for item in attention if item.blocks_run),
        setup=tuple(setup),
        rewrite=native_status if mode == "native" and parses else "",
    )
    return _FileResult(text, rewritten, attention, kept, status, helpers)


def _lines(text: str, span: range) -> list[str]:
    lines = text.splitlines()
    return [lines[number - 1] for number in span if number - 1 < len(lines)]


def _resolved_by_tfpilot(item: MigrationItem, text: str) -> bool:
    """A tf_upgrade_v2 "cannot be converted" error whose symbol tfpilot has since replaced."""
    match = _UNCONVERTED_RE.search(item.message)
    return item.tool == "tf_upgrade_v2" and match is not None and match[1] not in text


def migrate(
    source: str | Path,
    destination: str | Path,
    *,
    mode: str = "compat",
    report_path: str | Path | None = None,
    config: LintConfig | None = None,
    verify_timeout: float | None = None,
) -> MigrationReport:
    """Upgrade SRC (a file or a directory) into DEST and write the migration report.

    ``mode="compat"``: tf_upgrade_v2, then what makes TF1 code run on TF 2.21 (graph mode where
    the file builds a graph, helpers for removed APIs); ``mode="native"`` rewrites what it can
    prove into TF2 idioms. ``verify_timeout`` (seconds): afterwards run every entry script of DEST
    and record what happened (``MigrationReport.verified``).
    """
    if mode not in MODES:
        raise LintError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
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
    kept: list[MigrationItem] = []
    statuses: list[FileStatus] = []
    helpers: set[str] = set()
    shim_dirs: set[Path] = set()
    files = 0

    def process(root: Path) -> None:
        nonlocal files
        pairs = _plan(source, destination)
        local_modules = _local_modules(pairs) | {SHIM_MODULE}
        imported_packages, script_folders = _tree_imports(pairs)
        nearby_modules = _nearby_modules(source)
        helper_folders: set[Path] = set()
        for input_path, relative in pairs:
            output_path = root / relative
            output_path.parent.mkdir(parents=True, exist_ok=True)
            if input_path.suffix != ".py":
                shutil.copyfile(input_path, output_path)
                continue
            files += 1
            name = relative.as_posix()
            upgraded, warnings = _upgrade_file(upgrader, input_path, output_path, name)
            text = read_source(output_path)
            try:
                result = _migrate_file(
                    text,
                    name,
                    mode=mode,
                    config=config,
                    rules=rules,
                    local_modules=local_modules,
                    nearby_modules=nearby_modules,
                    imported=relative.with_suffix("").as_posix() in imported_packages,
                )
            except Exception as error:  # one file that breaks a rewrite must not stop the tree
                result = _unmigrated(text, name, error)
            atomic_write_text(output_path, result.text)
            for warning in warnings:
                if _resolved_by_tfpilot(warning, result.text):
                    upgraded.append(dataclasses.replace(warning, message=warning.message + " (tfpilot replaced it)"))
                else:
                    attention.append(warning)
            rewritten.extend(upgraded + result.rewritten)
            attention.extend(result.attention)
            kept.extend(result.kept)
            statuses.append(result.status)
            if result.helpers:
                helpers.update(result.helpers)
                shim_dirs.add(root / _import_root(input_path, relative, imported_packages))
                helper_folders.add(relative.parent)
        # A package folder one of whose modules runs as a script from it: its modules' helper import
        # looks there first (sys.path[0]), so the helper module goes there too.
        shim_dirs.update(root / folder for folder in helper_folders & script_folders)
        # One helper module per output directory that needs one (a script imports from its own folder;
        # a package's modules from the folder above the package, where its entry scripts run).
        for directory in sorted(shim_dirs):
            atomic_write_text(directory / f"{SHIM_MODULE}.py", render_shim_module(helpers))

    def build() -> MigrationReport:
        return _report(source, destination, report_file, files, rewritten, attention, mode, statuses, kept)

    if is_directory:
        with atomic_directory(destination) as staging:
            process(staging)
            report = build()
            if report_file.resolve().is_relative_to(destination.resolve()):
                staged_report = staging / report_file.resolve().relative_to(destination.resolve())
                atomic_write_text(staged_report, render_markdown(report))
            else:
                atomic_write_text(report_file, render_markdown(report))
    else:
        with tempfile.TemporaryDirectory(prefix="tfpilot-migrate-") as staging_name:
            process(Path(staging_name))
            shim_module = destination.with_name(f"{SHIM_MODULE}.py")
            if helpers and shim_module.exists() and "TF1_COMPAT_SHIMS_VERSION" not in shim_module.read_text("utf-8"):
                raise LintError(
                    f"`{shim_module}` exists and was not written by tfpilot migrate; the migrated file imports "
                    f"its helpers from a module of that name: pick a destination in another directory"
                )
            if helpers:
                atomic_write_text(shim_module, render_shim_module(helpers))
            atomic_write_text(destination, (Path(staging_name) / destination.name).read_text(encoding="utf-8"))
        report = build()
        atomic_write_text(report_file, render_markdown(report))
    if verify_timeout is not None:
        report = dataclasses.replace(report, verified=verify(destination, timeout=verify_timeout))
        atomic_write_text(report_file, render_markdown(report))
    return report


def entry_scripts(tree: Path) -> list[Path]:
    """Migrated files no other migrated file imports: the scripts a person runs."""
    files = [path for path in sorted(tree.rglob("*.py")) if path.name != f"{SHIM_MODULE}.py"]
    imported: set[str] = set()
    for path in files:
        try:
            parsed = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(parsed):
            if isinstance(node, ast.Import):
                imported.update(part for alias in node.names for part in alias.name.split("."))
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.update(node.module.split("."))
                imported.update(alias.name for alias in node.names)
    return [path for path in files if path.stem not in imported and path.name != "__init__.py"]


def _last_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if re.match(r"^[A-Za-z_.]+(Error|Exception|Exit)\b", line)]
    return (lines[-1] if lines else (stderr.strip().splitlines() or ["(no output)"])[-1])[:300]


def verify(destination: Path, *, timeout: float) -> tuple[RunResult, ...]:
    """Run every entry script of a migrated tree, each in a scratch copy (what they write stays out of DEST)."""
    import subprocess
    import sys
    import time

    tree = destination if destination.is_dir() else destination.parent
    scripts = entry_scripts(destination) if destination.is_dir() else [destination]
    results: list[RunResult] = []
    with tempfile.TemporaryDirectory(prefix="tfpilot-migrate-verify-") as scratch_name:
        scratch = Path(scratch_name) / "tree"
        if destination.is_dir():
            shutil.copytree(tree, scratch, ignore=shutil.ignore_patterns("*.migration.md", "MIGRATION_REPORT.md"))
        else:  # a single migrated file: it and its helper module, not the whole folder it was written into
            scratch.mkdir()
            for path in (destination, destination.with_name(f"{SHIM_MODULE}.py")):
                if path.exists():
                    shutil.copyfile(path, scratch / path.name)
        for script in scripts:
            relative = script.relative_to(tree)
            copy = scratch / relative
            started = time.perf_counter()
            try:
                done = subprocess.run(
                    [sys.executable, str(copy)], cwd=copy.parent, capture_output=True, text=True, timeout=timeout
                )
            except subprocess.TimeoutExpired:
                results.append(RunResult(relative.as_posix(), "timed out", time.perf_counter() - started))
                continue
            seconds = time.perf_counter() - started
            if done.returncode == 0:
                results.append(RunResult(relative.as_posix(), "ran", seconds))
            else:
                detail = f"exit {done.returncode}: {_last_error(done.stderr)}"
                results.append(RunResult(relative.as_posix(), "failed", seconds, detail))
    return tuple(results)


def _report(
    source: Path,
    destination: Path,
    report_file: Path,
    files: int,
    rewritten: list[MigrationItem],
    attention: list[MigrationItem],
    mode: str,
    statuses: list[FileStatus],
    kept: list[MigrationItem],
) -> MigrationReport:
    def order(item: MigrationItem) -> tuple[str, int, int, str]:
        return (item.path, item.line, item.column, item.code)

    return MigrationReport(
        source=source,
        destination=destination,
        report_path=report_file,
        files=files,
        rewritten=tuple(sorted(rewritten, key=order)),
        needs_person=tuple(sorted((item for item in attention if item.needs_person), key=order)),
        notes=tuple(sorted((item for item in attention if not item.needs_person), key=order)),
        mode=mode,
        statuses=tuple(sorted(statuses, key=lambda status: status.path)),
        kept_on_compat=tuple(sorted(kept, key=order)),
    )


def _effect(item: MigrationItem) -> str:
    if item.blocks_run:
        return "stops the file"
    if item.tool == "tfpilot" and item.code.startswith("TFP"):
        return "error when reached"  # an error-severity lint finding: Keras 3 raises there, or the result is wrong
    return "changes results"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render_markdown(report: MigrationReport) -> str:
    blocking = sum(item.blocks_run for item in report.needs_person)
    lines = [
        "# TensorFlow 2 / Keras 3 migration report",
        "",
        f"- Source: `{report.source}`",
        f"- Destination: `{report.destination}`",
        f"- Mode: {report.mode}",
        f"- Python files migrated: {report.files}; expected to run: {report.will_run} of {report.files}",
        f"- Rewritten automatically: {len(report.rewritten)} "
        f"(tf_upgrade_v2: {sum(1 for i in report.rewritten if i.tool == 'tf_upgrade_v2')}, "
        f"tfpilot: {sum(1 for i in report.rewritten if i.tool == 'tfpilot')})",
        f"- Needs a person: {len(report.needs_person)} ({blocking} stop a file from running, "
        f"{len(report.needs_person) - blocking} change what it computes)",
        f"- Notes (for information; the file runs as migrated): {len(report.notes)}",
        f"- Kept on tf.compat.v1 (runs; port to TF2 when convenient): {len(report.kept_on_compat)}",
    ]
    if report.verified:
        ran = sum(run.outcome == "ran" for run in report.verified)
        timed_out = sum(run.outcome == "timed out" for run in report.verified)
        lines.append(
            f"- Verified by running (--verify): {ran} of {len(report.verified)} entry scripts ran to the end"
            + (f", {timed_out} still running at the time limit" if timed_out else "")
        )
    lines += [
        "",
        "Line numbers of tf_upgrade_v2 entries refer to the source file; tfpilot entries refer to",
        'the migrated file in the destination. "Expected to run" means: it parses, its imports resolve',
        "here, it names no API this TensorFlow lacks, and TF1 graph code runs with v2 behaviour off.",
        "",
        "## Files",
        "",
        "| file | expected to run | what stops it | before you run it |"
        + (" rewritten as |" if report.mode == "native" else ""),
        "|---|---|---|---|" + ("---|" if report.mode == "native" else ""),
    ]
    for status in report.statuses:
        lines.append(
            f"| {_cell(status.path)} | {'yes' if status.will_run else 'no'} | "
            f"{_cell('; '.join(status.blockers))} | {_cell('; '.join(status.setup))} |"
            + (f" {_cell(status.rewrite)} |" if report.mode == "native" else "")
        )
    needed = sorted({key for status in report.statuses for key in status.setup})
    if needed:
        lines.append("")
        lines += [f"**{key}**: {SETUP_HELP.get(key, key)}" for key in needed]
    if report.verified:
        lines += [
            "",
            "## Verified by running",
            "",
            "`--verify` ran each entry script (a file no other migrated file imports) with `python FILE` in a",
            "scratch copy of the destination, from the script's folder.",
            "",
            "| script | outcome | seconds | last error |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {_cell(run.path)} | {run.outcome} | {run.seconds:.1f} | {_cell(run.detail)} |"
            for run in report.verified
        ]
    lines += ["", "## Needs a person", "", "What stops a file from running or changes what it computes.", ""]
    if report.needs_person:
        lines += [
            "| file | line | effect | tool | code | what | why | fix |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for item in report.needs_person:
            lines.append(
                f"| {_cell(item.path)} | {item.line}:{item.column} | {_effect(item)} | "
                f"{item.tool} | {item.code} | {_cell(item.message)} | {_cell(item.why)} | {_cell(item.fix)} |"
            )
    else:
        lines.append("Nothing.")
    if report.notes:
        lines += [
            "",
            "## Notes",
            "",
            "For information: tf_upgrade_v2's notes and tfpilot's findings about code that runs as migrated.",
            "",
            "| file | line | tool | code | what | fix |",
            "|---|---|---|---|---|---|",
        ]
        for item in report.notes:
            lines.append(
                f"| {_cell(item.path)} | {item.line}:{item.column} | {item.tool} | {item.code} | "
                f"{_cell(item.message)} | {_cell(item.fix)} |"
            )
    if report.kept_on_compat:
        lines += [
            "",
            "## Kept on tf.compat.v1",
            "",
            "These run as they are (TF1 graph code on tf.compat.v1). Port them to TF2 idioms when convenient",
            "(tf.function + GradientTape, keras.layers and keras.optimizers, tf.train.Checkpoint).",
            "",
            "| file | line | code | what | fix |",
            "|---|---|---|---|---|",
        ]
        for item in report.kept_on_compat:
            lines.append(
                f"| {_cell(item.path)} | {item.line}:{item.column} | {item.code} | {_cell(item.message)} | "
                f"{_cell(item.fix)} |"
            )
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
