"""Moderators' corrections (Perspective's SuggestCommentScore) appended as training data.

`POST /v1alpha1/comments:suggestscore` takes a comment and the scores a moderator says it should
have had: per attribute a `summaryScore` (≥ 0.5: the attribute's label holds) and `spanScores`
(the spans, each kept when its score is ≥ 0.5; `begin`/`end` in UTF-16 code units, as Perspective counts them,
stored as code points). With `--feedback FILE` each suggestion
becomes one line of the canonical JSONL that `kold-span convert` writes and `train` reads
(`data.format: jsonl`): the example's labels and spans, and the same as one `annotations` entry
whose annotator is the moderator (the API key's name, else `anonymous`). Lines are appended with
one `write` on a file opened `O_APPEND` (a whole line or nothing, however many requests write at
once). The file is capped at `max_bytes`, each annotator's lines at a share of it and each line at
`max_line_bytes`, so one client cannot fill it for the others; past a cap, 507 (the feedback file is full:
retrying does not help, its operator has to make room).
"""
from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Optional

from kold_span.data.example import Annotation, Example
from kold_span.data.jsonl import json_text
from kold_span.errors import RequestError
from kold_span.service.attributes import AttributeMap, check_analyze
from kold_span.service.requests import (MAX_ATTRIBUTES, MAX_SPAN_SCORES, AnalyzeRequest, Limits, analyze_request,
                                        check_count, expect_json, json_object)
from kold_span.text.align import from_utf16, utf16_units

SUGGEST_FIELDS = ("comment", "context", "attributeScores", "languages", "communityId", "clientToken", "sessionId")


def suggestion(body: Any, limits: Limits, mapping: AttributeMap, annotator: str) -> tuple[Example, Optional[str]]:
    """A SuggestCommentScore body → the example to append (and the clientToken to echo).

    Example:
        >>> from kold_span.models.tasks import Task
        >>> from kold_span.service.attributes import default_attributes
        >>> mapping = default_attributes([Task("OFF", "sequence", "OFF", labels=("false", "true")),
        ...                               Task("OFF_span", "span", "OFF", gate="OFF")])
        >>> body = {"comment": {"text": "너 바보냐"}, "attributeScores": {"TOXICITY": {
        ...     "summaryScore": {"value": 1}, "spanScores": [{"begin": 2, "end": 4, "score": {"value": 1}}]}}}
        >>> example, _ = suggestion(body, Limits(), mapping, "mod-1")
        >>> example.labels, example.spans, example.annotations[0].annotator
        ({'OFF': True}, {'OFF': [(2, 4)]}, 'mod-1')
    """
    body = json_object(body, "body", SUGGEST_FIELDS, ("comment", "attributeScores"))
    check_count(expect_json(body["attributeScores"], ("object",), "attributeScores"), MAX_ATTRIBUTES, "attributeScores",
                "attributes")
    scores = json_object(body["attributeScores"], "attributeScores", tuple(mapping.attributes))
    if not scores:
        raise RequestError(400, "attributeScores: empty; give at least one attribute's score", "attributeScores")
    # the comment, context and tokens are checked as analyze checks them
    parsed: AnalyzeRequest = analyze_request({**{k: v for k, v in body.items() if k != "attributeScores"},
                                              "requestedAttributes": {name: {} for name in scores}}, limits)
    check_analyze(parsed, mapping)  # a language the model does not read is analyze's 400
    text = parsed.example.text
    units = utf16_units(text)  # Perspective's spanScores count UTF-16 code units
    labels: dict[str, Any] = {}
    said_by: dict[str, str] = {}  # task → the attribute that gave its label
    spans: dict[str, list[tuple[int, int]]] = {}
    for name, entry in scores.items():
        where = f"attributeScores.{name}"
        entry = json_object(entry, where, ("summaryScore", "spanScores"))
        if not entry:
            raise RequestError(400, f"{where}: no score; give summaryScore or spanScores", where)
        attribute = mapping.attributes[name]
        if "summaryScore" in entry:
            value = _score(entry["summaryScore"], f"{where}.summaryScore")
            if attribute.task is None:
                raise RequestError(400, f"{where}.summaryScore: {name} has no label to suggest (spans only)", where)
            label: Any = None  # a label other than true/false scored under 0.5 says nothing of the task
            if attribute.label in ("true", "false"):
                label = (value >= 0.5) == (attribute.label == "true")
            elif value >= 0.5:
                label = attribute.label
            if label is not None and labels.get(attribute.task, label) != label:
                raise RequestError(400, f"{where}.summaryScore: {name} and {said_by[attribute.task]} both score task "
                                        f"{attribute.task} and disagree ({label} against {labels[attribute.task]})",
                                   f"{where}.summaryScore")
            if label is not None:
                labels[attribute.task], said_by[attribute.task] = label, name
        if "spanScores" in entry:
            if attribute.span_type is None:
                raise RequestError(400, f"{where}.spanScores: {name} has no spans", where)
            found = spans.setdefault(attribute.span_type, [])
            given = expect_json(entry["spanScores"], ("array",), f"{where}.spanScores")
            check_count(given, MAX_SPAN_SCORES, f"{where}.spanScores", "spans")
            for i, span in enumerate(given):
                at = f"{where}.spanScores[{i}]"
                span = json_object(span, at, ("begin", "end", "score"), ("begin", "end"))
                begin, end = (expect_json(span[k], ("number",), f"{at}.{k}") for k in ("begin", "end"))
                if not (isinstance(begin, int) and isinstance(end, int) and 0 <= begin < end <= units[-1]):
                    raise RequestError(400, f"{at}: begin and end must be whole numbers with 0 <= begin < end <= "
                                            f"{units[-1]} (the comment's length in UTF-16 code units)", at)
                start, stop = from_utf16(units, begin), from_utf16(units, end)
                if start is None or stop is None:
                    raise RequestError(400, f"{at}: begin or end falls inside a character (between the two UTF-16 "
                                            "units of a surrogate pair)", at)
                if "score" not in span or _score(span["score"], f"{at}.score") >= 0.5:
                    found.append((start, stop))
            spans[attribute.span_type] = sorted(set(found))
    example = Example(id=f"feedback-{uuid.uuid4().hex}", text=text, context=parsed.example.context, labels=labels,
                      spans=spans, annotations=[Annotation(annotator, dict(labels), dict(spans))],
                      meta={"source": "suggestscore", "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    return example, parsed.client_token


def _score(value: Any, where: str) -> float:
    value = json_object(value, where, ("value", "type"), ("value",))["value"]
    score = expect_json(value, ("number",), f"{where}.value")
    if not 0 <= score <= 1:
        raise RequestError(400, f"{where}.value: must lie in [0, 1], got {score}", f"{where}.value")
    return float(score)


class FeedbackFile:
    """An append-only JSONL file of suggestions, capped at `max_bytes` in all, at `key_share` of that per
    annotator (an API key's name, or `anonymous`), and at `max_line_bytes` a suggestion.

    Each annotator's bytes are counted from the file itself when the first suggestion comes (so a restart
    forgets nobody's share), then kept up to date as lines are appended.
    """

    def __init__(self, path: str | Path, max_bytes: int, key_share: float = 1.0, max_line_bytes: int | None = None):
        self.path, self.max_bytes = Path(path), max_bytes
        self.key_bytes = max(1, int(max_bytes * key_share))
        self.max_line_bytes = max_line_bytes if max_line_bytes is not None else max_bytes
        self._lock = threading.Lock()
        self._by_annotator: Optional[Counter] = None

    def append(self, example: Example, meta: dict[str, Any]) -> None:
        """Append one line (whole or not at all); 413 for a line over its bound, 507 when the file or the
        annotator's share would pass its cap (no retry promised: only its operator frees room)."""
        record = example.to_dict()
        record["meta"] = {**record["meta"], **meta}
        line = (json_text(record) + "\n").encode("utf-8")
        annotator = example.annotations[0].annotator if example.annotations else "anonymous"
        if len(line) > self.max_line_bytes:
            raise RequestError(413, f"body: the suggestion is {len(line)} bytes as a feedback line, over the limit "
                                    f"of {self.max_line_bytes} (--feedback-max-request-bytes)", "body")
        with self._lock:
            if self._by_annotator is None:
                self._by_annotator = _bytes_by_annotator(self.path)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                if os.fstat(fd).st_size + len(line) > self.max_bytes:
                    raise RequestError(507, f"the feedback file is full ({self.max_bytes} bytes, "
                                            "--feedback-max-bytes)", "feedback", [{"errorType": "FEEDBACK_FULL"}])
                if self._by_annotator[annotator] + len(line) > self.key_bytes:
                    raise RequestError(507, f"{annotator}'s share of the feedback file is full ({self.key_bytes} "
                                            "bytes, --feedback-key-share)", "feedback",
                                       [{"errorType": "FEEDBACK_FULL"}])
                written = os.write(fd, line)
                if written != len(line):  # a full disk: take the partial line back out
                    os.ftruncate(fd, os.fstat(fd).st_size - written)
                    raise OSError("the feedback line could not be written whole")
                os.fsync(fd)
                self._by_annotator[annotator] += len(line)
            finally:
                os.close(fd)


def _bytes_by_annotator(path: Path) -> Counter:
    """Bytes of the feedback file's lines per annotator (a line that does not parse counts for nobody)."""
    found: Counter = Counter()
    if not path.exists():
        return found
    with path.open("rb") as f:
        for raw in f:
            try:
                annotations = json.loads(raw).get("annotations") or [{}]
                found[str(annotations[0].get("annotator", "anonymous"))] += len(raw)
            except (ValueError, AttributeError, IndexError, TypeError):
                continue
    return found
