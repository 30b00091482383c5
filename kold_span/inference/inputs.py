"""Input files for `kold-span predict` (txt, jsonl, csv, tsv) and the HTML rendering."""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

from kold_span.data.example import Example
from kold_span.data.jsonl import utf8_lines
from kold_span.errors import DataError

TEXT_COLUMNS = ("comment", "text")
CONTEXT_COLUMNS = ("title", "context")
ID_COLUMNS = ("id", "guid", "ID")


def _pick(row: dict[str, Any], explicit: Optional[str], candidates: tuple[str, ...], where: str,
          required: bool) -> Optional[str]:
    """The column to use: the explicit one (must exist) or the first known name present."""
    if explicit:
        if explicit not in row:
            raise DataError(f"{where}: column {explicit!r} not found; columns are {sorted(row)}")
        return explicit
    for name in candidates:
        if name in row:
            return name
    if required:
        raise DataError(f"{where}: no text column; expected one of {list(candidates)} "
                        f"(or pass --text-column); columns are {sorted(row)}")
    return None


def _row_example(row: dict[str, Any], number: int, where: str, text_col: Optional[str],
                 context_col: Optional[str], id_col: Optional[str]) -> Example:
    tcol = _pick(row, text_col, TEXT_COLUMNS, where, True)
    ccol = _pick(row, context_col, CONTEXT_COLUMNS, where, False)
    icol = _pick(row, id_col, ID_COLUMNS, where, False)
    text = row[tcol]
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"{where}: field {tcol!r} is empty or not a string")
    context = row.get(ccol) if ccol else None
    if context is not None and not (isinstance(context, str)
                                    or (isinstance(context, list) and all(isinstance(c, str) for c in context))):
        raise DataError(f"{where}: field {ccol!r} must be a string or a list of strings")
    return Example(id=str(row[icol]) if icol and row.get(icol) not in (None, "") else str(number),
                   text=text, context=context or None)


QUOTING = ("csv", "none")


def iter_inputs(path: Path, text_column: Optional[str] = None, context_column: Optional[str] = None,
                id_column: Optional[str] = None, skip_bad: bool = False,
                skipped: Optional[list[str]] = None, quoting: str = "csv") -> Iterator[Example]:
    """Stream examples from a prediction input file; a bad row raises unless `skip_bad`.

    `quoting` applies to .csv and .tsv: "csv" reads quoted fields as CSV writers (and pandas) write
    them, strictly, so a stray quote is an error rather than a comment swallowing the lines after it;
    "none" takes every character as it stands, for text with bare quotes.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".txt", ".jsonl", ".csv", ".tsv"):
        raise DataError(f"{path}: unsupported input type {suffix!r}; use .txt, .jsonl, .csv or .tsv")
    if quoting not in QUOTING:
        raise ValueError(f"quoting must be one of {QUOTING}, got {quoting!r}")
    skipped = skipped if skipped is not None else []
    with path.open("rb") as f:
        lines = utf8_lines(f, path)
        if suffix == ".txt":
            rows: Iterator[tuple[int, Any]] = ((n, {"text": line.rstrip("\r\n")}) for n, line in enumerate(lines, 1))
        elif suffix == ".jsonl":
            rows = _jsonl_rows(lines, path)
        else:
            rows = _table_rows(lines, path, "\t" if suffix == ".tsv" else ",", quoting)
        for number, row in rows:
            where = f"{path}:{number}"
            try:
                if isinstance(row, Exception):
                    raise row
                if suffix == ".txt" and not row["text"].strip():
                    continue  # blank lines separate nothing in a one-comment-per-line file
                yield _row_example(row, number, where, text_column, context_column, id_column)
            except DataError as err:
                if not skip_bad:
                    raise
                skipped.append(str(err))
                print(f"skipped: {err}", file=sys.stderr)


def _table_rows(lines: Iterator[str], path: Path, delimiter: str, quoting: str) -> Iterator[tuple[int, Any]]:
    """(first line of the record, {column: field}) per record; a row of the wrong width is a `DataError`.

    A quoting error is raised, not yielded: after it the reader no longer knows where records begin,
    so no row after it could be trusted, skipped or not.
    """
    reader = csv.reader(lines, delimiter=delimiter, strict=True,
                        quoting=csv.QUOTE_NONE if quoting == "none" else csv.QUOTE_MINIMAL)
    header: Optional[list[str]] = None
    while True:
        start = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise DataError(f"{path}:{start}: {err}: under CSV quoting a field that starts with a quote "
                            "must end with one, inner quotes doubled; for text with bare quotes pass "
                            "--quoting none") from None
        if not fields:
            continue  # a blank line
        if header is None:
            header = fields
            continue
        if len(fields) != len(header):
            yield start, DataError(f"{path}:{start}: {len(fields)} fields, the header has {len(header)} "
                                   f"({', '.join(header)})")
            continue
        yield start, dict(zip(header, fields))


def _jsonl_rows(lines: Iterator[str], path: Path) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            yield number, DataError(f"{path}:{number}: invalid JSON ({err.msg} at column {err.colno})")
            continue
        if not isinstance(row, dict):
            row = DataError(f"{path}:{number}: expected a JSON object")
        yield number, row




def prediction_record(example: Example, prediction: dict[str, Any]) -> dict[str, Any]:
    """The object `kold-span predict` writes per comment: id, text, then the prediction's labels and spans.

    Example:
        >>> prediction_record(Example(id="7", text="바보"), {"id": "7", "labels": {}, "spans": []})
        {'id': '7', 'text': '바보', 'labels': {}, 'spans': []}
    """
    return {"id": example.id, "text": example.text, **{k: v for k, v in prediction.items() if k != "id"}}
