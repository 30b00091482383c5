"""Request bodies → examples, checked field by field; every problem is a `RequestError` naming its field.

Bodies are parsed here, not by a schema library, so that each message says what the field must be
in the words of the API (`comments[2].text: expected a string, got number`), and so that no body,
however malformed, gets past as an exception the service did not expect (a 500).
"""
from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from kold_span.config.binding import option
from kold_span.data.example import Context, Example, context_turns, text_problem
from kold_span.errors import DataError, RequestError
from kold_span.inference.inputs import QUOTING, bad_rows, iter_inputs


@dataclass(frozen=True)
class Limits:
    """What one request may hold, in every dimension a client controls (each a `kold-span serve` option).

    `max_chars` bounds one comment, or one comment's context; `max_request_chars` the whole
    request, comments and contexts together.
    """

    max_bytes: int = option("request body size (413 past it)", 4 * 1024 * 1024)
    max_comments: int = option("comments per request or uploaded file (413 past it)", 512)
    max_chars: int = option("characters of one comment or its context (413 past it); longer comments are scored in "
                            "windows, whole", 20_000)
    max_request_chars: int = option("characters of a request's comments and contexts together (413 past it)",
                                    500_000)
    max_context_turns: int = option("turns of one comment's context (413 past it)", 50)
    max_id_chars: int = option("characters of an id or clientToken, which are echoed back (413 past it)", 128)


MAX_FILENAME_CHARS = 200
# What an upload may be: text formats, whose size is their body's. Parquet, which `kold-span predict` reads,
# is not taken here: a few hundred compressed bytes can decode to gigabytes before a row is counted.
UPLOAD_SUFFIXES = (".txt", ".csv", ".tsv", ".jsonl")


@dataclass
class PredictRequest:
    """`POST /v1/predict`: the comments and the annotator traits to predict for (if any)."""

    examples: list[Example]
    perspective: Optional[dict[str, Any]] = None


@dataclass
class AnalyzeRequest:
    """`POST /v1alpha1/comments:analyze`, Perspective's request, reduced to what the model needs."""

    example: Example
    thresholds: dict[str, Optional[float]]  # requested attribute → scoreThreshold
    span_annotations: bool = False
    languages: list[str] = field(default_factory=list)
    client_token: Optional[str] = None


# bool before int: True is an int to isinstance, a boolean to JSON.
JSON_TYPES = ((dict, "object"), (list, "array"), (str, "string"), (bool, "boolean"), ((int, float), "number"))


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type.

    Example:
        >>> [json_type(v) for v in ({}, [], "a", 1.5, True, None)]
        ['object', 'array', 'string', 'number', 'boolean', 'null']
    """
    return next((name for kind, name in JSON_TYPES if isinstance(value, kind)), "null")


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(body: bytes) -> Any:
    """The parsed body; invalid JSON (or NaN, or nesting past Python's recursion limit) is a 422, and so is a
    lone surrogate in any string (`check_unicode`).

    Example:
        >>> parse_json(b'{"comments": []}')
        {'comments': []}
        >>> parse_json(b'{"comments": [')
        Traceback (most recent call last):
        ...
        kold_span.errors.RequestError: body: invalid JSON (Expecting value at line 1 column 15)
    """
    if not body.strip():
        raise RequestError(422, "body: empty; expected a JSON object")
    try:
        parsed = json.loads(body, parse_constant=_refuse_constant)
    except json.JSONDecodeError as err:
        raise RequestError(422, f"body: invalid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    except UnicodeDecodeError as err:
        raise RequestError(422, f"body: not UTF-8 text (byte {err.start + 1})") from None
    except ValueError as err:
        raise RequestError(422, f"body: invalid JSON ({err})") from None
    except RecursionError:
        raise RequestError(422, "body: JSON nested too deeply") from None
    check_unicode(parsed)
    return parsed


def check_unicode(value: Any, where: str = "body") -> None:
    """Refuse (422) a parsed body holding a lone surrogate in any string, key or value, naming its field.

    JSON's `"\\ud800"` parses to a string no UTF-8 answer can hold; every string a route echoes (ids,
    tokens, attribute names, unknown fields) is checked here once, before anything runs or is stored.
    The walk visits each value once (a stack, not recursion).

    Example:
        >>> check_unicode({"comments": [{"id": chr(0xD800)}]})
        Traceback (most recent call last):
        ...
        kold_span.errors.RequestError: comments[0].id: holds a lone surrogate (U+D800) at character 0, which is ...
    """
    todo: list[tuple[Any, str]] = [(value, where)]
    while todo:
        item, at = todo.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                raise RequestError(422, f"{at}: {problem}", at)
        elif isinstance(item, list):
            todo.extend((x, f"{at}[{i}]") for i, x in enumerate(item))
        elif isinstance(item, dict):
            prefix = "" if at == "body" else f"{at}."
            for i, (key, x) in enumerate(item.items()):
                problem = text_problem(key)
                if problem:
                    raise RequestError(422, f"{at}: the name of field {i + 1} {problem}", at)
                todo.append((x, f"{prefix}{key}"))


def expect_json(value: Any, kinds: tuple[str, ...], where: str) -> Any:
    """`value` when its JSON type is one of `kinds`, else a 422 `RequestError` naming `where`."""
    if json_type(value) not in kinds:
        raise RequestError(422, f"{where}: expected {' or '.join(kinds)}, got {json_type(value)}", where)
    return value


def json_object(value: Any, where: str, known: tuple[str, ...], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """`value` as a JSON object with only `known` keys and all `required` ones."""
    expect_json(value, ("object",), where)
    prefix = f"{where}." if where != "body" else ""
    for key in value:
        if key not in known:
            raise RequestError(422, f"{prefix}{key}: unknown field; {where} takes {', '.join(known)}",
                               f"{prefix}{key}")
    for key in required:
        if key not in value:
            raise RequestError(422, f"{prefix}{key}: required", f"{prefix}{key}")
    return value


def _text(value: Any, where: str, limits: Limits, empty_ok: bool = False) -> str:
    """A string field: valid Unicode, not blank (unless `empty_ok`), within `max_chars`."""
    expect_json(value, ("string",), where)
    if not empty_ok and not value.strip():
        raise RequestError(422, f"{where}: empty", where)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise RequestError(422, f"{where}: character {err.start} is a lone surrogate, not Unicode text", where) from None
    if len(value) > limits.max_chars:
        raise RequestError(413, f"{where}: {len(value)} characters, over the limit of {limits.max_chars} "
                                "(--max-chars)", where)
    return value


def _context(value: Any, where: str, limits: Limits) -> Context:
    """A title (string) or dialogue turns (array of strings), within `max_chars` in all."""
    expect_json(value, ("string", "array", "null"), where)
    if isinstance(value, list):
        if len(value) > limits.max_context_turns:
            raise RequestError(413, f"{where}: {len(value)} turns, over the limit of {limits.max_context_turns} "
                                    "(--max-context-turns)", where)
        turns = [_text(turn, f"{where}[{i}]", limits, empty_ok=True) for i, turn in enumerate(value)]
        if sum(map(len, turns)) > limits.max_chars:
            raise RequestError(413, f"{where}: {sum(map(len, turns))} characters in all, over the limit of "
                                    f"{limits.max_chars} (--max-chars)", where)
        return turns or None
    return (_text(value, where, limits, empty_ok=True) or None) if value is not None else None


def _request_size(examples: list[Example], where: str, limits: Limits) -> None:
    total = sum(len(e.text) + sum(map(len, context_turns(e.context))) for e in examples)
    if total > limits.max_request_chars:
        raise RequestError(413, f"{where}: {total} characters with their contexts, over the limit of "
                                f"{limits.max_request_chars} per request (--max-request-chars)", where)


def _identifier(value: Any, where: str, limits: Limits) -> Optional[str]:
    """An id: a string or a whole number, at most `max_id_chars` characters (it is echoed back)."""
    ident = expect_json(value, ("string", "number", "null"), where)
    if isinstance(ident, float):
        raise RequestError(422, f"{where}: expected a string or a whole number", where)
    if ident is None:
        return None
    text = str(ident)
    if len(text) > limits.max_id_chars:
        raise RequestError(413, f"{where}: {len(text)} characters, over the limit of {limits.max_id_chars} "
                                "(--max-id-chars)", where)
    return text


def predict_request(body: Any, limits: Limits) -> PredictRequest:
    """`{"comments": [{"text", "context" or "title", "id"}], "perspective"}` → examples.

    A comment without an id gets its position (1-based), as `kold-span predict` numbers lines.

    Example:
        >>> predict_request({"comments": [{"text": "좋은 기사", "title": "제목"}]}, Limits()).examples
        [Example(id='1', text='좋은 기사', context='제목', labels={}, spans={}, annotations=[], meta={})]
        >>> predict_request({"comments": [{"txt": "좋은 기사"}]}, Limits())
        Traceback (most recent call last):
        ...
        kold_span.errors.RequestError: comments[0].txt: unknown field; comments[0] takes text, context, title, id
    """
    body = json_object(body, "body", ("comments", "perspective"), ("comments",))
    comments = expect_json(body["comments"], ("array",), "comments")
    if not comments:
        raise RequestError(422, "comments: empty; send at least one comment", "comments")
    if len(comments) > limits.max_comments:
        raise RequestError(413, f"comments: {len(comments)} comments, over the limit of {limits.max_comments} "
                                "(--max-comments)", "comments")
    examples = []
    for i, item in enumerate(comments):
        where = f"comments[{i}]"
        item = json_object(item, where, ("text", "context", "title", "id"), ("text",))
        if "context" in item and "title" in item:
            raise RequestError(422, f"{where}.title: give context or title, not both", f"{where}.title")
        key = "title" if "title" in item else "context"
        context = _context(item.get(key), f"{where}.{key}", limits)
        if key == "title" and isinstance(context, list):
            raise RequestError(422, f"{where}.title: expected string, got array", f"{where}.title")
        ident = _identifier(item.get("id"), f"{where}.id", limits)
        examples.append(Example(id=ident or str(i + 1), text=_text(item["text"], f"{where}.text", limits),
                                context=context))
    _request_size(examples, "comments", limits)
    perspective = body.get("perspective")
    if perspective is not None:
        expect_json(perspective, ("object",), "perspective")
        for key, value in perspective.items():
            expect_json(value, ("string", "number", "null"), f"perspective.{key}")
    return PredictRequest(examples, perspective)


MAX_LANGUAGES = 16
# The most attributes a request may name, and span scores one attribute of a suggestion may hold: far more than
# any model has or a moderator marks, and few enough that checking them is quick work (413 past them).
MAX_ATTRIBUTES, MAX_SPAN_SCORES = 100, 1000


def check_count(items: Any, most: int, where: str, what: str) -> None:
    """413 when a list or object holds more than `most` items (checked before any of them is read).

    Example:
        >>> check_count([1] * 3, 2, "spanScores", "spans")
        Traceback (most recent call last):
        ...
        kold_span.errors.RequestError: spanScores: 3 spans, more than the 2 read
    """
    if len(items) > most:
        raise RequestError(413, f"{where}: {len(items)} {what}, more than the {most} read", where)
LANGUAGE_CODE = re.compile(r"[A-Za-z]{2,8}(?:[-_][A-Za-z0-9]{1,8})*")
ANALYZE_FIELDS = ("comment", "context", "requestedAttributes", "spanAnnotations", "languages", "doNotStore",
                  "clientToken", "sessionId", "communityId")


def analyze_request(body: Any, limits: Limits) -> AnalyzeRequest:
    """Perspective's AnalyzeComment request → one example and the requested attributes.

    `context.entries` becomes the example's context: one entry a title, several the turns of a dialogue.

    Example:
        >>> r = analyze_request({"comment": {"text": "바보"}, "context": {"entries": [{"text": "제목"}]},
        ...                      "requestedAttributes": {"TOXICITY": {"scoreThreshold": 0.5}}}, Limits())
        >>> r.example.text, r.example.context, r.thresholds
        ('바보', '제목', {'TOXICITY': 0.5})
    """
    body = json_object(body, "body", ANALYZE_FIELDS, ("comment", "requestedAttributes"))
    comment = json_object(body["comment"], "comment", ("text", "type"), ("text",))
    if comment.get("type", "PLAIN_TEXT") != "PLAIN_TEXT":
        raise RequestError(400, f"comment.type: only PLAIN_TEXT is read, got {comment['type']!r}", "comment.type")
    text = _text(comment["text"], "comment.text", limits)
    context: Context = None
    if body.get("context") is not None:
        entries = json_object(body["context"], "context", ("entries",)).get("entries") or []
        expect_json(entries, ("array",), "context.entries")
        if len(entries) > limits.max_context_turns:
            raise RequestError(413, f"context.entries: {len(entries)} entries, over the limit of "
                                    f"{limits.max_context_turns} (--max-context-turns)", "context.entries")
        turns = [json_object(e, f"context.entries[{i}]", ("text", "type"), ("text",))["text"]
                 for i, e in enumerate(entries)]
        context = _context(turns, "context.entries", limits)
        if isinstance(context, list) and len(context) == 1:
            context = context[0]
    attributes = expect_json(body["requestedAttributes"], ("object",), "requestedAttributes")
    check_count(attributes, MAX_ATTRIBUTES, "requestedAttributes", "attributes")
    if not attributes:
        raise RequestError(400, "requestedAttributes: empty; name at least one attribute", "requestedAttributes")
    thresholds: dict[str, Optional[float]] = {}
    for name, options in attributes.items():
        where = f"requestedAttributes.{name}"
        options = json_object(options if options is not None else {}, where, ("scoreType", "scoreThreshold"))
        if options.get("scoreType", "PROBABILITY") != "PROBABILITY":
            raise RequestError(400, f"{where}.scoreType: only PROBABILITY is given, got {options['scoreType']!r}",
                               f"{where}.scoreType")
        threshold = expect_json(options.get("scoreThreshold"), ("number", "null"), f"{where}.scoreThreshold")
        if threshold is not None and not 0 <= threshold <= 1:
            raise RequestError(400, f"{where}.scoreThreshold: must lie in [0, 1], got {threshold}",
                               f"{where}.scoreThreshold")
        thresholds[name] = threshold
    languages = expect_json(body.get("languages", []) if body.get("languages") is not None else [], ("array",),
                        "languages")
    if len(languages) > MAX_LANGUAGES:
        raise RequestError(400, f"languages: {len(languages)} codes, at most {MAX_LANGUAGES} are read", "languages")
    for i, language in enumerate(languages):
        expect_json(language, ("string",), f"languages[{i}]")
        if not LANGUAGE_CODE.fullmatch(language):
            raise RequestError(400, f"languages[{i}]: {language[:40]!r} is not a language code such as ko or "
                                    "ko-KR", f"languages[{i}]")
    for key in ("spanAnnotations", "doNotStore"):
        expect_json(body.get(key), ("boolean", "null"), key)
    for key in ("clientToken", "sessionId", "communityId"):
        expect_json(body.get(key), ("string", "null"), key)
        if len(body.get(key) or "") > limits.max_id_chars:
            raise RequestError(413, f"{key}: {len(body[key])} characters, over the limit of {limits.max_id_chars} "
                                    "(--max-id-chars)", key)
    example = Example(id="1", text=text, context=context)
    _request_size([example], "comment", limits)
    return AnalyzeRequest(example, thresholds,
                          span_annotations=bool(body.get("spanAnnotations")), languages=list(languages),
                          client_token=body.get("clientToken"))


def upload_examples(name: str, data: bytes, limits: Limits, text_column: Optional[str] = None,
                    context_column: Optional[str] = None, id_column: Optional[str] = None,
                    quoting: str = "csv") -> list[Example]:
    """An uploaded .txt/.csv/.tsv/.jsonl file read as `kold-span predict --input` reads it.

    Errors are `predict`'s, naming the uploaded file's name and line; a file of more than
    `max_comments` comments, or a comment over `max_chars`, is a 413.
    """
    if quoting not in QUOTING:
        raise RequestError(422, f"quoting: must be one of {', '.join(QUOTING)}, got {quoting!r}", "quoting")
    base = upload_name(name)
    if Path(base).suffix.lower() not in UPLOAD_SUFFIXES:
        raise RequestError(415, f"filename: {base!r}: uploads are read as {', '.join(UPLOAD_SUFFIXES)} (by the "
                                "name's ending); predict other files, Parquet among them, with `kold-span predict`",
                           "filename")
    with tempfile.TemporaryDirectory(prefix="kold-span-upload-") as folder:
        path = Path(folder) / ("upload" + Path(base).suffix.lower())  # the client's name never touches the disk
        path.write_bytes(data)
        examples: list[Example] = []
        try:
            for example in iter_inputs(path, text_column, context_column, id_column, bad=bad_rows(path, how_to_skip=""),
                                       quoting=quoting):
                if len(examples) == limits.max_comments:
                    raise RequestError(413, f"{base}: more than {limits.max_comments} comments (--max-comments); "
                                            "predict a file this long with `kold-span predict`", "file")
                examples.append(example)
        except (DataError, UnicodeError) as err:
            raise RequestError(422, str(err).replace(str(path), base), "file") from None
    if not examples:
        raise RequestError(422, f"{base}: no comments", "file")
    for example in examples:
        where = f"{base}: comment {example.id}"
        _text(example.text, f"{where} text", limits)
        _context(example.context, f"{where} context", limits)
        if len(example.id) > limits.max_id_chars:
            raise RequestError(413, f"{where} id: {len(example.id)} characters, over the limit of "
                                    f"{limits.max_id_chars} (--max-id-chars)", "file")
    _request_size(examples, base, limits)
    return examples


def upload_name(name: str) -> str:
    r"""The uploaded file's base name, checked: printable, at most `MAX_FILENAME_CHARS` characters.

    Example:
        >>> upload_name("C:\data\comments.csv")
        'comments.csv'
        >>> upload_name("a\x00.csv")
        Traceback (most recent call last):
        ...
        kold_span.errors.RequestError: filename: character 2 is a control character; name the file ...
    """
    base = Path(name.replace("\\", "/")).name
    if not base or base in (".", ".."):
        raise RequestError(422, "filename: required, e.g. comments.csv (its ending decides how it is read)",
                           "filename")
    if len(base) > MAX_FILENAME_CHARS:
        raise RequestError(422, f"filename: {len(base)} characters, over the limit of {MAX_FILENAME_CHARS}",
                           "filename")
    bad = next((i for i, ch in enumerate(base) if not ch.isprintable()), None)
    if bad is not None:
        raise RequestError(422, f"filename: character {bad + 1} is a control character; name the file like "
                                "comments.csv", "filename")
    return base
