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
from tfpilot.data.bad_records import Problem, problems_error
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


@dataclasses.dataclass
class _Rows:
    """The data rows as read, with the file line of each and the rows whose cell count is wrong."""

    header: list[str]
    rows: list[dict[str, str]]
    lines: list[int]  # file line of each row (blank lines and quoted line breaks counted)
    ragged: dict[int, int]  # file line -> number of cells, for rows whose count differs from the header's


def _read_rows(path: Path, encoding: str) -> _Rows:
    rows: list[dict[str, str]] = []
    lines: list[int] = []
    ragged: dict[int, int] = {}
    try:
        with path.open(newline="", encoding=encoding) as handle:
            reader = csv.DictReader(handle)
            header = list(reader.fieldnames or [])
            for row in reader:
                # DictReader puts extra cells under the key None and fills missing ones with None: a
                # row of the wrong width would otherwise lose cells, or gain empty ones, silently.
                cells = len(header) + len(row.get(None) or []) - sum(v is None for k, v in row.items() if k is not None)
                if cells != len(header):
                    ragged[reader.line_num] = cells
                rows.append({k: (v if isinstance(v, str) else "") for k, v in row.items() if k is not None})
                lines.append(reader.line_num)
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
    return _Rows(header=header, rows=rows, lines=lines, ragged=ragged)


def read_csv_table(config: DataConfig) -> CsvTable:
    path = Path(str(config.path))
    check_file_path(path, kind="csv")
    options = config.csv
    read = _read_rows(path, options.encoding)
    header, rows, row_lines = read.header, read.rows, read.lines
    if not rows:
        raise DataError(f"CSV `{path}` has no data rows; expected a header line and at least one row")
    # Every problem is collected before any is reported: fixing the file takes one round.
    problems: list[Problem] = []
    label_columns = list(options.label_columns or [])
    absent_labels = [c for c in (label_columns or [options.label_column]) if c not in header]
    if absent_labels:
        key = "data.csv.label_columns" if label_columns else "data.csv.label_column"
        named = f"label column(s) {absent_labels}" if label_columns else f"label column `{absent_labels[0]}`"
        problems.append(Problem(f"no {named} (columns: {header})", fix=f"fix `{key}`"))
    categorical = list(options.categorical_columns)
    listed_numeric = list(options.numeric_columns or [])
    missing_columns = [c for c in categorical + listed_numeric if c not in header]
    if missing_columns:
        problems.append(
            Problem(
                f"the file lacks column(s) {missing_columns} (columns: {header})",
                fix="fix data.csv.numeric_columns / categorical_columns",
            )
        )
        categorical = [c for c in categorical if c in header]
        listed_numeric = [c for c in listed_numeric if c in header]
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

    # file line -> why the row is a bad record (the first reason found for it).
    bad_lines: dict[int, str] = {}
    for line, cells in read.ragged.items():
        bad_lines[line] = f"{cells} cells, the header has {len(header)}"
    if read.ragged:
        problems.append(
            Problem(
                f"{len(read.ragged)} row(s) do not have the header's {len(header)} cells",
                [f"line {line} ({cells} cells)" for line, cells in read.ragged.items()],
                "fix the delimiters or quoting on those lines",
            )
        )
    non_numeric: dict[str, list[int]] = {}
    for column in numeric:
        lines = [
            line
            for r, line in zip(rows, row_lines, strict=True)
            if not _is_missing(r[column]) and not _is_number(r[column])
        ]
        if lines:
            non_numeric[column] = lines
    by_line = dict(zip(row_lines, rows, strict=True))
    for column, lines in non_numeric.items():
        for line in lines:
            bad_lines.setdefault(line, f"`{column}` = {by_line[line][column]!r}")
        values = sorted({by_line[line][column] for line in lines})[:3]
        problems.append(
            Problem(
                f"column `{column}` holds non-numbers {values}",
                [f"line {line}" for line in lines],
                "fix those cells, or list the column in data.csv.categorical_columns",
            )
        )
    empty_labels: list[int] = []
    if label_columns and not absent_labels:
        # One 0/1 column per label: an all-zero row is an example with no label, not a bad record.
        for column in label_columns:
            lines = [line for r, line in zip(rows, row_lines, strict=True) if _flag(r[column]) is None]
            if lines:
                non_numeric[column] = lines
                for line in lines:
                    bad_lines.setdefault(line, f"label `{column}` = {by_line[line][column]!r}")
                values = sorted({by_line[line][column] for line in lines})[:3]
                problems.append(
                    Problem(
                        f"label column `{column}` holds non-0/1 labels {values}",
                        [f"line {line}" for line in lines],
                        "write 1 (or true/yes) where the label applies and 0 or nothing where it does not",
                    )
                )
    elif not absent_labels:
        empty_labels = [line for r, line in zip(rows, row_lines, strict=True) if _is_missing(r[options.label_column])]
        for line in empty_labels:
            bad_lines.setdefault(line, f"empty label `{options.label_column}`")
        if empty_labels:
            problems.append(
                Problem(
                    f"label `{options.label_column}` is empty on {len(empty_labels)} row(s)",
                    [f"line {line}" for line in empty_labels],
                    "an empty label is never a class: fill those cells",
                )
            )
    good_rows = [r for r, line in zip(rows, row_lines, strict=True) if line not in bad_lines]
    empty_classes: list[str] = []
    if label_columns and not absent_labels:
        empty_classes = [c for c in label_columns if not any(_flag(r[c]) for r in good_rows)]
    elif not absent_labels:
        # A class all of whose rows are bad would vanish with skip: named, never dropped silently.
        every = {r[options.label_column].strip() for r in rows if not _is_missing(r[options.label_column])}
        empty_classes = sorted(every - {r[options.label_column].strip() for r in good_rows})
    if empty_classes:
        what = (
            f"{len(empty_classes)} label column(s) are on in no usable row"
            if label_columns
            else f"{len(empty_classes)} class(es) have rows only on the bad lines"
        )
        fix = (
            "a label with no examples cannot be learned: add rows that have it, or drop it from data.csv.label_columns"
            if label_columns
            else "fix those lines: with data.on_bad_records: skip these classes would have no examples"
        )
        if not skip:
            problems.append(Problem(what, empty_classes, fix))
        findings.append(
            Finding(
                code="DATA-EMPTY-CLASS",
                severity=Severity.WARNING,
                title=f"{len(empty_classes)} class(es) with no examples",
                message=f"`{path}`: {what} ({empty_classes}); "
                + (
                    "the model has an output for each that it never learns"
                    if label_columns
                    else "they are not classes of this model"
                ),
                location=str(path),
                evidence={"classes": empty_classes},
                fix=fix,
            )
        )
    if options.impute == Impute.ERROR:
        refused = {
            c: [line for r, line in zip(rows, row_lines, strict=True) if line not in bad_lines and _is_missing(r[c])]
            for c in numeric
        }
        refused = {c: lines for c, lines in refused.items() if lines}
        if refused:
            problems.append(
                Problem(
                    f"missing numeric values { {c: len(lines) for c, lines in refused.items()} } and data.csv.impute "
                    "is `error`",
                    [f"`{c}` line {line}" for c, lines in refused.items() for line in lines],
                    "fill them, or set data.csv.impute to mean, median or constant",
                )
            )
            if skip:
                # Missing cells are not bad records: impute: error refuses them whatever on_bad_records says.
                raise problems_error(str(path), [problems[-1]])
    # Without its columns the file cannot be read at all: skip has nothing to leave out.
    if (problems and not skip) or absent_labels or missing_columns:
        raise problems_error(str(path), problems, skippable=not (absent_labels or missing_columns))
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
    kept = [i for i, line in enumerate(row_lines) if line not in bad_lines]
    if not kept:
        raise DataError(f"CSV `{path}`: every row was a bad record; nothing is left to train on", exit_code=2)
    kept_rows = [rows[i] for i in kept]
    numeric_values = {
        c: np.asarray([np.nan if _is_missing(r[c]) else float(r[c]) for r in kept_rows], np.float32) for c in numeric
    }
    missing = {c: int(np.isnan(v).sum()) for c, v in numeric_values.items()}
    missing.update({c: sum(_is_missing(r[c]) for r in kept_rows) for c in categorical})
    holes = {c: n for c, n in missing.items() if n and c in numeric}
    if holes:
        # Filling a hole is changing the data: say where, and with what, even when it is the default.
        where = {c: _row_list([row_lines[kept[i]] for i in np.flatnonzero(np.isnan(numeric_values[c]))]) for c in holes}
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
        lines=np.asarray([row_lines[i] for i in kept], np.int64),
        findings=findings,
        missing=missing,
        non_numeric=non_numeric,
    )
