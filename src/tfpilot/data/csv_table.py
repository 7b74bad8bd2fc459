"""Reading a CSV as users write it: any encoding, any column names, missing and malformed cells.

Nothing is dropped or invented silently: a numeric column with a stray `3.4cm` is reported with
its row numbers (or those rows are skipped, with a finding naming each), an empty label is never
a class called "", and a text column nobody listed becomes a categorical input that the findings
mention, instead of disappearing.
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np

from tfpilot.config.schema import BadRecords, DataConfig, Impute
from tfpilot.errors import DataError
from tfpilot.findings import Finding, Severity

__all__ = ["CsvTable", "read_csv_table", "MISSING_TOKENS", "check_file_path"]

# Spellings of "no value" that pandas also reads as NaN by default.
MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "?", "-", "#n/a"})


def _is_missing(text: str) -> bool:
    return text.strip().lower() in MISSING_TOKENS


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_TRUE = frozenset({"1", "1.0", "true", "yes", "y", "t"})
_FALSE = frozenset({"0", "0.0", "false", "no", "n", "f"}) | MISSING_TOKENS


def _flag(text: str) -> bool | None:
    """A label column's cell: on, off (0, false, or empty), or None when it is neither."""
    cell = text.strip().lower()
    return True if cell in _TRUE else False if cell in _FALSE else None


def _label_cell(row: dict[str, str], label_column: str, label_columns: list[str], separator: str) -> str:
    """The row's label text; with data.csv.label_columns the names of the columns that are on,
    joined by the separator, so every multilabel CSV reaches the task as `a|c` cells."""
    if not label_columns:
        return row[label_column].strip()
    return separator.join(c for c in label_columns if _flag(row[c]))


def _row_list(rows: list[int], limit: int = 5) -> str:
    shown = ", ".join(str(r) for r in rows[:limit])
    return shown + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


def check_file_path(path: Path, *, kind: str) -> None:
    """A folder where a file is expected is a one-line error, not an IsADirectoryError traceback."""
    if path.is_dir():
        raise DataError(
            f"`data.path` is the folder `{path}`, but data.kind `{kind}` reads a file; point data.path at the "
            f"{kind} file inside it, or set data.kind: image_folder for a folder of class subfolders",
            exit_code=2,
        )
    if not path.is_file():
        raise DataError(f"`data.path` `{path}` does not exist; expected a {kind} file", exit_code=2)


@dataclasses.dataclass
class CsvTable:
    """The parsed table. line numbers are 1-based file lines (the header is line 1)."""

    header: list[str]
    numeric: dict[str, np.ndarray]  # float32, NaN where a cell is missing
    categorical: dict[str, np.ndarray]  # object arrays of str
    labels: list[str]
    lines: np.ndarray  # file line of each kept row
    findings: list[Finding]
    missing: dict[str, int]  # missing cells per feature column (kept rows)
    non_numeric: dict[str, list[int]]  # numeric column -> file lines holding a non-number


def _read_rows(path: Path, encoding: str) -> tuple[list[str], list[dict[str, str]]]:
    try:
        with path.open(newline="", encoding=encoding) as handle:
            reader = csv.DictReader(handle)
            header = list(reader.fieldnames or [])
            rows = [{k: (v if isinstance(v, str) else "") for k, v in row.items() if k is not None} for row in reader]
    except UnicodeDecodeError as exc:
        raise DataError(
            f"CSV `{path}` is not valid {encoding} (byte {exc.object[exc.start : exc.start + 1]!r} at offset "
            f"{exc.start}); set `data.csv.encoding` to the file's encoding, e.g. latin-1 or cp1252",
            exit_code=2,
        ) from None
    except LookupError:
        raise DataError(
            f"`data.csv.encoding` `{encoding}` is not a known text encoding; use e.g. utf-8, utf-8-sig, latin-1",
            exit_code=2,
        ) from None
    # A byte-order mark written by Excel would otherwise become part of the first column's name.
    if header and header[0].startswith("\ufeff"):
        rows = [{(k[1:] if k == header[0] else k): v for k, v in r.items()} for r in rows]
        header[0] = header[0][1:]
    return header, rows


def read_csv_table(config: DataConfig) -> CsvTable:
    path = Path(str(config.path))
    check_file_path(path, kind="csv")
    options = config.csv
    header, rows = _read_rows(path, options.encoding)
    if not rows:
        raise DataError(f"CSV `{path}` has no data rows; expected a header line and at least one row")
    label_columns = list(options.label_columns or [])
    if label_columns:
        absent = [c for c in label_columns if c not in header]
        if absent:
            raise DataError(
                f"CSV `{path}` lacks label column(s) {absent} (columns: {header}); fix `data.csv.label_columns`"
            )
    elif options.label_column not in header:
        raise DataError(
            f"CSV `{path}` has no label column `{options.label_column}` (columns: {header}); set `data.csv.label_column`"
        )
    categorical = list(options.categorical_columns)
    listed_numeric = list(options.numeric_columns or [])
    missing_columns = [c for c in categorical + listed_numeric if c not in header]
    if missing_columns:
        raise DataError(f"CSV `{path}` lacks column(s) {missing_columns}; available columns: {header}")
    findings: list[Finding] = []
    skip = config.on_bad_records == BadRecords.SKIP
    label_set = set(label_columns) if label_columns else {options.label_column}
    feature_columns = [c for c in header if c not in label_set]

    if options.numeric_columns is None:
        numeric: list[str] = []
        for column in feature_columns:
            if column in categorical:
                continue
            present = [r[column] for r in rows if not _is_missing(r[column])]
            parsed = sum(_is_number(v) for v in present)
            # Mostly numbers -> a numeric column whose odd cells are bad records (a typo like `3.4cm`);
            # mostly text -> categorical. Either way the column is kept and reported.
            if present and parsed * 2 > len(present):
                numeric.append(column)
            else:
                categorical.append(column)
                if column not in options.categorical_columns:
                    findings.append(
                        Finding(
                            code="DATA-COLUMN-CATEGORICAL",
                            severity=Severity.INFO,
                            title=f"column `{column}` read as categorical",
                            message=f"column `{column}` of `{path}` holds text, so it is one-hot encoded "
                            f"({len(set(present))} distinct values)",
                            location=str(path),
                            evidence={"column": column, "distinct": len(set(present))},
                            fix=f"list it in data.csv.numeric_columns or categorical_columns, or drop `{column}` "
                            "from the file if it is an id",
                        )
                    )
    else:
        numeric = listed_numeric
        unused = [c for c in feature_columns if c not in numeric and c not in categorical]
        if unused:
            findings.append(
                Finding(
                    code="DATA-COLUMN-UNUSED",
                    severity=Severity.WARNING,
                    title=f"{len(unused)} column(s) not used as inputs",
                    message=f"columns {unused} of `{path}` are in neither data.csv.numeric_columns nor "
                    "categorical_columns, so the model does not see them",
                    location=str(path),
                    evidence={"columns": unused},
                    fix="add them to data.csv.numeric_columns or categorical_columns if the model should use them",
                )
            )

    bad_lines: dict[int, str] = {}
    non_numeric: dict[str, list[int]] = {}
    for column in numeric:
        lines = [i + 2 for i, r in enumerate(rows) if not _is_missing(r[column]) and not _is_number(r[column])]
        if lines:
            non_numeric[column] = lines
            for line in lines:
                bad_lines.setdefault(line, f"`{column}` = {rows[line - 2][column]!r}")
    if label_columns:
        # One 0/1 column per label: an all-zero row is an example with no label, not a bad record.
        bad_flags = {c: [i + 2 for i, r in enumerate(rows) if _flag(r[c]) is None] for c in label_columns}
        for column, lines in bad_flags.items():
            if lines:
                non_numeric[column] = lines
                for line in lines:
                    bad_lines.setdefault(line, f"label `{column}` = {rows[line - 2][column]!r}")
        empty_labels: list[int] = []
    else:
        empty_labels = [i + 2 for i, r in enumerate(rows) if _is_missing(r[options.label_column])]
    for line in empty_labels:
        bad_lines.setdefault(line, f"empty label `{options.label_column}`")
    if bad_lines and not skip:
        details = []
        for column, lines in non_numeric.items():
            values = sorted({rows[line - 2][column] for line in lines})[:3]
            kind = "non-0/1 labels" if column in label_columns else "non-numbers"
            details.append(f"column `{column}` holds {kind} {values} on line(s) {_row_list(lines)}")
        if empty_labels:
            details.append(f"label `{options.label_column}` is empty on line(s) {_row_list(empty_labels)}")
        raise DataError(
            f"CSV `{path}`: " + "; ".join(details) + "; fix those cells, list text columns in "
            "data.csv.categorical_columns, or set data.on_bad_records: skip to leave the rows out",
            exit_code=2,
        )
    if bad_lines:
        skipped = sorted(bad_lines)
        findings.append(
            Finding(
                code="DATA-ROWS-SKIPPED",
                severity=Severity.WARNING,
                title=f"{len(skipped)} bad row(s) skipped",
                message=f"{len(skipped)} row(s) of `{path}` were left out (data.on_bad_records: skip): "
                + "; ".join(f"line {line}: {bad_lines[line]}" for line in skipped),
                location=str(path),
                evidence={"lines": skipped, "reasons": [bad_lines[line] for line in skipped]},
                fix="fix those cells in the file to train on every row",
            )
        )
    kept = [i for i in range(len(rows)) if i + 2 not in bad_lines]
    if not kept:
        raise DataError(f"CSV `{path}`: every row was a bad record; nothing is left to train on")
    kept_rows = [rows[i] for i in kept]
    numeric_values = {
        c: np.asarray([np.nan if _is_missing(r[c]) else float(r[c]) for r in kept_rows], np.float32) for c in numeric
    }
    missing = {c: int(np.isnan(v).sum()) for c, v in numeric_values.items()}
    missing.update({c: sum(_is_missing(r[c]) for r in kept_rows) for c in categorical})
    if options.impute == Impute.ERROR:
        holes = {c: n for c, n in missing.items() if n and c in numeric}
        if holes:
            column = next(iter(holes))
            lines = [kept[i] + 2 for i in np.flatnonzero(np.isnan(numeric_values[column]))]
            raise DataError(
                f"CSV `{path}`: missing numeric values {holes} (column `{column}` on line(s) {_row_list(lines)}) "
                "and data.csv.impute is `error`; fill them, or set data.csv.impute to mean, median or constant",
                exit_code=2,
            )
    holes = {c: n for c, n in missing.items() if n and c in numeric}
    if holes:
        # Filling a hole is changing the data: say where, and with what, even when it is the default.
        where = {c: _row_list([kept[i] + 2 for i in np.flatnonzero(np.isnan(numeric_values[c]))]) for c in holes}
        fill = (
            f"the constant {options.impute_value:g}"
            if options.impute == Impute.CONSTANT
            else f"the training split's {options.impute.value}"
        )
        findings.append(
            Finding(
                code="DATA-IMPUTED",
                severity=Severity.INFO,
                title=f"{sum(holes.values())} missing numeric value(s) filled",
                message=f"`{path}`: missing cells filled with {fill} (data.csv.impute: {options.impute.value}): "
                + "; ".join(f"`{c}` on line(s) {lines}" for c, lines in where.items()),
                location=str(path),
                evidence={"missing": holes, "impute": options.impute.value},
                fix="fill those cells in the file, or set data.csv.impute: error to refuse missing values",
            )
        )
    return CsvTable(
        header=header,
        numeric=numeric_values,
        categorical={c: np.asarray([r[c] for r in kept_rows], dtype=object).astype(str) for c in categorical},
        labels=[_label_cell(r, options.label_column, label_columns, options.label_separator) for r in kept_rows],
        lines=np.asarray([i + 2 for i in kept], np.int64),
        findings=findings,
        missing=missing,
        non_numeric=non_numeric,
    )
