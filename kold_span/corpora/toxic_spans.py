"""SemEval-2021 Task 5 Toxic Spans: the released `tsd_*.csv` files and the per-annotator raw form.

`toxic_spans` reads `tsd_train.csv` / `tsd_trial.csv`: a `spans` column holding a list of
toxic character offsets and a `text` column. Offsets become end-exclusive `spans["OFF"]`.

`toxic_spans_raw` reads the directory with the crowd annotations:
- `comments.csv`: comment_id, comment_text
- `annotations.csv`: annotation, comment_id, worker, country, all toxic, not toxic
- `spans.csv`: annotation, type, start, end

What the raw data look like (checked against the released files):
- `end` in spans.csv is exclusive: `text[start:end]` is the marked word without the
  following space or punctuation, and for the 857 tsd_train comments whose annotators all
  marked the same single span, the released offsets are `range(start, end)` in all 857
  (`range(start, end + 1)` in none).
- 94 rows of spans.csv end past their comment's text (e.g. 0..569 on a 63-character
  comment); they are bad records, skipped only with `skip_bad=True`.
- A few span types are empty (read as no type) or cut short ("Insu"); types are kept verbatim.

Gold spans: a character is gold when at least `min_annotators` annotations cover it.
The released `tsd_train.csv` does not follow the fixed "at least 2" rule: it equals that
rule for 46.5% of its comments (tsd_trial: 45.5%), while `min_annotators="half"` (at least
half, rounded up, of the annotations that mark any span) reproduces 91.2% of them (tsd_trial:
91.7%), matching comments by text (measured by `tests/test_corpora_public.py` on the full data).
"""
from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from kold_span.corpora import register
from kold_span.corpora._common import (CsvRecords, bad_field, find_file, majority, parse_bool, parse_int,
                                       reports_skipped)
from kold_span.data.bad_records import BadRecords
from kold_span.data.example import Annotation, Example, Span, merge_spans, offsets_to_spans
from kold_span.errors import ArgumentError


@register("toxic_spans")
@reports_skipped("toxic_spans")
def read_toxic_spans(path: Path, *, bad: BadRecords, split: str = "train") -> list[Example]:
    """Read a SemEval Toxic Spans `tsd_*.csv` file (a directory means its `tsd_{split}.csv`, split "train" or
    "trial"): examples with id `<file stem>-<row index>`, `spans["OFF"]` and `labels["toxic"]` (True when any
    character is toxic).

    Example:
        >>> from kold_span.corpora import read
        >>> examples = read("toxic_spans", "../shared/data/toxic_spans", split="trial")  # doctest: +SKIP
        >>> examples[0].span_texts("OFF")  # doctest: +SKIP
        ['moron', 'bigot']
    """
    file = find_file(path, [f"tsd_{split}.csv"], "toxic_spans")
    examples = []
    for index, line, row in CsvRecords(file, ("spans", "text"), bad):
        with bad.guard():
            examples.append(_tsd_example(row, f"{file.stem}-{index}", f"{file}:{line}"))
    return examples


def _tsd_example(row: dict[str, str], example_id: str, where: str) -> Example:
    """One tsd row → an example; offsets must be integers inside the text."""
    text = row["text"]
    try:
        offsets = json.loads(row["spans"])
    except json.JSONDecodeError:
        raise bad_field(where, "spans", f"expected a list of offsets like [3, 4, 5], got {row['spans']!r}") from None
    if not isinstance(offsets, list) or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets):
        raise bad_field(where, "spans", f"expected a list of integer offsets, got {row['spans']!r}")
    outside = [o for o in offsets if not 0 <= o < len(text)]
    if outside:
        raise bad_field(where, "spans", f"offset(s) {outside[:5]} outside text of length {len(text)}")
    off_spans = offsets_to_spans(offsets)
    return Example(id=example_id, text=text, labels={"toxic": bool(off_spans)}, spans={"OFF": off_spans})


@dataclass
class _RawAnnotation:
    """One row of annotations.csv with the spans that spans.csv gives it."""

    comment_id: str
    worker: str
    country: str
    all_toxic: bool
    not_toxic: bool
    typed_spans: list[tuple[Optional[str], Span]] = field(default_factory=list)


@register("toxic_spans_raw")
@reports_skipped("toxic_spans_raw")
def read_toxic_spans_raw(path: Path, *, bad: BadRecords,
                         min_annotators: Union[int, str] = 2) -> list[Example]:
    """Read the raw Toxic Spans annotations (the directory with comments.csv, annotations.csv and spans.csv, or one
    of those files): one example per comment, one `Annotation` per annotation.

    A character is gold when at least `min_annotators` annotations cover it; "half" means at least half (rounded up)
    of the annotations that mark any span, which is closest to the released tsd files. Examples (id
    `toxic_spans-<comment_id>`, in comments.csv order) have gold `spans["OFF"]`, `labels["toxic"]` and
    `labels["span_type"]`: the span type covering most gold characters, counting each annotation's typed spans by
    their characters inside the gold spans (ties → alphabetically first; "none" when there is no gold span; None when
    only untyped spans cover it). Each annotation has `annotator` = worker, `spans["OFF"]`, `labels` = {"type": the
    most frequent type of its spans (by count; ties → alphabetically first; None without spans), "all_toxic",
    "not_toxic" (the raw flags)} and `traits` = {"country"}.
    """
    if not (min_annotators == "half" or (isinstance(min_annotators, int) and min_annotators >= 1)):
        raise ArgumentError(f"toxic_spans_raw: min_annotators must be a positive integer or 'half', "
                            f"got {min_annotators!r}")
    directory = path if path.is_dir() else path.parent
    texts = _read_comments(find_file(directory, ["comments.csv"], "toxic_spans_raw"), bad)
    raw = _read_annotations(find_file(directory, ["annotations.csv"], "toxic_spans_raw"), texts, bad)
    _read_spans(find_file(directory, ["spans.csv"], "toxic_spans_raw"), raw, texts, bad)
    by_comment: dict[str, list[_RawAnnotation]] = defaultdict(list)
    for annotation in raw.values():
        by_comment[annotation.comment_id].append(annotation)
    return [_raw_example(cid, text, by_comment[cid], min_annotators) for cid, text in texts.items()]


def _read_comments(file: Path, bad: BadRecords) -> dict[str, str]:
    """comment_id → comment_text, in file order."""
    texts: dict[str, str] = {}
    for _, line, row in CsvRecords(file, ("comment_id", "comment_text"), bad):
        if row["comment_id"] in texts:
            bad.handle(bad_field(f"{file}:{line}", "comment_id", f"duplicate id {row['comment_id']!r}"))
        else:
            texts[row["comment_id"]] = row["comment_text"]
    return texts


def _read_annotations(file: Path, texts: dict[str, str], bad: BadRecords) -> dict[str, _RawAnnotation]:
    """annotation id → its comment, worker, country and flags."""
    columns = ("annotation", "comment_id", "worker", "country", "all toxic", "not toxic")
    raw: dict[str, _RawAnnotation] = {}
    for _, line, row in CsvRecords(file, columns, bad):
        where = f"{file}:{line}"
        with bad.guard():
            if row["annotation"] in raw:
                raise bad_field(where, "annotation", f"duplicate id {row['annotation']!r}")
            if row["comment_id"] not in texts:
                raise bad_field(where, "comment_id", f"{row['comment_id']!r} is not in comments.csv")
            raw[row["annotation"]] = _RawAnnotation(
                comment_id=row["comment_id"], worker=row["worker"], country=row["country"],
                all_toxic=parse_bool(row["all toxic"], "all toxic", where),
                not_toxic=parse_bool(row["not toxic"], "not toxic", where))
    return raw


def _read_spans(file: Path, raw: dict[str, _RawAnnotation], texts: dict[str, str], bad: BadRecords) -> None:
    """Attach each spans.csv row (end-exclusive) to its annotation."""
    for _, line, row in CsvRecords(file, ("annotation", "type", "start", "end"), bad):
        where = f"{file}:{line}"
        with bad.guard():
            annotation = raw.get(row["annotation"])
            if annotation is None:
                raise bad_field(where, "annotation", f"{row['annotation']!r} is not in annotations.csv")
            start, end = parse_int(row["start"], where, "start"), parse_int(row["end"], where, "end")
            text_len = len(texts[annotation.comment_id])
            if not 0 <= start < end <= text_len:
                raise bad_field(where, "end" if end > text_len else "start",
                                f"span [{start}, {end}) outside comment {annotation.comment_id} "
                                f"of length {text_len}, or empty")
            annotation.typed_spans.append((row["type"] or None, (start, end)))


def _raw_example(comment_id: str, text: str, raw: list[_RawAnnotation],
                 min_annotators: Union[int, str]) -> Example:
    """One comment with its annotations, gold spans and span type."""
    votes: Counter = Counter()
    for annotation in raw:
        votes.update({i for _, (s, e) in annotation.typed_spans for i in range(s, e)})
    if min_annotators == "half":
        markers = sum(1 for a in raw if a.typed_spans)
        threshold = max(1, math.ceil(markers / 2))
    else:
        threshold = min_annotators
    gold = {i for i, n in votes.items() if n >= threshold}
    type_chars: Counter = Counter()
    for annotation in raw:
        chars_by_type: dict[str, set[int]] = defaultdict(set)
        for span_type, (s, e) in annotation.typed_spans:
            if span_type is not None:
                chars_by_type[span_type].update(range(s, e))
        type_chars.update({t: len(chars & gold) for t, chars in chars_by_type.items() if chars & gold})
    annotations = [
        Annotation(annotator=a.worker,
                   labels={"type": majority(Counter(t for t, _ in a.typed_spans if t is not None)),
                           "all_toxic": a.all_toxic, "not_toxic": a.not_toxic},
                   spans={"OFF": merge_spans(span for _, span in a.typed_spans)},
                   traits={"country": a.country})
        for a in raw]
    return Example(id=f"toxic_spans-{comment_id}", text=text,
                   labels={"toxic": bool(gold), "span_type": majority(type_chars) if gold else "none"},
                   spans={"OFF": offsets_to_spans(gold)}, annotations=annotations,
                   meta={"comment_id": comment_id, "min_annotators": threshold})
