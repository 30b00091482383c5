"""Fuzzing every corpus reader and every `kold-span predict` input format with random and mutated files.

The contract, checked on each file: every record of the input is either read (an example, or an output
row) or reported as skipped with its file and line (or record), or the read stops with a `DataError`
naming the file and the line (or record) — never another exception, never a record lost without a word.

Readers start from the invented corpora in tests/fixtures (whose shapes follow the released files),
`predict` inputs from rows Hypothesis draws (quotes, delimiters, line breaks, byte-order marks, NULs,
lone surrogates...), serialised as each format writes them. Then a file is mutated: bytes inserted,
deleted or replaced, lines dropped, repeated or swapped, the file cut short, one JSON value or CSV field
swapped for a random one — or replaced by random bytes. How many files each test tried is in
docs/ROBUSTNESS.md, with the command that counts them.
"""
from __future__ import annotations

import csv
import functools
import io
import json
import re
import tempfile
import warnings
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kold_span import corpora
from kold_span.cli import main
from kold_span.data.bad_records import BadRecordWarning
from kold_span.errors import DataError
from kold_span.inference.inputs import bad_rows, iter_inputs

from conftest import CORPORA, FIXTURE, ROOT, TINY, untrained_model

READER_EXAMPLES = 300  # files per reader (each read twice: skipping bad records and not)
INPUT_EXAMPLES = 300  # files per predict input format (each read twice)
PREDICT_EXAMPLES = 40  # files through `kold-span predict` with an untrained model
FUZZ = settings(deadline=None, report_multiple_bugs=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Bytes that matter to the formats: quoting, delimiters, line ends, JSON syntax, bad UTF-8, BOMs.
PIECES = [b'"', b"'", b",", b"\t", b"\n", b"\r", b"\r\n", b"\\", b"{", b"}", b"[", b"]", b":", b"\x00", b"\xff",
          b"\xed\xa0\x80", b"\\ud800", b"null", b"true", b"-1", b"1e999", b"NaN", b'""', b"\xef\xbb\xbf", b" ",
          "바보".encode(), b"0", b"1", b"False", b"none"]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 300) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8) | st.just("\ud800") | st.sampled_from(["0", "1", "True", "Sarcasm", "A: 응", "hate"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6)
FIELDS = st.text(st.sampled_from(list('ab 바,"\t\n\r\\0123') + ["\ufeff"]), max_size=8) | st.sampled_from(
    ["True", "False", "[1, 2]", "[-1]", "[999]", "0", "1", "none", "hate", "gender"])


# --------------------------------------------------------------------------- mutations


@st.composite
def byte_mutations(draw, raw: bytes) -> bytes:
    """`raw` with one to four random edits of its bytes or lines."""
    data = bytearray(raw)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "replace", "drop_line", "repeat_line", "swap_lines",
                                     "truncate"]))
        at = draw(st.integers(0, len(data)))
        piece = draw(st.sampled_from(PIECES) | st.binary(min_size=1, max_size=4))
        if kind == "insert":
            data[at:at] = piece
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 8))]
        elif kind == "replace":
            data[at:at + len(piece)] = piece
        elif kind == "truncate":
            del data[at:]
        else:
            lines = bytes(data).splitlines(keepends=True)
            if not lines:
                continue
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            if kind == "drop_line":
                del lines[i]
            elif kind == "repeat_line":
                lines.insert(j, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            data = bytearray(b"".join(lines))
    return bytes(data)


@st.composite
def json_value_swap(draw, raw: bytes) -> bytes:
    """A JSON file with one value somewhere inside replaced by a random one (or the file as it was)."""
    try:
        tree = json.loads(raw.decode("utf-8"))
    except ValueError:
        return raw
    paths = list(_json_paths(tree, ()))
    if not paths:
        return raw
    path = draw(st.sampled_from(paths))
    value = draw(JSON_VALUES)
    if not path:
        tree = value
    else:
        parent = tree
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = value
    return json.dumps(tree, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1]))).encode(
        "utf-8", "surrogatepass")


def _json_paths(node: Any, path: tuple) -> Iterator[tuple]:
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _json_paths(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _json_paths(value, path + (i,))


@st.composite
def jsonl_value_swap(draw, raw: bytes) -> bytes:
    """A JSONL file with one line's value swapped as `json_value_swap` does."""
    lines = raw.split(b"\n")
    i = draw(st.integers(0, len(lines) - 1))
    if lines[i].strip():
        lines[i] = draw(json_value_swap(lines[i])).replace(b"\n", b" ")
    return b"\n".join(lines)


@st.composite
def csv_field_swap(draw, raw: bytes, delimiter: str) -> bytes:
    """A CSV/TSV file re-written with one field (or the width of one row) changed, quoted as CSV writers quote."""
    try:
        rows = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline=""), delimiter=delimiter))
    except (ValueError, csv.Error):
        return raw
    if not rows:
        return raw
    i = draw(st.integers(0, len(rows) - 1))
    if rows[i] and draw(st.booleans()):
        rows[i][draw(st.integers(0, len(rows[i]) - 1))] = draw(FIELDS)
    elif draw(st.booleans()):
        rows[i].append(draw(FIELDS))
    elif rows[i]:
        rows[i].pop()
    out = io.StringIO(newline="")
    csv.writer(out, delimiter=delimiter, lineterminator=draw(st.sampled_from(["\n", "\r\n"]))).writerows(rows)
    return out.getvalue().encode("utf-8", "surrogatepass")


def mutation(raw: bytes, kind: str) -> st.SearchStrategy[bytes]:
    """A mutated version of `raw`, a file of `kind` ("json", "jsonl", "csv", "tsv" or "text")."""
    structural = {"json": lambda: json_value_swap(raw), "jsonl": lambda: jsonl_value_swap(raw),
                  "csv": lambda: csv_field_swap(raw, ","), "tsv": lambda: csv_field_swap(raw, "\t")}.get(kind)
    options = [byte_mutations(raw), st.binary(max_size=120)]
    if structural:
        options += [structural(), structural().flatmap(byte_mutations)]
    return st.one_of(options)


# --------------------------------------------------------------------------- counting records, as the formats define them


def decoded_lines(raw: bytes) -> Optional[list[str]]:
    """The lines of a UTF-8 file as the package reads them (split at \\n only, ends kept, BOM dropped); None if not UTF-8."""
    try:
        lines = [line.decode("utf-8") for line in io.BytesIO(raw)]
    except UnicodeDecodeError:
        return None
    if lines:
        lines[0] = lines[0].removeprefix("\ufeff")
    return lines


def table_records(raw: bytes, delimiter: str, quote_none: bool = False) -> Optional[list[tuple[int, list[str]]]]:
    """(first line, fields) of every non-blank CSV record, the header first; None when the file cannot be parsed."""
    lines = decoded_lines(raw)
    if lines is None:
        return None
    reader = csv.reader(lines, delimiter=delimiter, strict=True,
                        quoting=csv.QUOTE_NONE if quote_none else csv.QUOTE_MINIMAL)
    records = []
    while True:
        start = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            return records
        except csv.Error:
            return None
        if fields:
            records.append((start, fields))


def json_document(raw: bytes) -> Any:
    """The parsed JSON document, or a sentinel when it is none."""
    try:
        return json.loads(raw.decode("utf-8").removeprefix("\ufeff"))
    except ValueError:
        return NOT_JSON


NOT_JSON = object()


# --------------------------------------------------------------------------- the readers

# reader name → (fixture files, the one passed as path or None for the directory, kind of each file)
FIXTURE_FOLDER = {"toxic_spans_raw": "toxic_spans"}
CORPUS_FILES = {
    "toxic_spans": (["tsd_train.csv"], "tsd_train.csv", {"tsd_train.csv": "csv"}),
    "toxic_spans_raw": (["comments.csv", "annotations.csv", "spans.csv"], None,
                        {"comments.csv": "csv", "annotations.csv": "csv", "spans.csv": "csv"}),
    "beep": (["train.tsv", "train.news_title.txt"], None, {"train.tsv": "tsv", "train.news_title.txt": "text"}),
    "unsmile": (["unsmile_train_v1.0.tsv"], "unsmile_train_v1.0.tsv", {"unsmile_train_v1.0.tsv": "tsv"}),
    "kocosa": (["KoCoSa_dev.json"], "KoCoSa_dev.json", {"KoCoSa_dev.json": "json"}),
    "irosva": (["irosva.es.training.csv"], "irosva.es.training.csv", {"irosva.es.training.csv": "csv"}),
    "multipico": (["MP_dev.json", "MP_annotators_meta.json"], None,
                  {"MP_dev.json": "json", "MP_annotators_meta.json": "json"}),
    # the training side: a directory of three JSON Lines files (the valid side's JSON list is read as kold's)
    "kold_gs": (["detection_easy.jsonl", "detection_medium.jsonl", "detection_hard.jsonl"], None,
                {"detection_easy.jsonl": "jsonl", "detection_medium.jsonl": "jsonl", "detection_hard.jsonl": "jsonl"}),
    # the functional suite's templates (YAML, mutated as text)
    "functional": (["functional.yaml"], "functional.yaml", {"functional.yaml": "text"}),
}


def _kold_seeds() -> dict[str, bytes]:
    records = json.loads(FIXTURE.read_text(encoding="utf-8"))[:8]
    return {"kold.json": json.dumps(records, ensure_ascii=False, indent=1).encode("utf-8"),
            "kold.jsonl": "\n".join(json.dumps(r, ensure_ascii=False) for r in records).encode("utf-8") + b"\n"}


def _jsonl_seed() -> bytes:
    from kold_span.data.jsonl import write_jsonl

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "gold.jsonl"
        write_jsonl(corpora.read("kold", FIXTURE)[:6], path)
        return path.read_bytes()


@functools.lru_cache(maxsize=None)
def reader_case(name: str) -> st.SearchStrategy:
    """(files {name: bytes}, name of the file to read, or None to read the directory)."""
    if name in ("kold", "jsonl"):
        seeds = _kold_seeds() if name == "kold" else {"gold.jsonl": _jsonl_seed()}
        kinds = {"kold.json": "json", "kold.jsonl": "jsonl", "gold.jsonl": "jsonl"}
        return st.sampled_from(sorted(seeds)).flatmap(
            lambda file: mutation(seeds[file], kinds[file]).map(lambda raw: ({file: raw}, file)))
    files, path_name, kinds = CORPUS_FILES[name]
    seeds = {f: (CORPORA / FIXTURE_FOLDER.get(name, name) / f).read_bytes() for f in files}
    return st.sampled_from(files).flatmap(
        lambda target: mutation(seeds[target], kinds[target]).map(
            lambda raw: ({**seeds, target: raw}, path_name)))


@contextmanager
def corpus_folder(files: dict[str, bytes]) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        for name, raw in files.items():
            (Path(folder) / name).write_bytes(raw)
        yield Path(folder)


def expected_records(name: str, folder: Path, path: Path) -> Optional[dict[str, int]]:
    """Records per file that a successful read must account for (read + skipped); None where not countable."""
    def table(file: str, delimiter: str = ",", quote_none: bool = False) -> Optional[int]:
        records = table_records((folder / file).read_bytes(), delimiter, quote_none)
        return None if records is None else max(0, len(records) - 1)

    if name in ("toxic_spans", "irosva"):
        return {path.name: table(path.name)}
    if name == "unsmile":
        return {path.name: table(path.name, "\t", quote_none=True)}
    if name == "beep":
        return {"train.tsv": table("train.tsv", "\t")}
    if name == "toxic_spans_raw":
        return {"comments.csv": table("comments.csv"), "annotations.csv": table("annotations.csv")}
    if name in ("jsonl", "kold") and path.suffix == ".jsonl":
        lines = decoded_lines(path.read_bytes())
        return {path.name: None if lines is None else sum(1 for line in lines if line.strip())}
    document = json_document(path.read_bytes())
    if name == "kold":
        return {path.name: len(document) if isinstance(document, list) else None}
    if name == "multipico":
        return {path.name: len(document) if isinstance(document, dict) else None}
    if name == "kocosa":
        columns = ("Context", "Response", "Sarcasm_Label", "Sarcasm_Explanation")
        if not isinstance(document, dict) or not all(isinstance(document.get(c), dict) for c in columns):
            return {path.name: None}
        return {path.name: len(set().union(*(document[c] for c in columns)))}
    return None


# What is wrong with a whole file rather than with one of its records: said of the file, with no line.
WHOLE_FILE = re.compile(r": (empty file|expected a JSON object|\d+ title lines but|column '\w+' missing"
                        r"|a YAML document too large)")


def names_file_and_place(message: str, files: list[Path]) -> bool:
    """Whether an error message names one of the files and a line or record in it (or a fault of the whole file)."""
    return any(re.search(re.escape(str(file)) + r"(:\d+[: ]|: record )", message)
               or (message.startswith(f"{file}: ") and WHOLE_FILE.match(message, len(str(file))))
               for file in files)


def check_reader(name: str, files: dict[str, bytes], path_name: Optional[str], skip_bad: bool) -> None:
    """Read one (mutated) corpus and check the contract (see the module docstring)."""
    reader = corpora.get_reader(name)
    with corpus_folder(files) as folder:
        path = folder / path_name if path_name else folder
        options = {"skip_bad": skip_bad} if name != "jsonl" else {}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", BadRecordWarning)
                examples = corpora.read(name, path, **options)
        except DataError as err:
            assert names_file_and_place(str(err), [folder / f for f in files] + [folder]), str(err)
            event(f"skip_bad={skip_bad}: stopped with a DataError")
            return
        report = getattr(reader, "last_report", None)
        skipped = report.reasons if report is not None else []
        event(f"skip_bad={skip_bad}: read" + (", some records skipped" if skipped else ""))
        if not skip_bad:
            assert skipped == []
        expected = expected_records(name, folder, path if path_name else folder / CORPUS_FILES[name][0][0])
        for file, count in (expected or {}).items():
            if count is None:
                continue
            reasons = [r for r in skipped if str(folder / file) in r]
            if name == "toxic_spans_raw" and file == "annotations.csv":
                read_here = sum(len(ex.annotations) for ex in examples)
            else:
                read_here = len(examples)
            assert read_here + len(reasons) == count, (file, read_here, reasons, count)


@pytest.mark.parametrize("name", sorted(corpora.available()))
@settings(FUZZ, max_examples=READER_EXAMPLES)
@given(data=st.data())
def test_every_reader_keeps_the_contract_on_random_and_mutated_files(name, data):
    files, path_name = data.draw(reader_case(name))
    for skip_bad in (False, True):
        check_reader(name, files, path_name, skip_bad)


# --------------------------------------------------------------------------- predict's input formats


CHARS = st.sampled_from(list('ab 바보,;"\'\t\n\r\\{}[]:#') + ["\u2028", "\ufeff", "\x00", "\ud800", "\x85", "é"])
CELL = st.text(CHARS, max_size=10)
ROW = st.fixed_dictionaries({"id": st.one_of(CELL, st.integers(), st.none()),
                             "text": st.one_of(CELL, CELL, CELL, st.none(), st.integers()),
                             "title": st.one_of(CELL, st.none(), st.lists(CELL, max_size=2))})


@st.composite
def input_file(draw, suffix: str) -> tuple[bytes, dict[str, Any]]:
    """(the bytes of a predict input file, options of iter_inputs), possibly mutated."""
    rows = draw(st.lists(ROW, max_size=8))
    options: dict[str, Any] = {}
    if suffix == ".txt":
        text = "\n".join(str(r["text"]) for r in rows) + draw(st.sampled_from(["", "\n", "\r\n"]))
        raw = text.encode("utf-8", "surrogatepass")
    elif suffix == ".jsonl":
        ascii_only = draw(st.booleans())
        lines = [json.dumps({k: v for k, v in r.items() if v is not None or draw(st.booleans())},
                            ensure_ascii=ascii_only) for r in rows]
        raw = "\n".join(lines).encode("utf-8", "surrogatepass")
    else:
        delimiter = "," if suffix == ".csv" else "\t"
        columns = draw(st.permutations(["id", "text", "title"]))
        names = {"id": draw(st.sampled_from(["id", "guid", "key"])),
                 "text": draw(st.sampled_from(["text", "comment", "body"])),
                 "title": draw(st.sampled_from(["title", "context"]))}
        if names["text"] == "body" and draw(st.booleans()):
            options["text_column"] = "body"
        options["quoting"] = draw(st.sampled_from(["csv", "none"]))
        out = io.StringIO(newline="")
        writer = csv.writer(out, delimiter=delimiter)
        writer.writerow([names[c] for c in columns])
        writer.writerows([[("" if r[c] is None else str(r[c])) for c in columns] for r in rows])
        raw = out.getvalue().encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        kind = {".txt": "text", ".jsonl": "jsonl", ".csv": "csv", ".tsv": "tsv"}[suffix]
        raw = draw(mutation(raw, kind))
    return raw, options


def line_of(reason: str, path: Path) -> int:
    """The line a skip reason names ("PATH:LINE: ...")."""
    match = re.match(re.escape(str(path)) + r":(\d+): ", reason)
    assert match, f"a skipped row without its line: {reason}"
    return int(match.group(1))


def source_rows(raw: bytes, suffix: str, options: dict[str, Any]) -> Optional[list[tuple[int, Any]]]:
    """(line, what the row holds) for every row of the file, as its format defines rows; None when the whole
    file cannot be parsed (then only an error naming a line is acceptable)."""
    if suffix in (".txt", ".jsonl"):
        lines = decoded_lines(raw)
        if lines is None:
            return None
        if suffix == ".txt":  # \n, \r\n and a lone \r each end a line
            pieces = re.split(r"\r\n|\r|\n", "".join(lines))
            return [(n, piece) for n, piece in enumerate(pieces, 1) if piece.strip()]
        rows = [(n, line.rstrip("\r\n")) for n, line in enumerate(lines, 1) if line.strip()]
        return [(n, json_document(line.encode("utf-8", "surrogatepass"))) for n, line in rows]
    records = table_records(raw, "," if suffix == ".csv" else "\t", options.get("quoting") == "none")
    if records is None:
        return None
    return [(line, fields) for line, fields in records[1:]]


def check_inputs(raw: bytes, suffix: str, options: dict[str, Any], skip: bool, folder: Path) -> None:
    """Read one predict input file and check the contract against the rows of the file."""
    path = folder / f"in{suffix}"
    path.write_bytes(raw)
    bad = bad_rows(path, skip=skip)
    examples = []
    stopped: Optional[DataError] = None
    try:
        for example in iter_inputs(path, bad=bad, **options):
            examples.append(example)
    except DataError as err:
        stopped = err
    reported = [line_of(reason, path) for reason in bad.report.reasons]
    assert len(set(reported)) == len(reported), "a row reported twice"
    if not skip:
        assert reported == []
    rows = source_rows(raw, suffix, options)
    event(f"skip={skip}: " + ("stopped with a DataError" if stopped else "read") + (", some rows skipped" if reported
                                                                                   else ""))
    if stopped is not None:
        message = str(stopped)
        match = re.match(re.escape(str(path)) + r":(\d+): ", message)
        if match is None:  # the one file-level error: every row bad; it names the first bad row
            assert message.startswith(f"{path}: every row was bad ({bad.report.count} skipped)"), message
            assert examples == [] and bad.report.count > 0
            return
        if rows is not None:  # every row before the one that stopped the read was read or reported
            before = [n for n, _ in rows if n < int(match.group(1))]
            assert len(examples) + len(reported) == len(before), (message, before, reported)
        return
    assert rows is not None, "a file that cannot be parsed was read without an error"
    assert len(examples) + len(reported) == len(rows), (rows, reported, examples)
    assert set(reported) <= {n for n, _ in rows}
    read_rows = [(n, row) for n, row in rows if n not in reported]
    for example, (number, row) in zip(examples, read_rows, strict=True):
        if suffix == ".txt":
            assert (example.id, example.text) == (str(number), row)
        elif suffix == ".jsonl":
            assert example.text in [row.get(k) for k in ("comment", "text")]
        else:
            assert example.text in row


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@pytest.mark.parametrize("suffix", [".txt", ".jsonl", ".csv", ".tsv"])
@settings(FUZZ, max_examples=INPUT_EXAMPLES)
@given(data=st.data())
def test_every_predict_input_format_keeps_the_contract(suffix, folder, data):
    raw, options = data.draw(input_file(suffix))
    for skip in (False, True):
        check_inputs(raw, suffix, options, skip, folder)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return untrained_model(tmp_path_factory.mktemp("untrained") / "model")


@settings(FUZZ, max_examples=PREDICT_EXAMPLES)
@given(suffix=st.sampled_from([".txt", ".jsonl", ".csv", ".tsv"]), data=st.data(), skip=st.booleans())
def test_kold_span_predict_keeps_the_contract_end_to_end(model, folder, suffix, data, skip):
    raw, options = data.draw(input_file(suffix))
    source, out = folder / f"in{suffix}", folder / "out.jsonl"
    source.write_bytes(raw)
    out.unlink(missing_ok=True)
    bad = bad_rows(source, skip=skip)
    try:
        expected = [(ex.id, ex.text) for ex in iter_inputs(source, bad=bad, **options)]
    except DataError as err:
        expected, stopped = None, str(err)
    argv = ["predict", "--model", str(model), "--input", str(source), "--output", str(out), "--quiet",
            "--batch-size", "3", *(["--skip-bad"] if skip else [])]
    argv += [f"--{key.replace('_', '-')}={value}" for key, value in options.items()]
    captured = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(captured):
        code = main(argv)  # any exception but the project's errors escapes and fails the test
    err = captured.getvalue()
    event(f"exit status {code}" + (", some rows skipped" if bad.report.count else ""))
    if expected is None:
        # warnings about rows read before the bad one (a repeated id, say) may come first
        assert code == 2 and f"\nkold-span predict: error: {stopped}" in "\n" + err
        partial = folder / "out.jsonl.partial"
        assert not out.exists() and (not partial.exists() or f"kept in {partial}" in err)
        partial.unlink(missing_ok=True)
        return
    if expected == []:  # a file of no rows: an error, no empty output
        # a header's warnings (a repeated column, say) may come first
        assert code == 2 and f"\nkold-span predict: error: {source}: no rows, nothing to predict" in "\n" + err, err
        assert not out.exists()
        return
    assert code == 0, err
    # One row a line, split at \n only: a text may hold U+2028 or U+0085, which JSON leaves as they are.
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n")[:-1]]
    assert [(r["id"], r["text"]) for r in rows] == expected
    for reason in bad.report.reasons:
        assert err.count(reason) == 1



# --------------------------------------------------------------------------- model directories

MODEL_EXAMPLES = 100  # mutated model directories loaded (and, when they load, predicted with)
MODEL_FILES = ["config.json", "model.safetensors", "tokenizer/tokenizer.json", "tokenizer/tokenizer_config.json",
               "tokenizer/special_tokens_map.json", "manifest.json"]


@st.composite
def model_damage(draw, directory: Path) -> tuple[str, str, Optional[bytes], bool]:
    """(file, kind of damage, its new bytes or None for removed, manifest written again after it)."""
    present = [name for name in MODEL_FILES if (directory / name).exists()]
    name = draw(st.sampled_from(present))
    raw = (directory / name).read_bytes()
    if name == "model.safetensors":
        kind = draw(st.sampled_from(["truncate", "flip", "remove"]))
        if kind == "truncate":
            return name, kind, raw[:draw(st.integers(0, len(raw) - 1))], draw(st.booleans())
        if kind == "flip":
            at = draw(st.integers(0, len(raw) - 1))
            return name, kind, raw[:at] + bytes([raw[at] ^ draw(st.integers(1, 255))]) + raw[at + 1:], draw(
                st.booleans())
        return name, kind, None, False
    if draw(st.integers(0, 9)) == 0:
        return name, "remove", None, draw(st.booleans())
    if name.endswith(".json") and draw(st.booleans()):
        return name, "value", draw(json_value_swap(raw)), draw(st.booleans())
    return name, "bytes", draw(byte_mutations(raw)), draw(st.booleans())


def check_model_directory(model: Path, folder: Path, name: str, kind: str, raw: Optional[bytes], rehash: bool,
                          verify: bool) -> None:
    """Load a damaged copy of `model`: it loads and predicts, or a `ModelFormatError` names what is wrong."""
    from kold_span.errors import KoldSpanError, ModelFormatError
    from kold_span.inference.predictor import Predictor
    from kold_span.models.manifest import write_manifest

    import shutil

    copy = folder / "damaged"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(model, copy)
    if raw is None:
        (copy / name).unlink()
    else:
        (copy / name).write_bytes(raw)
    changed = raw != (model / name).read_bytes() if raw is not None else True
    if rehash and name != "manifest.json":
        write_manifest(copy)
    try:
        predictor = Predictor.from_pretrained(copy, verify=verify)
    except ModelFormatError as err:
        event(f"verify={verify}: refused")
        assert str(copy) in str(err), err  # names the directory, or a file in it
        return
    except FileNotFoundError as err:  # the one file no model directory is without
        event(f"verify={verify}: refused (not found)")
        assert str(copy) in str(err)
        return
    event(f"verify={verify}: loaded")
    if verify and changed and not rehash and name != "manifest.json":
        raise AssertionError(f"{name} changed ({kind}) but the manifest check passed it")
    try:
        [out] = predictor.predict(["좋은 기사 바보"], contexts=["제목"])
    except KoldSpanError:
        return
    assert set(out) >= {"labels", "spans"}


@settings(FUZZ, max_examples=MODEL_EXAMPLES)
@given(data=st.data(), verify=st.booleans())
def test_a_damaged_model_directory_loads_or_is_refused_naming_it(model, folder, data, verify):
    name, kind, raw, rehash = data.draw(model_damage(model))
    check_model_directory(model, folder, name, kind, raw, rehash, verify)


# --------------------------------------------------------------------------- model directories written

WRITE_EXAMPLES = 40  # replacements of a model directory, each stopped at a drawn step (or not at all)
STARTS = ["absent", "empty", "model", "other files", "stale folders", "moved aside", "a file"]
# Where a save is stopped: the steps of `write_model_dir`, the renames of the swap (the old folder aside, the new one
# in), or the rename that puts back a folder a killed run had moved aside.
STOPS = [None, "weights", "tokenizer", "manifest", "aside", "in", "put back"]


class Stop(Exception):
    """The failure a step is made to raise (Ctrl-C or a full disk, as drawn)."""


def _start(folder: Path, target: Path, start: str, old: Path) -> Optional[dict[str, bytes]]:
    """Lay out `target` as `start` says; returns the files a failed replacement must leave there (None: none)."""
    import shutil

    if start in ("model", "stale folders"):
        shutil.copytree(old, target)
    if start == "stale folders":
        (folder / f".{target.name}.new-0123abcd").mkdir()
        (folder / f".{target.name}.old-4567abcd").mkdir()
    if start == "moved aside":  # killed between the two renames: the old model aside, none in place
        shutil.copytree(old, folder / f".{target.name}.old-89abcdef")
        return _snapshot(old)
    if start == "empty":
        target.mkdir()
    if start == "other files":
        target.mkdir()
        (target / "notes.txt").write_text("mine")
    if start == "a file":
        target.write_text("a file")
        return None
    return _snapshot(target) if target.exists() else None


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@contextmanager
def _stopped_at(stop: Optional[str], error: type) -> Iterator[None]:
    """Make the step `stop` of a model directory's replacement raise `error` (nothing when `stop` is None)."""
    import os
    from unittest import mock

    import safetensors.torch

    from kold_span.models import model_dir

    def step(name, original):
        def run(*args, **kwargs):
            which = name
            if name == "rename":  # which rename, by the names it moves between
                source, destination = (Path(arg).name for arg in args[:2])
                which = "aside" if ".old-" in destination else ("in" if ".new-" in source else "put back")
            if which == stop:
                raise error("stopped")
            return original(*args, **kwargs)
        return run

    with mock.patch.object(safetensors.torch, "save_file", step("weights", safetensors.torch.save_file)), \
            mock.patch.object(model_dir, "save_tokenizer", step("tokenizer", model_dir.save_tokenizer)), \
            mock.patch.object(model_dir, "write_manifest", step("manifest", model_dir.write_manifest)), \
            mock.patch.object(os, "rename", step("rename", os.rename)):
        yield


@pytest.fixture(scope="module")
def retrained(model):
    """The untrained model with other weights: what replaces a copy of `model`."""
    import torch

    from kold_span.inference.predictor import Predictor

    predictor = Predictor.from_pretrained(model)
    with torch.no_grad():
        next(predictor.model.parameters()).add_(0.01)
    return predictor


@settings(FUZZ, max_examples=WRITE_EXAMPLES)
@given(start=st.sampled_from(STARTS), stop=st.sampled_from(STOPS), overwrite=st.booleans(),
       error=st.sampled_from([KeyboardInterrupt, OSError]))
def test_a_model_directory_is_replaced_whole_or_left_as_it_was(model, retrained, start, stop, overwrite, error):
    """Saving over any folder, stopped at any step: the new model whole, or what was there as it was (a model that
    was moved aside by a killed run put back first), or a refusal that changed nothing; nothing left beside it."""
    from kold_span.errors import OutputTargetError
    from kold_span.inference.predictor import Predictor

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        target = folder / "model"
        before = _start(folder, target, start, model)
        try:
            with _stopped_at(stop, error):
                retrained.save_pretrained(target, overwrite=overwrite)
        except OutputTargetError:
            event(f"{start}: refused")
            assert start == "a file" or (start == "other files" and not overwrite)
            assert (_snapshot(target) if target.is_dir() else None) == before or start == "a file"
            return
        except (KeyboardInterrupt, OSError) as err:
            assert str(err) == "stopped" and stop is not None
            event(f"{start}: stopped at {stop}")
            if stop == "put back":  # the model stays where the killed run left it, whole
                [aside] = folder.iterdir()
                assert aside.name.startswith(".model.old-") and _snapshot(aside) == before
                return
            assert (_snapshot(target) if target.exists() else None) == before
            assert sorted(p.name for p in folder.iterdir()) == (["model"] if before is not None else [])
            return
        event(f"{start}: replaced" if stop is None else f"{start}: replaced ({stop}: no such step)")
        assert sorted(p.name for p in folder.iterdir()) == ["model"]
        assert Predictor.from_pretrained(target).identity != Predictor.from_pretrained(model).identity
# --------------------------------------------------------------------------- config keys and values

CONFIG_EXAMPLES = 200  # --set overrides per config kind: reading and checking one takes milliseconds


def config_keys(cls, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, type) of every key of a config dataclass: its sections and the keys inside them."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        yield f"{prefix}{f.name}", hints[f.name]
        types = {hints[f.name], *typing.get_args(hints[f.name])}
        for inner in types:
            if dataclasses.is_dataclass(inner):
                yield from config_keys(inner, f"{prefix}{f.name}.")


def typed_values(hint: Any) -> st.SearchStrategy[Any]:
    """Values of a key's own type, in range and out of it: what exercises the range checks, not the type checks."""
    import typing

    types = {hint, *typing.get_args(hint)}
    options = [st.none()] if type(None) in types else []
    if int in types:
        options += [st.integers(-3, 600), st.integers(-2 ** 63, 2 ** 64)]
    if float in types:
        options += [st.floats(-0.5, 1.5), st.floats()]
    if bool in types:
        options.append(st.booleans())
    if str in types:
        options.append(STRINGS)
    if any(typing.get_origin(t) is list for t in types):
        options.append(st.lists(st.integers(-3, 200), max_size=3))
    return st.one_of(options) if options else SCALARS


def yaml_value(value: Any) -> str:
    """A drawn value as `--set` reads it: JSON (YAML 1.2's flow style), NaN and infinity in YAML's spelling."""
    if isinstance(value, float) and value != value:
        return ".nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    return json.dumps(value, ensure_ascii=False)


STRINGS = st.text(max_size=6) | st.sampled_from(["auto", "cpu", "gpu", "cuda", "ddp", "bf16-mixed", "16-mixed",
                                                  "32-true", "none", "first", "mean", "dev", "balanced", "morpheme",
                                                  "OFF", "dev/loss", "min", "max", "a.b", "", "kold", "jsonl"])
SCALARS = st.integers(-3, 300) | st.integers(-2 ** 70, 2 ** 70) | st.floats() | st.booleans() | st.none() | STRINGS
TASK = st.fixed_dictionaries({"name": st.sampled_from(["OFF", "OFF_span", "a.b", "", "T"]),
                              "kind": st.sampled_from(["sequence", "span", "bogus"]),
                              "source": st.sampled_from(["OFF", "TGT", ""])},
                             optional={"problem": st.sampled_from(["single", "multi", "soft", "x"]),
                                       "gate": st.sampled_from(["OFF", "nope"]), "weight": SCALARS,
                                       "threshold": SCALARS, "class_weight": SCALARS})
VALUES = st.one_of(
    st.builds(yaml_value, SCALARS | st.lists(SCALARS, max_size=3) | st.lists(TASK, max_size=2)
              | st.dictionaries(st.sampled_from(["a", "mode", "name", "scratch", "lr"]), SCALARS, max_size=2)),
    st.sampled_from(["[", "{a: 1, a: 2}", "&a [*a, *a]", "!!python/object/apply:os.system [ls]", "'open",
                     "[" * 200 + "]" * 200, "1e999", "0x10", "0o17", ".inf", "-.inf", ".nan", "null", "~",
                     "{}", "[]", "2024-01-01", "12:30", "yes"]))
CONFIG_KINDS = {"experiment": (TINY, "load_config"), "pretrain": (ROOT / "configs" / "pretrain" / "tiny_test.yaml",
                                                                  "load_pretrain_config")}


def problem_of(message: str, sources: list[str]) -> str:
    """A config error's message without the sources it begins with (the file and `--set` arguments)."""
    for where in (" + ".join(sources), sources[-1]):
        if message.startswith(where + ": "):
            return message[len(where) + 2:]
    return message


def names_the_key(problem: str, key: str) -> bool:
    """Whether a problem names `key` or a section above it (the value of a section is checked by its parts)."""
    parts = key.split(".")
    prefixes = [".".join(parts[:n]) for n in range(1, len(parts) + 1)]
    return any(prefix in problem for prefix in prefixes) or problem.startswith("invalid YAML value")


def check_config_override(kind: str, key: str, value: str) -> None:
    """Load the tiny config of `kind` with `--set key=value`: a valid config, or a ConfigError naming the key."""
    from kold_span.config import loading
    from kold_span.errors import ConfigError
    from kold_span.training.run import check_trainer_settings

    path, loader = CONFIG_KINDS[kind]
    override = f"{key}={value}"
    try:
        config = getattr(loading, loader)(path, [override])
        # What train and pretrain ask Lightning before anything runs (devices, precision, strategy, epochs, ...)
        if kind == "experiment":
            check_trainer_settings(config.trainer)
        else:
            check_trainer_settings(_pretrain_trainer(config), prefix="")
    except ConfigError as err:
        problem = problem_of(str(err), [str(path), f"--set {override}"])
        event(f"{kind}: ConfigError")
        assert names_the_key(problem, key), (key, value, str(err))
        return
    event(f"{kind}: a valid config")
    uses_as_train_does(config)


def _pretrain_trainer(config):
    from kold_span.training.pretrain import _trainer_config

    return _trainer_config(config, 1)


def uses_as_train_does(config) -> None:
    """Hand a config's numbers to what takes them in training, without training: the seeds to numpy, the dropout
    to torch, the workers to a DataLoader (each raised a raw error before the config checked them)."""
    import numpy as np
    import torch

    np.random.RandomState(config.seed)
    dropout = getattr(getattr(config, "model", None), "dropout", None)
    if dropout is not None:
        torch.nn.Dropout(dropout)
        np.random.RandomState(config.data.split_seed)
        with warnings.catch_warnings():  # "more workers than CPUs": a warning, not an error, and no worker starts
            warnings.simplefilter("ignore")
            torch.utils.data.DataLoader([0], num_workers=config.trainer.num_workers)


@pytest.mark.parametrize("kind", sorted(CONFIG_KINDS))
@settings(FUZZ, max_examples=CONFIG_EXAMPLES)
@given(data=st.data())
def test_a_config_override_is_valid_or_a_config_error_naming_its_key(kind, data):
    from kold_span.config.schema import Config, PretrainConfig

    keys = dict(config_keys(Config if kind == "experiment" else PretrainConfig))
    key = data.draw(st.sampled_from(sorted(keys)), label="key")
    value = data.draw(st.builds(yaml_value, typed_values(keys[key])) | VALUES, label="value")
    if data.draw(st.integers(0, 9), label="misspelt") == 0:
        key += ".nope"
    check_config_override(kind, key, value)
