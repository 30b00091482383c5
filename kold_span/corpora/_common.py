"""Helpers shared by the corpus readers: finding files, CSV rows with line numbers, bad records.

Bad records (the policy and report of `kold_span.data.bad_records`): every reader takes
`skip_bad=False`. By default the first bad record raises `DataError` naming the file, line
(or record key) and field. With `skip_bad=True` bad records are left out, a `BadRecordWarning`
says how many and why, and the full list is kept on the reader function as
`reader.last_report` (a `SkipReport`).
A record that cannot be told apart from its neighbours any more (a CSV syntax error, two
line-aligned files of different lengths) always raises: skipping could misalign the rest.
"""
from __future__ import annotations

import csv
import functools
import inspect
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Union

from kold_span.config.limits import LINE_BYTES, allow_csv_fields, csv_field_too_long
from kold_span.corpora import Reader
from kold_span.data.bad_records import BadRecords, BadRecordWarning, SkipReport
from kold_span.data.example import Example
from kold_span.data.jsonl import utf8_lines
from kold_span.errors import DataError

# How a user asks a reader to skip bad records, named in the error the first bad record raises.
HOW_TO_SKIP = ("the reader option skip_bad: true skips such records and lists them: "
               "convert --skip-bad, data.reader_options.skip_bad in a config")


def reports_skipped(name: str) -> Callable[[Callable[..., list[Example]]], Reader]:
    """Decorate a reader `fn(path, *, bad: BadRecords, **options)` into `fn(path, *, skip_bad=False, **options)`.

    After each call the decorated function's `last_report` holds the `SkipReport`;
    a `BadRecordWarning` is emitted when anything was skipped.

    Example:
        >>> @reports_skipped("toy")
        ... def read_toy(path, *, bad):
        ...     bad.handle(bad_field(f"{path}:2", "label", "expected 0 or 1, got '7'"))
        ...     return []
        >>> with warnings.catch_warnings(record=True):
        ...     read_toy("toy.csv", skip_bad=True)
        []
        >>> print(read_toy.last_report.summary())
        toy: skipped 1 bad record(s) in toy.csv:
          toy.csv:2: field 'label': expected 0 or 1, got '7'
    """
    def wrap(fn: Callable[..., list[Example]]) -> Reader:
        @functools.wraps(fn)
        def reader(path: Union[str, Path], *, skip_bad: bool = False, **options) -> list[Example]:
            report = SkipReport(name, Path(path))
            examples = fn(Path(path), bad=BadRecords(report, skip_bad, HOW_TO_SKIP), **options)
            reader.last_report = report  # type: ignore[attr-defined]
            if report.count or report.disagreements or report.notes:
                warnings.warn(report.summary(), BadRecordWarning, stacklevel=2)
            return examples
        reader.last_report = None  # type: ignore[attr-defined]
        # Introspection (help, option checks) should show `skip_bad`, not the internal `bad`.
        signature = inspect.signature(fn)
        skip_bad = inspect.Parameter("skip_bad", inspect.Parameter.KEYWORD_ONLY, default=False, annotation="bool")
        reader.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[skip_bad if p.name == "bad" else p for p in signature.parameters.values()])
        return reader
    return wrap


def bad_field(where: str, field_name: str, problem: str) -> DataError:
    """A `DataError` for one field of one record: '<where>: field <name>: <problem>'."""
    return DataError(f"{where}: field {field_name!r}: {problem}")


def find_file(path: Path, names: Iterable[str], corpus: str) -> Path:
    """`path` itself when it is a file, else the first of `names` inside the directory `path`."""
    names = list(names)
    if path.is_file():
        return path
    if path.is_dir():
        for name in names:
            if (path / name).is_file():
                return path / name
        raise FileNotFoundError(f"{corpus}: none of {names} found in directory {path}")
    raise FileNotFoundError(f"{corpus}: no such file or directory: {path}")


class CsvRecords:
    """The data rows of a CSV/TSV file, iterated as (record index, line where it starts, row dict).

    The index counts data records from 0, bad ones included, so ids built from it do not
    shift when bad records are skipped; after iteration `count` is the number of records.
    The header must contain every `required` column; a row whose number of fields differs
    from the header is a bad record (handed to `bad`); a CSV syntax error always raises.
    Blank lines are not records.
    """

    def __init__(self, path: Path, required: Iterable[str], bad: BadRecords, *, delimiter: str = ",",
                 quoting: int = csv.QUOTE_MINIMAL) -> None:
        self.path, self.required, self.bad = path, list(required), bad
        self.delimiter, self.quoting = delimiter, quoting
        self.count = 0

    def __iter__(self) -> Iterator[tuple[int, int, dict[str, str]]]:
        path, bad = self.path, self.bad
        allow_csv_fields()
        with path.open("rb") as f:
            rows = csv.reader(utf8_lines(f, path), delimiter=self.delimiter, quoting=self.quoting, strict=True)
            try:
                header = next(rows)
            except StopIteration:
                raise DataError(f"{path}: empty file, expected a header with columns {self.required}") from None
            except csv.Error as err:
                raise DataError(f"{path}:1: unreadable header ({err})") from err
            missing = [c for c in self.required if c not in header]
            if missing:
                found = header if len(header) <= 20 else header[:20] + [f"... ({len(header)} in all)"]
                raise DataError(f"{path}:1: header lacks column(s) {missing}; found {found}")
            self.count = 0
            start = rows.line_num + 1
            while True:
                try:
                    row = next(rows)
                except StopIteration:
                    return
                except csv.Error as err:
                    if csv_field_too_long(err):
                        raise DataError(LINE_BYTES.exceeded(f"{path}:{start}", "a field")) from None
                    raise DataError(f"{path}:{start}: malformed CSV ({err})") from err
                if row:
                    index = self.count
                    self.count += 1
                    if len(row) != len(header):
                        bad.handle(DataError(f"{path}:{start}: expected {len(header)} fields "
                                             f"({self.delimiter!r}-separated), got {len(row)}"))
                    else:
                        yield index, start, dict(zip(header, row))
                start = rows.line_num + 1


def parse_bool(value: Any, field_name: str, where: str = "") -> bool:
    """A boolean field: a JSON boolean, 0 or 1, or true / false in any case; anything else a `DataError`.

    Example:
        >>> parse_bool("True", "OFF"), parse_bool(0, "OFF"), parse_bool(" false", "OFF")
        (True, False, False)
    """
    if isinstance(value, bool):
        return value
    if value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    problem = f"expected a boolean, got {value!r}"
    raise bad_field(where, field_name, problem) if where else DataError(f"field {field_name!r}: {problem}")


def majority(votes: Counter) -> Optional[str]:
    """The most voted key; ties go to the alphabetically first key; None when there are no votes."""
    return min(votes, key=lambda key: (-votes[key], key)) if votes else None


def parse_int(value: str, where: str, field_name: str) -> int:
    """A decimal integer field, or a `DataError` naming it."""
    try:
        return int(value)
    except ValueError:
        raise bad_field(where, field_name, f"expected an integer, got {value!r}") from None
