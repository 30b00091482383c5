"""The canonical example: one text, its context, labels and character spans.

Character offsets are end-exclusive (Python slice style) everywhere inside the
package; readers and writers convert from other conventions at the edges.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Optional, Union

from kold_span.errors import DataError

Span = tuple[int, int]
Context = Union[None, str, list[str]]
LabelValue = Union[bool, int, float, str, list[str], dict[str, float], None]


@dataclass
class Annotation:
    """One annotator's judgement of one example."""

    annotator: str
    labels: dict[str, LabelValue] = field(default_factory=dict)
    spans: dict[str, list[Span]] = field(default_factory=dict)
    traits: dict[str, Any] = field(default_factory=dict)


@dataclass
class Example:
    """A text with optional context, labels, character spans and raw annotations."""

    id: str
    text: str
    context: Context = None
    labels: dict[str, LabelValue] = field(default_factory=dict)
    spans: dict[str, list[Span]] = field(default_factory=dict)
    annotations: list[Annotation] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.spans = {name: normalize_spans(s, len(self.text), f"spans[{name!r}] of example {self.id!r}")
                      for name, s in self.spans.items()}

    def span_texts(self, name: str) -> list[str]:
        """The substrings of `text` covered by the spans of one type."""
        return [self.text[s:e] for s, e in self.spans.get(name, [])]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (spans as [start, end] lists)."""
        d = asdict(self)
        d["spans"] = {k: [list(s) for s in v] for k, v in self.spans.items()}
        for a in d["annotations"]:
            a["spans"] = {k: [list(s) for s in v] for k, v in a["spans"].items()}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "record") -> "Example":
        """Build an example from `to_dict` output, naming `where` in errors."""
        if not isinstance(d, dict):
            raise DataError(f"{where}: expected a JSON object, got {type(d).__name__}")
        for key in ("id", "text"):
            if key not in d:
                raise DataError(f"{where}: missing field {key!r}")
        if not isinstance(d["text"], str):
            raise DataError(f"{where}: field 'text' must be a string")
        unknown = set(d) - {"id", "text", "context", "labels", "spans", "annotations", "meta"}
        if unknown:
            raise DataError(f"{where}: unknown field(s) {sorted(unknown)}")
        context = d.get("context")
        if context is not None and not isinstance(context, (str, list)):
            raise DataError(f"{where}: field 'context' must be null, a string or a list of strings")
        for key in ("labels", "meta"):
            if d.get(key) is not None and not isinstance(d[key], dict):
                raise DataError(f"{where}: field {key!r} must be an object, got {type(d[key]).__name__}")
        try:
            annotations = [Annotation(annotator=str(a["annotator"]), labels=dict(a.get("labels") or {}),
                                      spans={k: [tuple(s) for s in v] for k, v in (a.get("spans") or {}).items()},
                                      traits=dict(a.get("traits") or {}))
                           for a in d.get("annotations") or []]
            spans = {k: [tuple(s) for s in v] for k, v in (d.get("spans") or {}).items()}
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise DataError(f"{where}: malformed 'spans' or 'annotations': {err}") from err
        try:
            return cls(id=id_text(d["id"]), text=d["text"], context=context, labels=dict(d.get("labels") or {}),
                       spans=spans, annotations=annotations, meta=dict(d.get("meta") or {}))
        except DataError as err:
            raise DataError(f"{where}: {err}") from err


def id_text(value: Any) -> str:
    """An id as text, the one way every reader makes it: a string as it is, an integer in digits, any other
    JSON value as its JSON text (so a gold file's `true` id and the `true` id of predict's input meet).

    Example:
        >>> id_text("a7"), id_text(7), id_text(True), id_text(1.5), id_text({"a": 1})
        ('a7', '7', 'true', '1.5', '{"a": 1}')
    """
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    try:  # a key, not a file: json_text (data.jsonl, which reads examples) is not needed to refuse NaN here
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):  # not a JSON value (a Parquet timestamp, say), or NaN
        return str(value)


def normalize_spans(spans: Iterable[Iterable[int]], text_len: int, what: str = "spans") -> list[Span]:
    """Validate, sort and merge overlapping/adjacent end-exclusive spans."""
    out: list[Span] = []
    for s in spans:
        pair = tuple(s)
        if len(pair) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in pair):
            raise DataError(f"{what}: a span must be two integers [start, end), got {list(pair)}")
        start, end = pair
        if not 0 <= start < end <= text_len:
            raise DataError(f"{what}: span [{start}, {end}) outside text of length {text_len} or empty")
        out.append((start, end))
    return merge_spans(out)


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """Sort spans and merge those that overlap or touch."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def offsets_to_spans(offsets: Iterable[int]) -> list[Span]:
    """Character offsets (e.g. Toxic Spans' lists) → end-exclusive spans of consecutive runs."""
    return merge_spans((i, i + 1) for i in offsets)


def spans_to_offsets(spans: Iterable[Span]) -> set[int]:
    """End-exclusive spans → the set of character offsets they cover."""
    return {i for s, e in spans for i in range(s, e)}


def text_problem(value: Any) -> Optional[str]:
    """Why `value` cannot be a text to predict on or write out, or None when it can.

    A text is any `str` ("" included) that is Unicode text: a lone surrogate (which a JSON
    escape such as "\\ud800" can produce) cannot be tokenized or written as UTF-8.

    Example:
        >>> text_problem("좋은 기사"), text_problem(""), text_problem(None), text_problem(3)
        (None, None, 'expected a string, got None', 'expected a string, got int')
        >>> text_problem("ab\\ud800")
        'holds a lone surrogate (U+D800) at character 2, which is not Unicode text'
    """
    if not isinstance(value, str):
        return f"expected a string, got {'None' if value is None else type(value).__name__}"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        code = ord(value[err.start])
        return f"holds a lone surrogate (U+{code:04X}) at character {err.start}, which is not Unicode text"
    return None


def context_problem(value: Any) -> Optional[str]:
    """Why `value` cannot be a context (None, a text, or a list of texts), or None when it can.

    Example:
        >>> context_problem(["A: 안녕", "B: 응"]), context_problem(None), context_problem(7)
        (None, None, 'expected None, a string or a list of strings, got int')
        >>> context_problem(["A: 안녕", None])
        'turn 1: expected a string, got None'
    """
    if value is None:
        return None
    if isinstance(value, list):
        for i, turn in enumerate(value):
            problem = text_problem(turn)
            if problem:
                return f"turn {i}: {problem}"
        return None
    if not isinstance(value, str):
        return f"expected None, a string or a list of strings, got {type(value).__name__}"
    return text_problem(value)


def context_turns(context: Context) -> list[str]:
    """The context as a list of segments (empty when there is none)."""
    return [] if context is None else ([context] if isinstance(context, str) else list(context))


def label_str(value: Any) -> str:
    """Label values as vocabulary strings (True → 'true')."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def label_set(value: Any) -> set[str]:
    """A multi-label value (a list, or one bare value) as a set of vocabulary strings.

    Example:
        >>> sorted(label_set(["b", True])), label_set("a")
        (['b', 'true'], {'a'})
    """
    return {label_str(v) for v in (value if isinstance(value, list) else [value])}
