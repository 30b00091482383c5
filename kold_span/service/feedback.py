"""Moderators' corrections (Perspective's SuggestCommentScore) appended as training data.

`POST /v1alpha1/comments:suggestscore` takes a comment and the scores a moderator says it should
have had: per attribute a `summaryScore` (≥ 0.5: the attribute's label holds) and `spanScores`
(the character spans, each kept when its score is ≥ 0.5). With `--feedback FILE` each suggestion
becomes one line of the canonical JSONL that `kold-span convert` writes and `train` reads
(`data.format: jsonl`): the example's labels and spans, and the same as one `annotations` entry
whose annotator is the moderator (the API key's name, else `anonymous`). Lines are appended with
one `write` on a file opened `O_APPEND` (a whole line or nothing, however many requests write at
once), and the file is capped at `max_bytes` (past it, 429: the feedback file is full).
"""
from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Optional

from kold_span.data.example import Annotation, Example
from kold_span.data.jsonl import json_text
from kold_span.errors import RequestError
from kold_span.service.attributes import AttributeMap
from kold_span.service.requests import AnalyzeRequest, Limits, analyze_request, expect_json, json_object

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
    scores = json_object(body["attributeScores"], "attributeScores", tuple(mapping.attributes))
    if not scores:
        raise RequestError(400, "attributeScores: empty; give at least one attribute's score", "attributeScores")
    # the comment, context and tokens are checked as analyze checks them
    parsed: AnalyzeRequest = analyze_request({**{k: v for k, v in body.items() if k != "attributeScores"},
                                              "requestedAttributes": {name: {} for name in scores}}, limits)
    text = parsed.example.text
    labels: dict[str, Any] = {}
    spans: dict[str, list[tuple[int, int]]] = {}
    for name, entry in scores.items():
        where = f"attributeScores.{name}"
        entry = json_object(entry, where, ("summaryScore", "spanScores"))
        attribute = mapping.attributes[name]
        if "summaryScore" in entry:
            value = _score(entry["summaryScore"], f"{where}.summaryScore")
            if attribute.task is None:
                raise RequestError(400, f"{where}.summaryScore: {name} has no label to suggest (spans only)", where)
            if attribute.label in ("true", "false"):
                labels[attribute.task] = (value >= 0.5) == (attribute.label == "true")
            elif value >= 0.5:
                labels[attribute.task] = attribute.label
        if "spanScores" in entry:
            if attribute.span_type is None:
                raise RequestError(400, f"{where}.spanScores: {name} has no spans", where)
            found = spans.setdefault(attribute.span_type, [])
            for i, span in enumerate(expect_json(entry["spanScores"], ("array",), f"{where}.spanScores")):
                at = f"{where}.spanScores[{i}]"
                span = json_object(span, at, ("begin", "end", "score"), ("begin", "end"))
                begin, end = (expect_json(span[k], ("number",), f"{at}.{k}") for k in ("begin", "end"))
                if not (isinstance(begin, int) and isinstance(end, int) and 0 <= begin < end <= len(text)):
                    raise RequestError(400, f"{at}: begin and end must be whole numbers with 0 <= begin < end <= "
                                            f"{len(text)} (the comment's length)", at)
                if "score" not in span or _score(span["score"], f"{at}.score") >= 0.5:
                    found.append((begin, end))
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
    """An append-only JSONL file of suggestions, capped at `max_bytes`."""

    def __init__(self, path: str | Path, max_bytes: int):
        self.path, self.max_bytes = Path(path), max_bytes
        self._lock = threading.Lock()

    def append(self, example: Example, meta: dict[str, Any]) -> None:
        """Append one line (whole or not at all); 429 when the file would pass its cap."""
        record = example.to_dict()
        record["meta"] = {**record["meta"], **meta}
        line = (json_text(record) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                if os.fstat(fd).st_size + len(line) > self.max_bytes:
                    raise RequestError(429, f"the feedback file is full ({self.max_bytes} bytes, --feedback-max-bytes)",
                                       "feedback", [{"errorType": "FEEDBACK_FULL"}])
                written = os.write(fd, line)
                if written != len(line):  # a full disk: take the partial line back out
                    os.ftruncate(fd, os.fstat(fd).st_size - written)
                    raise OSError("the feedback line could not be written whole")
                os.fsync(fd)
            finally:
                os.close(fd)
