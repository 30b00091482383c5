"""Input files for `kold-span predict` (txt, jsonl, csv, tsv) and the HTML rendering."""
from __future__ import annotations

import csv
import html
import json
import sys
import warnings
from pathlib import Path
from typing import Any, Iterator, Optional

from kold_span.data import DataError, Example, context_turns, utf8_lines

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


class HtmlWriter:
    """Writes predictions as an HTML page with spans highlighted in displaCy's span style."""

    def __init__(self, path: Path):
        import spacy
        from spacy.vocab import Vocab

        self.vocab = Vocab()
        self.displacy = spacy.displacy
        self.file = Path(path).open("w", encoding="utf-8")
        self.file.write("<!DOCTYPE html><html><head><meta charset='utf-8'><title>kold-span predictions</title>"
                        "</head><body style='font-family: sans-serif; max-width: 60em; margin: auto'>\n")

    def add(self, example: Example, prediction: dict[str, Any]) -> None:
        """Render one comment with its labels and spans."""
        from spacy.tokens import Doc, Span

        cuts = {c for s in prediction["spans"] for c in (s["start"], s["end"])}
        words, spaces, starts = doc_words(example.text, cuts)
        doc = Doc(self.vocab, words=words, spaces=spaces)
        spans = []
        for s in prediction["spans"]:
            first = next(i for i, st in enumerate(starts) if st >= s["start"])
            last = max(i for i, st in enumerate(starts) if st < s["end"])
            spans.append(Span(doc, first, last + 1, label=f"{s['type']} {s['score']:.2f}"))
        doc.spans["sc"] = spans
        labels = ", ".join(f"{name}: {html.escape(str(v['label']))}" for name, v in prediction["labels"].items())
        context = "<br>".join(html.escape(turn) for turn in context_turns(example.context))  # one line a turn
        self.file.write(f"<div style='margin: 1.5em 0'><div style='color: #666'>#{html.escape(example.id)} "
                        f"{context}</div><div><b>{labels}</b></div>\n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # spaCy warns about comments with no span
            markup = self.displacy.render(doc, style="span", page=False, jupyter=False)
        self.file.write(markup)
        self.file.write("</div>\n")

    def close(self) -> None:
        self.file.write("</body></html>\n")
        self.file.close()


def doc_words(text: str, cuts: set[int]) -> tuple[list[str], list[bool], list[int]]:
    """spaCy words (with trailing-space flags and start offsets) cut at spaces and at `cuts`."""
    bounds = {0, len(text)} | set(cuts)
    bounds |= {i for i in range(1, len(text)) if text[i].isspace() != text[i - 1].isspace()}
    words: list[str] = []
    spaces: list[bool] = []
    starts: list[int] = []
    ordered = sorted(bounds)
    for a, b in zip(ordered, ordered[1:]):
        piece = text[a:b]
        if piece == " " and words and not spaces[-1] and not words[-1].isspace():
            spaces[-1] = True
            continue
        words.append(piece)
        spaces.append(False)
        starts.append(a)
    return words, spaces, starts
