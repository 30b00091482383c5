"""The canonical JSONL format, UTF-8 lines with line numbers, JSON text as the package writes it, missing paths."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Optional, Union

from kold_span.config.limits import FILE_BYTES, bounded_lines, read_bounded
from kold_span.data.atomic import atomic_write
from kold_span.data.example import Example, context_turns, text_problem
from kold_span.errors import DataError, NonFiniteError


def json_text(value: Any, indent: Optional[int] = None, what: str = "a value") -> str:
    """`value` as JSON text, characters as they are: how the package writes every JSON file, line and body.

    JSON has no NaN or Infinity (Python's `json` would write them, and no other reader takes
    them back): such a number is a `NonFiniteError` naming `what` and where inside it the number
    sits. Where a number may legitimately be undefined (a score of a split without positives),
    pass the value through `finite_or_null` first.

    Example:
        >>> json_text({"label": "바보", "probs": [0.25, 1e-3]})
        '{"label": "바보", "probs": [0.25, 0.001]}'
        >>> json_text({"probs": {"false": float("nan")}}, what="the prediction of in.txt:3")
        Traceback (most recent call last):
        ...
        kold_span.errors.NonFiniteError: the prediction of in.txt:3: probs.false is nan, which JSON cannot hold
    """
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError as err:
        found = _non_finite(value, "")
        if found is None:
            raise
        place, number = found
        raise NonFiniteError(f"{what}: {place or 'the value'} is {number}, which JSON cannot hold") from err


def _non_finite(value: Any, place: str) -> Optional[tuple[str, float]]:
    """(dotted place, number) of the first NaN or infinite float inside `value`, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return place, value
    if isinstance(value, dict):
        items: Iterable[tuple[Any, Any]] = value.items()
    elif isinstance(value, (list, tuple)):
        items = ((f"[{i}]", item) for i, item in enumerate(value))
    else:
        return None
    for key, item in items:
        inner = f"{place}{key}" if str(key).startswith("[") else f"{place}.{key}" if place else str(key)
        found = _non_finite(item, inner)
        if found is not None:
            return found
    return None


def finite_or_null(value: Any) -> Any:
    """`value` with every NaN or infinite float replaced by None (JSON's null: a number that is not defined),
    tuples as lists and keys as strings, recursively.

    Example:
        >>> finite_or_null({"kappa": float("nan"), "ci": (0.1, float("inf")), 3: 1.0})
        {'kappa': None, 'ci': [0.1, None], '3': 1.0}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): finite_or_null(v) for k, v in value.items()}
    return [finite_or_null(v) for v in value] if isinstance(value, (list, tuple)) else value


def require_path(path: Union[str, Path], key: str) -> None:
    """A `FileNotFoundError` naming the config key when `path` does not exist."""
    if not Path(path).exists():
        raise FileNotFoundError(f"{key}: {path} does not exist (a relative path is read from the current "
                                f"directory, {Path.cwd()})")


def utf8_lines(f: IO[bytes], path: Union[str, Path]) -> Iterator[str]:
    """A binary file's lines as text, a leading byte-order mark dropped; bytes that are not UTF-8, or a line longer
    than `LINE_BYTES` (`config.limits`), are a `DataError` naming the line."""
    for number, raw in enumerate(bounded_lines(f, path, DataError), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise DataError(f"{path}:{number}: not UTF-8 text (byte {err.start + 1} of the line); "
                            "save the file as UTF-8") from None
        yield line.removeprefix("\ufeff") if number == 1 else line


def read_utf8(path: Union[str, Path]) -> str:
    """A whole UTF-8 text file, a leading byte-order mark dropped; bytes that are not UTF-8 name the line, a file
    larger than `FILE_BYTES` (`config.limits`) is a `DataError` naming it."""
    raw = read_bounded(path, FILE_BYTES, DataError)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - raw.rfind(b"\n", 0, err.start)
        raise DataError(f"{path}:{line}: not UTF-8 text (byte {column} of the line); save the file as UTF-8") from None
    return text.removeprefix("\ufeff")


def parse_json_line(line: str, where: str) -> Any:
    """One line of a JSONL file parsed; invalid JSON is a `DataError` naming `where` and the column.

    A string that is no Unicode text (a lone surrogate escape such as "\\ud800", which could be
    neither tokenized nor written out again) is invalid too.

    Example:
        >>> parse_json_line('{"id": 1, "text": "a"}\\n', "in.jsonl:3")
        {'id': 1, 'text': 'a'}
        >>> parse_json_line('{"id": 1, "text": "a"\\n', "in.jsonl:3")
        Traceback (most recent call last):
        ...
        kold_span.errors.DataError: in.jsonl:3: invalid JSON (Expecting ',' delimiter at column 22, the end of the line)
    """
    body = line.rstrip("\r\n")  # a fault at the end is at the end of this line, not at column 1 of the next
    try:
        value = json.loads(body)
    except json.JSONDecodeError as err:
        end = ", the end of the line" if err.pos >= len(body) else ""
        raise DataError(f"{where}: invalid JSON ({err.msg} at column {err.pos + 1}{end})") from None
    except (ValueError, RecursionError) as err:  # a number of more than 4300 digits, nesting past the stack
        raise DataError(f"{where}: invalid JSON ({err})") from None
    problem = _string_problem(value) if _LONE_SURROGATE_ESCAPE.search(body) else None
    if problem:
        raise DataError(f"{where}: invalid JSON ({problem})")
    return value


def parse_json_document(text: str, path: Union[str, Path]) -> Any:
    """A whole JSON file parsed; invalid JSON (a lone surrogate too) is a `DataError` naming the file and line.

    Example:
        >>> parse_json_document('{"a": [1,\\n 2,]}', "x.json")
        Traceback (most recent call last):
        ...
        kold_span.errors.DataError: x.json:2: invalid JSON (Expecting value at column 4)
        >>> parse_json_document('{"a":\\n "\\\\ud83d"}', "x.json")
        Traceback (most recent call last):
        ...
        kold_span.errors.DataError: x.json:2: invalid JSON (a string holds a lone surrogate (U+D83D) at character 0, ...)
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{err.lineno}: invalid JSON ({err.msg} at column {err.colno})") from None
    except (ValueError, RecursionError) as err:
        raise DataError(f"{path}: invalid JSON ({err})") from None
    match = _LONE_SURROGATE_ESCAPE.search(text)
    problem = _string_problem(value) if match else None
    if problem:
        line = text.count("\n", 0, match.start()) + 1
        raise DataError(f"{path}:{line}: invalid JSON ({problem})")
    return value


# An escaped UTF-16 surrogate without its other half: only a document holding one can hold a lone surrogate
# (a match can also be an escaped backslash followed by "ud800", hence the check of the parsed strings).
_HIGH, _LOW = r"\\u[dD][89abAB][0-9a-fA-F]{2}", r"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_LONE_SURROGATE_ESCAPE = re.compile(f"{_HIGH}(?!{_LOW})|(?<!{_HIGH}){_LOW}")


def _string_problem(value: Any) -> Optional[str]:
    """Why a parsed JSON value holds a string (or key) that is no Unicode text, or None."""
    if isinstance(value, str):
        problem = text_problem(value)
        return f"a string {problem}" if problem else None
    if isinstance(value, dict):
        value = [part for item in value.items() for part in item]  # each key, then its value
    problems = (_string_problem(part) for part in value) if isinstance(value, list) else ()
    return next((problem for problem in problems if problem), None)


def iter_json_lines(path: Union[str, Path]) -> Iterator[tuple[str, Any]]:
    """("file:line", parsed object) for each non-blank line of a JSONL file."""
    path = Path(path)
    with path.open("rb") as f:
        for lineno, line in enumerate(utf8_lines(f, path), 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            yield where, parse_json_line(line, where)


def read_jsonl(path: Union[str, Path]) -> Iterator[Example]:
    """Stream canonical examples from a JSONL file; errors name the file and line."""
    for where, record in iter_json_lines(path):
        yield Example.from_dict(record, where)


def write_jsonl(examples: Iterable[Example], path: Union[str, Path]) -> int:
    """Write canonical examples as JSONL (UTF-8, one per line), whole or not at all; returns the count.

    The file is written through `atomic_write`: when reading `examples` fails midway, the
    previous file at `path` is left as it was.

    Example:
        >>> import tempfile
        >>> folder = tempfile.TemporaryDirectory()
        >>> path = Path(folder.name) / "x.jsonl"
        >>> write_jsonl([Example(id="1", text="너 바보냐", labels={"OFF": True}, spans={"OFF": [(2, 5)]})], path)
        1
        >>> print(path.read_text(encoding="utf-8"), end="")
        {"id": "1", "text": "너 바보냐", "context": null, "labels": {"OFF": true}, "spans": {"OFF": [[2, 5]]}, ...}
        >>> [ex.span_texts("OFF") for ex in read_jsonl(path)]
        [['바보냐']]
        >>> folder.cleanup()
    """
    n = 0
    with atomic_write(path) as f:
        for ex in examples:
            f.write(json_text(ex.to_dict(), what=f"example {ex.id!r}") + "\n")
            n += 1
    return n


def to_hf_dataset(examples: list[Example], span_types: Iterable[str] = ()):
    """Convert examples to a `datasets.Dataset` with explicit `Features`.

    Labels are stored as a JSON string per example (their types vary by task);
    spans get one column per type as lists of [start, end].
    """
    from datasets import Dataset, Features, Sequence, Value

    span_types = sorted(set(span_types) | {k for ex in examples for k in ex.spans})
    features = Features({
        "id": Value("string"),
        "text": Value("string"),
        "context": Sequence(Value("string")),
        "labels_json": Value("string"),
        **{f"spans_{t}": Sequence(Sequence(Value("int32"), length=2)) for t in span_types},
    })
    columns: dict[str, list[Any]] = {name: [] for name in features}
    for ex in examples:
        columns["id"].append(ex.id)
        columns["text"].append(ex.text)
        columns["context"].append(context_turns(ex.context))
        columns["labels_json"].append(json_text(ex.labels, what=f"the labels of example {ex.id!r}"))
        for t in span_types:
            columns[f"spans_{t}"].append([list(s) for s in ex.spans.get(t, [])])
    return Dataset.from_dict(columns, features=features)
