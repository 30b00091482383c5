"""Input files for `kold-span predict`: txt, jsonl, csv, tsv and Parquet, one bad-row policy for all.

`ReadOptions.open` is how the command and every Ray worker open one, so an output shard holds, byte
for byte, what `kold-span predict` writes for that shard alone.
"""
from __future__ import annotations

import csv
import errno
import logging
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Union

from kold_span.config.limits import LINE_BYTES, allow_csv_fields, csv_field_too_long
from kold_span.data.bad_records import BadRecords, SkipReport
from kold_span.data.example import Example, context_problem, id_text, text_problem
from kold_span.data.jsonl import parse_json_line, utf8_lines
from kold_span.errors import ArgumentError, DataError

log = logging.getLogger(__name__)
# Ids remembered to find repeated ones: a bounded set, so memory stays flat on any input size.
MAX_IDS_CHECKED = 1_000_000
DUPLICATE_WARNINGS = 5  # repeated ids named one by one; the rest counted

TEXT_COLUMNS = ("comment", "text")
CONTEXT_COLUMNS = ("title", "context")
ID_COLUMNS = ("id", "guid", "ID")
INPUT_SUFFIXES = (".txt", ".jsonl", ".csv", ".tsv", ".parquet")


def _pick(row: dict[str, Any], explicit: Optional[str], candidates: tuple[str, ...], where: str,
          required: bool) -> Optional[str]:
    """The column to use: the explicit one (must exist) or the first known name present."""
    if explicit:
        if explicit not in row:
            raise DataError(f"{where}: column {explicit[:40]!r} not found; columns are [{shown_names(sorted(row))}]")
        return explicit
    for name in candidates:
        if name in row:
            return name
    if required:
        raise DataError(f"{where}: no text column; expected one of {list(candidates)} "
                        f"(or pass --text-column); columns are [{shown_names(sorted(row))}]")
    return None


def _columns(row: dict[str, Any], where: str, text_col: Optional[str], context_col: Optional[str],
             id_col: Optional[str]) -> tuple[str, Optional[str], Optional[str]]:
    """The text, context and id columns of a row (`_pick` each)."""
    return (_pick(row, text_col, TEXT_COLUMNS, where, True), _pick(row, context_col, CONTEXT_COLUMNS, where, False),
            _pick(row, id_col, ID_COLUMNS, where, False))


def _row_example(row: dict[str, Any], number: int, where: str, text_col: Optional[str],
                 context_col: Optional[str], id_col: Optional[str]) -> Example:
    """One row as an example: its text (any string, "" too, as `Predictor.predict` takes), context and id."""
    tcol, ccol, icol = _columns(row, where, text_col, context_col, id_col)
    text = row[tcol]
    if problem := text_problem(text):
        raise DataError(f"{where}: field {tcol!r}: {problem}")
    context = row.get(ccol) if ccol else None
    if problem := context_problem(context):
        raise DataError(f"{where}: field {ccol!r} must be a string or a list of strings: {problem}")
    raw_id = row.get(icol) if icol else None
    example_id = id_text(raw_id) if raw_id not in (None, "") else str(number)
    if problem := text_problem(example_id):
        raise DataError(f"{where}: field {icol!r}: {problem}")
    return Example(id=example_id, text=text, context=context or None)


QUOTING = ("csv", "none")
# How a user of `kold-span predict` asks for bad rows to be skipped, named in the error of the first one.
HOW_TO_SKIP = "--skip-bad skips such rows and lists them"


def bad_rows(path: Path, skip: bool = False, how_to_skip: str = HOW_TO_SKIP) -> BadRecords:
    """The bad-row policy of one prediction input file, for `iter_inputs`: raise on the first bad row, or `skip` each
    into its `report` (with file and line). `how_to_skip` is the hint an error ends with ("" for none: the service's
    uploads cannot skip).

    Example:
        >>> bad = bad_rows(Path("in.jsonl"), skip=True)
        >>> bad.handle(DataError("in.jsonl:2: invalid JSON"))
        >>> bad.report.reasons
        ['in.jsonl:2: invalid JSON']
    """
    return BadRecords(SkipReport("predict", Path(path)), skip, how_to_skip)


def iter_inputs(path: Path, text_column: Optional[str] = None, context_column: Optional[str] = None,
                id_column: Optional[str] = None, bad: Optional[BadRecords] = None,
                quoting: str = "csv") -> Iterator[Example]:
    """Stream examples from a prediction input file; each bad row goes to `bad` (by default the first one raises).

    The file's name and the options are checked at once (an unknown suffix or a missing file
    raises here, not at the first row); the rows are read as the examples are taken. A row is
    named by its file and line (for Parquet, its row: 1 is the first), as in "in.csv:3: ...".

    `bad` is the bad-row policy (`bad_rows(path, skip=True)` skips bad rows, each noted once in
    `bad.report`; nothing is printed here). A .csv/.tsv header without the text column (or without
    a column named explicitly) is an error even when skipping, and so is a file whose every row was
    bad: either would otherwise end in no predictions and no error (a file of no rows at all is
    `non_empty`'s to refuse). A text is any string, "" too.
    `quoting` applies to .csv and .tsv: "csv" reads quoted fields as CSV writers (and pandas) write
    them, strictly, so a stray quote is an error rather than a comment swallowing the lines after
    it; "none" takes every character as it stands, for text with bare quotes.

    Example:
        >>> import tempfile
        >>> folder = tempfile.TemporaryDirectory()
        >>> path = Path(folder.name) / "in.csv"
        >>> _ = path.write_text("guid,title,comment\\ng1,국회 소식,좋은 기사\\n", encoding="utf-8")
        >>> [(ex.id, ex.context, ex.text) for ex in iter_inputs(path)]
        [('g1', '국회 소식', '좋은 기사')]
        >>> folder.cleanup()
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in INPUT_SUFFIXES:
        raise DataError(f"{path}: unsupported input type {suffix!r}; use .txt, .jsonl, .csv, .tsv or .parquet")
    if quoting not in QUOTING:
        raise ArgumentError(f"quoting must be one of {QUOTING}, got {quoting!r}")
    if not path.exists():
        if any(mark in path.name for mark in "*?["):
            raise FileNotFoundError(f"no such file: {path} (a pattern of many files is for "
                                    "`kold-span predict --engine ray`, which reads each as a shard)")
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    return _examples(path, suffix, text_column, context_column, id_column,
                     bad if bad is not None else bad_rows(path), quoting)


def non_empty(examples: Iterator[Example], path: Path) -> Iterator[Example]:
    """`examples`, and a `DataError` at their end if there was none (0 bytes, blank lines, a header alone, no rows).

    Raised as the last row is taken, inside `predict`'s writing: the output being written is dropped and
    the earlier one is kept, instead of an empty file replacing it.

    Example:
        >>> list(non_empty(iter([]), Path("in.csv")))
        Traceback (most recent call last):
        ...
        kold_span.errors.DataError: in.csv: no rows, nothing to predict (the file is empty, blank lines or a header alone)
    """
    read = 0
    for example in examples:
        read += 1
        yield example
    if not read:
        raise DataError(f"{path}: no rows, nothing to predict (the file is empty, blank lines or a header alone)")


@dataclass(frozen=True)
class ReadOptions:
    """How an input file is read: its columns, CSV quoting and bad-row policy (as `iter_inputs` takes them).

    Example:
        >>> ReadOptions(text_column="body").quoting
        'csv'
    """

    text_column: Optional[str] = None
    context_column: Optional[str] = None
    id_column: Optional[str] = None
    quoting: str = "csv"
    skip_bad: bool = False

    def open(self, source: Union[str, Path]) -> tuple[Iterator[Example], SkipReport]:
        """The examples of `source`, read as they are taken, and the report its skipped rows go to.

        The file's name and these options are checked at once (a missing file or an unknown suffix
        raises here, before any model loads or any output is opened); a file of no rows is a
        `DataError` when its end is reached (`non_empty`).

        Example:
            >>> ReadOptions().open("comments.xlsx")
            Traceback (most recent call last):
            ...
            kold_span.errors.DataError: comments.xlsx: unsupported input type '.xlsx'; use .txt, .jsonl, .csv, .tsv or .parquet
        """
        bad = bad_rows(Path(source), skip=self.skip_bad)
        examples = iter_inputs(Path(source), self.text_column, self.context_column, self.id_column, bad=bad,
                               quoting=self.quoting)
        return non_empty(examples, Path(source)), bad.report


def _examples(path: Path, suffix: str, text_column: Optional[str], context_column: Optional[str],
              id_column: Optional[str], bad: BadRecords, quoting: str) -> Iterator[Example]:
    """The rows of an input file whose name and options `iter_inputs` checked, as examples."""
    def check_header(header: list[str], where: str) -> None:
        # Once for the whole file: a missing column is no bad row to skip but a wrong file or option.
        _columns(dict.fromkeys(header, ""), where, text_column, context_column, id_column)

    read, seen, repeated = 0, {}, 0
    for number, row in _numbered_rows(path, suffix, quoting, check_header):
        where = f"{path}:{number}"
        try:
            if isinstance(row, Exception):
                raise row
            if suffix == ".txt" and not row["text"].strip():
                continue  # blank lines separate nothing in a one-comment-per-line file
            example = _row_example(row, number, where, text_column, context_column, id_column)
        except DataError as err:
            bad.handle(err)
            continue
        read += 1
        first = seen.get(example.id)
        if first is not None:  # both rows are predicted; whoever joins the output on id would keep one
            repeated += 1
            if repeated <= DUPLICATE_WARNINGS:
                log.warning("%s: id %r again (first at line %d); both rows are predicted", where, example.id[:40],
                            first)
        elif len(seen) < MAX_IDS_CHECKED:
            seen[example.id] = number
        yield example
    if repeated > DUPLICATE_WARNINGS:
        log.warning("%s: %d rows repeat an earlier id (the first %d named above)", path, repeated,
                    DUPLICATE_WARNINGS)
    if not read and bad.report.count:
        raise DataError(f"{path}: every row was bad ({bad.report.count} skipped), nothing to predict; "
                        f"the first: {bad.report.reasons[0]}")


def _numbered_rows(path: Path, suffix: str, quoting: str,
                   check_header: Callable[[list[str], str], None]) -> Iterator[tuple[int, Any]]:
    """(line or row number, {column: value} or the `DataError` of a bad row) per row of an input file."""
    if suffix == ".parquet":
        yield from _parquet_rows(path, check_header)
        return
    with path.open("rb") as f:
        lines = utf8_lines(f, path)
        if suffix == ".txt":
            yield from _text_lines(lines)
        elif suffix == ".jsonl":
            yield from _jsonl_rows(lines, path)
        else:
            yield from _table_rows(lines, path, "\t" if suffix == ".tsv" else ",", quoting, check_header)


def _text_lines(lines: Iterator[str]) -> Iterator[tuple[int, dict[str, str]]]:
    r"""(line number, {"text": line}) per line of a .txt file: \n, \r\n and a lone \r (old Mac files) each end one.

    Example:
        >>> list(_text_lines(iter(["a\r\n", "b\rc\n", "d"])))
        [(1, {'text': 'a'}), (2, {'text': 'b'}), (3, {'text': 'c'}), (4, {'text': 'd'})]
    """
    number = 0
    for line in lines:
        body = line[:-1] if line.endswith("\n") else line
        body = body[:-1] if body.endswith("\r") else body
        for part in body.split("\r"):
            number += 1
            yield number, {"text": part}


PARQUET_BATCH_ROWS = 4096  # rows read from a Parquet file at a time: memory stays flat on any file size


def _parquet_rows(path: Path, check_header: Callable[[list[str], str], None]) -> Iterator[tuple[int, Any]]:
    """(row number from 1, {column: value}) of every row of a Parquet file, read a batch of rows at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        reader = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise DataError(f"{path}: not a readable Parquet file ({err})") from None
    check_header(reader.schema_arrow.names, str(path))
    batches = reader.iter_batches(batch_size=PARQUET_BATCH_ROWS)
    yield from enumerate((row for batch in batches for row in batch.to_pylist()), 1)


def _table_rows(lines: Iterator[str], path: Path, delimiter: str, quoting: str,
                check_header: Callable[[list[str], str], None]) -> Iterator[tuple[int, Any]]:
    """(first line of the record, {column: field}) per record; a row of the wrong width is a `DataError`.

    A quoting error is raised, not yielded: after it the reader no longer knows where records begin,
    so no row after it could be trusted, skipped or not.
    """
    allow_csv_fields()
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
            if csv_field_too_long(err):
                raise DataError(LINE_BYTES.exceeded(f"{path}:{start}", "a field")) from None
            hint = ("under CSV quoting a field that starts with a quote must end with one, inner quotes "
                    "doubled; for text with bare quotes pass --quoting none") if quoting == "csv" else "malformed"
            raise DataError(f"{path}:{start}: {err}: {hint}") from None
        if not fields:
            continue  # a blank line
        if header is None:
            header = fields
            check_header(header, f"{path}:{start}")
            twice = repeated_names(header)
            if twice:
                log.warning("%s:%d: column(s) %s appear more than once in the header; the last of each is read",
                            path, start, shown_names(twice))
            continue
        if len(fields) != len(header):
            yield start, DataError(f"{path}:{start}: {len(fields)} fields, the header has {len(header)} "
                                   f"({shown_names(header, quote=False)})")
            continue
        yield start, dict(zip(header, fields))


def repeated_names(header: list[str]) -> list[str]:
    """The names a header holds more than once, sorted; in time linear in the columns (100,000 are read at once).

    Example:
        >>> repeated_names(["id", "text", "id", "a", "text", "id"])
        ['id', 'text']
    """
    return sorted(name for name, count in Counter(header).items() if count > 1)


def shown_names(names: list[str], quote: bool = True, most: int = 20) -> str:
    """Column names for a message: the first `most`, each cut to 40 characters, and how many more.

    Example:
        >>> shown_names(["id", "text"]), shown_names([str(i) for i in range(100)], quote=False, most=3)
        ("'id', 'text'", '0, 1, 2 and 97 more')
    """
    shown = ", ".join(repr(name[:40]) if quote else name[:40] for name in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _jsonl_rows(lines: Iterator[str], path: Path) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = parse_json_line(line, f"{path}:{number}")
        except DataError as err:
            yield number, err
            continue
        if not isinstance(row, dict):
            row = DataError(f"{path}:{number}: expected a JSON object")
        yield number, row

