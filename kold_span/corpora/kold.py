"""KOLD (Korean Offensive Language Dataset) reader.

The released `kold_v1.json` is a JSON list of records with `guid, source, date,
title, comment, OFF, TGT, GRP, OFF_span, TGT_span, raw_labels`; each raw label has
`offensiveness, annotator_id, off_start_idx, off_end_idx, target, target_group,
tgt_start_idx, tgt_end_idx` where start/end are parallel lists and the end index is
*inclusive*. Gold spans are the characters that at least `min_annotators` marked.
"""
from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path
from typing import Any, Optional

from kold_span.corpora import register
from kold_span.corpora._common import parse_bool, reports_skipped
from kold_span.data.bad_records import BadRecords
from kold_span.data.example import Annotation, Example, Span, offsets_to_spans
from kold_span.data.jsonl import iter_json_lines, parse_json_document, read_utf8
from kold_span.errors import DataError

REQUIRED = ("comment", "raw_labels")
TARGET_TYPES = ("individual", "group", "others", "untargeted")
_SPAN_FIELDS = {"OFF": ("off_start_idx", "off_end_idx"), "TGT": ("tgt_start_idx", "tgt_end_idx")}


def load_records(path: Path) -> list[tuple[str, Any]]:
    """(where, record) pairs from a JSON list or a JSONL file."""
    raw = read_utf8(path)
    if raw.lstrip().startswith("["):
        records = parse_json_document(raw, path)
        if not isinstance(records, list):
            raise DataError(f"{path}:1: expected a JSON list of records, got {type(records).__name__}")
        return [(f"{path}: record {i}", r) for i, r in enumerate(records)]
    return list(iter_json_lines(path))


def inclusive_spans(starts: Any, ends: Any, text_len: int, field: str) -> list[Span]:
    """KOLD's parallel inclusive start/end lists → end-exclusive spans."""
    starts = [] if starts is None else starts
    ends = [] if ends is None else ends
    if not isinstance(starts, list) or not isinstance(ends, list):
        raise DataError(f"field {field!r}: start/end indices must be lists")
    if len(starts) != len(ends):
        raise DataError(f"field {field!r}: {len(starts)} start indices but {len(ends)} end indices")
    spans = []
    for start, end in zip(starts, ends):
        if not (isinstance(start, int) and isinstance(end, int)) or isinstance(start, bool) or isinstance(end, bool):
            raise DataError(f"field {field!r}: indices must be integers, got {start!r}..{end!r}")
        if not 0 <= start <= end < text_len:
            raise DataError(f"field {field!r}: span {start}..{end} (inclusive) outside comment of length {text_len}")
        spans.append((start, end + 1))
    return spans


def majority_offsets(annotator_spans: list[list[Span]], min_annotators: int = 2) -> list[Span]:
    """Characters marked by at least `min_annotators` annotators, as end-exclusive spans.

    >>> majority_offsets([[(57, 85)], [(56, 85)], [(0, 85)]])
    [(56, 85)]
    """
    votes: Counter[int] = Counter()
    for spans in annotator_spans:
        votes.update({i for s, e in spans for i in range(s, e)})
    return offsets_to_spans(i for i, n in votes.items() if n >= min_annotators)


def flatten(value: Any) -> list[str]:
    """Flatten KOLD's nested label lists ([['group', 'individual']]) into strings."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    return [item for v in value for item in flatten(v)] if isinstance(value, list) else [str(value)]


def parse_groups(grp: Any) -> list[str]:
    """GRP ('gender-women, race-chinese' or a list) → sorted unique group names."""
    if grp is None:
        return []
    names = grp if isinstance(grp, list) else str(grp).replace(";", ",").split(",")
    if not all(isinstance(n, str) for n in names):
        raise DataError(f"field 'GRP': expected group names (strings), got {grp!r}")
    return sorted({n.strip() for n in names if n and n.strip()})


def parse_target(tgt: Any, offensive: bool) -> Optional[str]:
    """TGT → one of TARGET_TYPES for offensive comments, None otherwise."""
    if not offensive:
        return None
    if tgt is None or str(tgt).strip() in ("", "none", "None"):
        return "untargeted"
    value = str(tgt).strip().lower()
    value = {"other": "others", "ind": "individual", "grp": "group", "unt": "untargeted", "oth": "others"}.get(value, value)
    if value not in TARGET_TYPES:
        raise DataError(f"field 'TGT': unknown target type {tgt!r}; expected one of {TARGET_TYPES}")
    return value


def parse_record(record: Any, min_annotators: int) -> Example:
    """One KOLD record → Example (raises DataError naming the field)."""
    if not isinstance(record, dict):
        raise DataError(f"expected a JSON object, got {type(record).__name__}")
    for key in REQUIRED:
        if key not in record:
            raise DataError(f"missing field {key!r}")
    text = record["comment"]
    if not isinstance(text, str) or not text:
        raise DataError("field 'comment': expected a non-empty string")
    raw_labels = record["raw_labels"]
    if isinstance(raw_labels, str):
        try:
            raw_labels = ast.literal_eval(raw_labels)
        except (ValueError, SyntaxError) as err:
            raise DataError(f"field 'raw_labels': cannot parse {err}") from err
    if not isinstance(raw_labels, list):
        raise DataError("field 'raw_labels': expected a list of annotator records")

    annotations = []
    for j, raw in enumerate(raw_labels):
        if not isinstance(raw, dict):
            raise DataError(f"field 'raw_labels[{j}]': expected an object")
        spans = {name: inclusive_spans(raw.get(start_key), raw.get(end_key), len(text),
                                       f"raw_labels[{j}].{start_key}/{end_key}")
                 for name, (start_key, end_key) in _SPAN_FIELDS.items()}
        labels = {"OFF": parse_bool(raw.get("offensiveness"), f"raw_labels[{j}].offensiveness"),
                  "TGT": flatten(raw.get("target")), "GRP": flatten(raw.get("target_group"))}
        annotations.append(Annotation(annotator=str(raw.get("annotator_id", j)), labels=labels, spans=spans))

    gold = {name: majority_offsets([a.spans[name] for a in annotations], min_annotators) for name in _SPAN_FIELDS}
    if "OFF" in record:
        offensive = parse_bool(record["OFF"], "OFF")
    else:
        offensive = sum(a.labels["OFF"] for a in annotations) >= min_annotators
    labels = {"OFF": offensive, "TGT": parse_target(record.get("TGT"), offensive), "GRP": parse_groups(record.get("GRP"))}
    meta = {k: record[k] for k in ("source", "date") if k in record}
    for name in _SPAN_FIELDS:
        if f"{name}_span" in record:
            stated = record[f"{name}_span"]
            if stated is not None and not isinstance(stated, str):
                raise DataError(f"field '{name}_span': expected the marked text as a string, got {stated!r}")
            meta[f"{name}_span"] = stated or ""
    title = record.get("title")
    if title is not None and not isinstance(title, str):
        raise DataError("field 'title': expected a string")
    return Example(id=str(record.get("guid", "")), text=text, context=title or None, labels=labels,
                   spans=gold, annotations=annotations, meta=meta)


def span_text_agrees(example: Example, name: str) -> bool:
    """Whether the gold spans' text equals the record's `<name>_span` field.

    Several spans are compared by their concatenated characters, ignoring the
    separators a file may put between them ('|' or white space).
    """
    stated = example.meta.get(f"{name}_span")
    if stated is None:
        return True
    texts = example.span_texts(name)
    return "".join(texts) == stated if len(texts) <= 1 else _squeeze("".join(texts)) == _squeeze(stated)


def _squeeze(text: str) -> str:
    return "".join(ch for ch in text if not ch.isspace() and ch != "|")


@register("kold")
@reports_skipped("kold")
def read_kold(path: Path, *, bad: BadRecords, min_annotators: int = 2) -> list[Example]:
    """Read KOLD's `kold_v1.json` (a JSON list) or a JSONL file of the same records into examples: `text`=comment,
    `context`=title, labels OFF/TGT/GRP and spans OFF/TGT, a character gold when at least `min_annotators`
    annotators marked it. `read_kold.last_report` lists the records skipped, and those whose gold span text differs
    from `OFF_span`/`TGT_span`."""
    examples = []
    for index, (where, record) in enumerate(load_records(Path(path))):
        guid = record.get("guid", "?") if isinstance(record, dict) else "?"
        try:
            example = parse_record(record, min_annotators)
        except DataError as err:
            bad.handle(DataError(f"{where} (guid {guid}): {err}"))
            continue
        example.meta["index"] = index
        for name in _SPAN_FIELDS:
            if not span_text_agrees(example, name):
                bad.report.disagree(f"{name}_span", example.id)
        examples.append(example)
    return examples
