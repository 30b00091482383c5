"""KOLD's offensive comments with their gold offensive-span strings, as a Korean dialect study kept them.

Each record (JSON Lines, or a JSON list) holds `standard` (the KOLD comment), `dialect` (the same comment
rewritten in Gyeongsang dialect), `OFF` (true), `TGT` (KOLD level B: group, individual, others, untargeted),
`OFF_span` (the gold span's text on `standard`) and `OFF_span_dialect` (the span's text on `dialect`, or
null). The spans are given as text, not offsets, so the reader locates them (`locate_span`): a span
string that is not found whole holds several gold spans joined by ", ", each located in turn.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kold_span.corpora import register
from kold_span.corpora._common import bad_field, parse_bool, reports_skipped
from kold_span.corpora.kold import load_records, parse_target
from kold_span.data.bad_records import BadRecords
from kold_span.data.example import Example, Span, merge_spans
from kold_span.errors import ArgumentError, DataError

# A directory is the study's training side: three disjoint thirds.
TRAIN_FILES = ("detection_easy.jsonl", "detection_medium.jsonl", "detection_hard.jsonl")
# side → (text field, span field) of a record
SIDES = {"standard": ("standard", "OFF_span"), "dialect": ("dialect", "OFF_span_dialect")}
JOIN = ", "
AMBIGUOUS = "an ambiguous OFF span part (placed by the left-to-right rule)"


def locate_span(text: str, span: str) -> tuple[list[Span], bool]:
    """Character spans of `span` in `text`, and whether a part could have been placed elsewhere.

    The string is taken whole when it occurs in `text`; otherwise it is split at ", " and its parts
    are placed left to right, as KOLD lists several gold spans in the order of the comment: each
    part (longest run of consecutive pieces first, as a gold span may itself hold ", ") at its first
    occurrence after the previous part, else at its first occurrence anywhere. A part that occurs more
    than once in `text` makes the placement ambiguous (the rule chose). Raises ValueError naming the
    part that `text` does not hold.

    Example:
        >>> locate_span("너 같은 놈은 꺼져. 진짜 꺼져", "같은 놈은 꺼져")
        ([(2, 10)], False)
        >>> locate_span("바보.멍청이", "바보, 멍청이")
        ([(0, 2), (3, 6)], False)
        >>> locate_span("꺼져 제발 꺼져", "제발, 꺼져")  # the second 꺼져: the one after 제발
        ([(3, 5), (6, 8)], True)
        >>> locate_span("a, b and c", "a, b, c")  # "a, b" is one gold span holding ", "
        ([(0, 4), (9, 10)], False)
    """
    if not span:
        raise ValueError("the span is empty")
    if span in text:
        start = text.find(span)
        return [(start, start + len(span))], text.count(span) > 1
    pieces, spans, ambiguous, i, after = span.split(JOIN), [], False, 0, 0
    while i < len(pieces):
        for j in range(len(pieces), i, -1):
            part = JOIN.join(pieces[i:j])
            if part and part in text:
                start = text.find(part, after)
                start = text.find(part) if start < 0 else start
                spans.append((start, start + len(part)))
                ambiguous |= text.count(part) > 1
                after, i = start + len(part), j
                break
        else:
            if pieces[i]:
                raise ValueError(f"the part {pieces[i]!r} is not in the text")
            i += 1  # an empty piece: the string ended with the separator
    return merge_spans(spans), ambiguous


def parse_side(record: Any, side: str, where: str, group: str) -> tuple[Example, bool]:
    """One record's `side` → an Example with OFF, TGT and the located OFF span, and whether it was ambiguous."""
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(record).__name__}")
    text_field, span_field = SIDES[side]
    for name in (text_field, span_field, "TGT"):
        if name not in record:
            raise bad_field(where, name, "missing")
    text, span = record[text_field], record[span_field]
    if not isinstance(text, str) or not text.strip():
        raise bad_field(where, text_field, "expected a non-empty string")
    if span is None:
        raise bad_field(where, span_field, "null: the study gives no span on this side")
    if not isinstance(span, str):
        raise bad_field(where, span_field, f"expected the span's text as a string, got {span!r}")
    try:
        spans, ambiguous = locate_span(text, span)
        offensive = parse_bool(record.get("OFF", True), "OFF")
        target = parse_target(record["TGT"], offensive)
    except ValueError as err:
        raise bad_field(where, span_field, f"{err} (the {text_field} text)") from None
    except DataError as err:
        raise DataError(f"{where}: {err}") from None
    if not offensive:
        raise bad_field(where, "OFF", "false, but every comment of this corpus is offensive")
    suffix = "" if side == "standard" else f":{side}"
    return Example(id=group + suffix, text=text, labels={"OFF": True, "TGT": target}, spans={"OFF": spans},
                   meta={"side": side, "group": group}), ambiguous


@register("kold_gs")
@reports_skipped("kold_gs")
def read_kold_gs(path: Path, *, bad: BadRecords, side: str = "standard") -> list[Example]:
    """Read the study's JSON Lines / JSON list files (a directory: its `detection_easy/medium/hard.jsonl`).

    `side` is "standard" (the KOLD comment), "dialect" (its Gyeongsang rewrite, `OFF_span_dialect` located in it) or
    "both" (two examples of one comment, the dialect one's id ending ":dialect"; both carry `meta["group"]`, so a
    carved dev or test side never splits them). A record whose span on a side is null or not found there is a bad
    record (skip_bad: true leaves it out and counts it); ambiguous placements are counted in the reader's report.
    Examples have id `<file stem>:<record index>`, no context, labels `OFF` (true) and `TGT` (KOLD's names: group,
    individual, others, untargeted) and spans `OFF`.
    """
    if side not in (*SIDES, "both"):
        raise ArgumentError(f"reader 'kold_gs': option 'side' must be one of standard, dialect, both; got {side!r}")
    files = [path / name for name in TRAIN_FILES] if path.is_dir() else [path]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(f"kold_gs: no such file: {', '.join(missing)}")
    examples = []
    for file in files:
        for index, (where, record) in enumerate(load_records(file)):
            for one_side in SIDES if side == "both" else (side,):
                try:
                    example, ambiguous = parse_side(record, one_side, where, f"{file.stem}:{index}")
                except DataError as err:
                    bad.handle(err)
                    continue
                if ambiguous:
                    bad.report.note(AMBIGUOUS, example.id)
                examples.append(example)
    return examples
