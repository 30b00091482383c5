"""Alignment between character spans and subword tokens (BIO tags), and between code points and UTF-16 units.

Encoding: `spans_to_tags` turns end-exclusive character spans into one tag per
token of a fast tokenizer's `offset_mapping`. Decoding: `tags_to_spans` turns
predicted tags back into character spans, optionally snapped to whole Korean
morphemes (Kiwi), whitespace-delimited words (eojeol) or words between Unicode word
boundaries (`words.word_offsets`, any language).

Token offsets are used as the tokenizer gives them, except that a leading
whitespace character inside a token's offset (BPE/SentencePiece tokens such as
"▁bar" or "Ġbar") is skipped, so a token never counts as covering the space
before its word.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from itertools import accumulate
from typing import Callable, Iterable, Optional, Sequence, Union

import numpy as np

from kold_span.config.choices import SnapMode
from kold_span.data.example import Span, merge_spans
from kold_span.errors import ArgumentError
from kold_span.text.morphemes import morpheme_offsets, morpheme_tags
from kold_span.text.words import word_offsets

# Grammatical morphemes (particles, endings, affixes, copula, auxiliaries, punctuation): a
# predicted span made only of these marks no offensive word and is dropped when snapping.
FUNCTION_TAGS = ("J", "E", "XS", "XP", "VCP", "VX", "SF", "SP", "SS", "SE", "SO")

IGNORE_INDEX = -100
SCHEMES = ("BIO", "IO")


class OverlapIndex:
    """Intervals (start, end) indexed for 'which of them overlap [start, end)?' in O(log n + hits).

    Spans of a long text ask this of its morphemes or tokens once each; scanning every unit for
    every span made decoding quadratic in the text's length. `overlapping_many` and `widen` ask it
    of many spans at once (a 20,000-character comment has thousands of predicted spans).

    Example:
        >>> index = OverlapIndex([(0, 2), (2, 3), (4, 6)])
        >>> index.overlapping(1, 3), index.overlapping(3, 4), index.overlapping(0, 10)
        ([0, 1], [], [0, 1, 2])
        >>> index.widen([(1, 3), (3, 4)])  # (1, 3) grows over (0, 2) and (2, 3); (3, 4) overlaps none
        [(0, 3), (3, 4)]
    """

    def __init__(self, intervals: Sequence[Sequence[int]]) -> None:
        pairs = np.asarray(intervals, dtype=np.int64).reshape(-1, 2)
        self.order = np.argsort(pairs[:, 0], kind="stable")
        self.starts = pairs[self.order, 0]
        self.ends = pairs[self.order, 1]
        # The furthest end reached so far, in start order: ascending, so it can be bisected.
        self.reach = np.maximum.accumulate(self.ends) if len(pairs) else self.ends
        # Given in start order and none ending before an earlier one (tokens, words, morphemes): the
        # intervals a span overlaps are then one run of the input order.
        self.contiguous = bool((self.order == np.arange(len(pairs))).all() and (self.ends == self.reach).all())

    def _bounds(self, spans: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each span's start and, in start order, the positions [first, last) its overlapping intervals lie in:
        those before `first` end at or before its start, those from `last` on start at or after its end."""
        pairs = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        return (pairs[:, 0], np.searchsorted(self.reach, pairs[:, 0], side="right"),
                np.searchsorted(self.starts, pairs[:, 1], side="left"))

    def overlapping(self, start: int, end: int) -> list[int]:
        """Indices (in input order) of the intervals with s < end and e > start."""
        return np.arange(len(self.starts))[self.overlapping_many([(start, end)])[0]].tolist()

    def overlapping_many(self, spans: Sequence[Sequence[int]]) -> list[Union[slice, np.ndarray]]:
        """`overlapping` of each span, as an index into arrays over the intervals (input order): a slice
        when they are one run, else an array of indices."""
        starts, first, last = self._bounds(spans)
        if self.contiguous:
            return [slice(f, max(f, l)) for f, l in zip(first.tolist(), last.tolist())]
        return [np.sort(self.order[f:l][self.ends[f:l] > s]) for s, f, l in zip(starts, first, last)]

    def widen(self, spans: Sequence[Sequence[int]]) -> list[Span]:
        """Each span grown to the union of itself and every interval it overlaps.

        The interval at `first` overlaps the span whenever any does (its end is the first reach past the
        span's start) and starts first; the furthest end among them is the reach at `last` - 1.
        """
        starts, first, last = self._bounds(spans)
        ends = np.asarray(spans, dtype=np.int64).reshape(-1, 2)[:, 1]
        if not len(self.starts):
            return list(zip(starts.tolist(), ends.tolist()))
        hit = first < last
        wide_start = np.where(hit, np.minimum(starts, self.starts[np.minimum(first, len(self.starts) - 1)]), starts)
        wide_end = np.where(hit, np.maximum(ends, self.reach[np.maximum(last - 1, 0)]), ends)
        return list(zip(wide_start.tolist(), wide_end.tolist()))


def bio_labels(span_types: Sequence[str]) -> list[str]:
    """The label list: "O", then "B-{type}", "I-{type}" for each type in the given order.

    Example:
        >>> bio_labels(["OFF", "TGT"])
        ['O', 'B-OFF', 'I-OFF', 'B-TGT', 'I-TGT']
    """
    return ["O"] + [f"{prefix}-{t}" for t in span_types for prefix in ("B", "I")]


def content_offsets(offsets: Iterable[Sequence[int]], text: Optional[str] = None) -> list[Span]:
    """Token offsets as int pairs, each start moved past leading whitespace of `text`.

    Special tokens keep (0, 0). A token made only of whitespace becomes empty at
    the end of that whitespace. Without `text` the offsets are returned unchanged.
    """
    out: list[Span] = []
    for pair in offsets:
        start, end = int(pair[0]), int(pair[1])
        if text is not None:
            while start < end and text[start].isspace():
                start += 1
        out.append((start, end))
    return out


def spans_to_tags(spans: Iterable[Span], offsets: Sequence[Sequence[int]], scheme: str = "BIO",
                  span_type: Optional[str] = None, segment_mask: Optional[Sequence[bool]] = None,
                  text: Optional[str] = None) -> list[Optional[str]]:
    """Tag each token "B"/"I"/"O" (or "B-{span_type}", ...) from end-exclusive character spans of the tagged text.

    `offsets` are one (start, end) per token (an encoding's `offset_mapping`); scheme "IO" tags every token inside
    a span "I". Special tokens (offset (0, 0)) and tokens False in `segment_mask` (e.g. the context segment of a
    pair encoding) get None, which the caller maps to `IGNORE_INDEX`. Pass `text` when token offsets may start
    with a space (BPE/SentencePiece), so that space does not count as covered.

    A token is inside a span when its characters overlap it (an empty token when
    it lies strictly inside). The first token inside a span gets "B", the
    following ones "I"; a token already tagged by an earlier span keeps its tag.

    Example:
        >>> spans_to_tags([(4, 10)], [(0, 0), (0, 3), (4, 7), (7, 10), (0, 0)])
        [None, 'O', 'B', 'I', None]
    """
    if scheme not in SCHEMES:
        raise ArgumentError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    if segment_mask is not None and len(segment_mask) != len(offsets):
        raise ValueError(f"segment_mask has {len(segment_mask)} entries for {len(offsets)} tokens")
    suffix = f"-{span_type}" if span_type is not None else ""
    ignored = [tuple(map(int, pair)) == (0, 0) or (segment_mask is not None and not segment_mask[i])
               for i, pair in enumerate(offsets)]
    token_spans = content_offsets(offsets, text)
    tags: list[Optional[str]] = [None if skip else "O" for skip in ignored]
    for start, end in sorted(spans):
        first = True
        for i, (tok_start, tok_end) in enumerate(token_spans):
            if ignored[i] or not (tok_start < end and start < tok_end):
                continue
            if tags[i] == "O":
                tags[i] = ("B" if first and scheme == "BIO" else "I") + suffix
            first = False
    return tags


def tags_to_spans(tags: Sequence[Optional[str]], offsets: Sequence[Sequence[int]], text: str,
                  snap: str = "none", trim: bool = True, span_type: Optional[str] = None,
                  segment_mask: Optional[Sequence[bool]] = None) -> list[Span]:
    """Turn per-token tags ("O", "B", "I", "B-OFF", ...; None = ignored) back into sorted, merged character spans of
    `text`, the tagged segment the token `offsets` point into.

    `snap` is a `SnapMode` or its name (see `snap_spans`); with "morpheme", spans made only of grammatical morphemes
    (a lone ending or particle) are dropped. `trim` strips whitespace around each span; `span_type` keeps only tags
    of that type; tokens False in `segment_mask` are ignored like None tags.

    Ill-formed BIO is repaired: an "I" that does not continue a run of the same
    type starts a new span. A run spans from its first token's start to its last
    token's end, so whitespace between its tokens is included. Ignored tokens
    (None, special (0, 0) offsets, masked) and "O" tags end a run.

    Example:
        >>> tags_to_spans([None, "O", "I", "I", None], [(0, 0), (0, 3), (4, 7), (8, 10), (0, 0)],
        ...               "you are it")
        [(4, 10)]
    """
    snap = SnapMode.parse(snap, "snap")
    if len(tags) != len(offsets):
        raise ValueError(f"{len(tags)} tags for {len(offsets)} tokens")
    if not len(tags):
        return []
    # Each distinct tag parsed once; then every token at once: whether it is in a run, whether it starts one.
    distinct = {tag: i for i, tag in enumerate(dict.fromkeys(tags))}
    parsed = [_parse_tag(tag) for tag in distinct]
    which = np.fromiter((distinct[tag] for tag in tags), dtype=np.int64, count=len(tags))
    type_ids = {tag_type: i for i, tag_type in enumerate(dict.fromkeys(t for _, t in parsed))}
    tag_type = np.array([type_ids[t] for _, t in parsed])[which]
    taken = np.array([p in ("B", "I") and (span_type is None or t == span_type) for p, t in parsed])[which]
    taken &= ~(np.asarray(offsets, dtype=np.int64).reshape(-1, 2) == 0).all(axis=1)  # special tokens
    if segment_mask is not None:
        taken &= np.asarray(segment_mask, dtype=bool)
    continues = np.array([p == "I" for p, _ in parsed])[which]
    continues[1:] &= taken[:-1] & (tag_type[1:] == tag_type[:-1])
    continues[0] = False
    run = np.cumsum(taken & ~continues)  # the run each taken token belongs to
    token_spans = np.asarray(content_offsets(offsets, text), dtype=np.int64).reshape(-1, 2)
    pieces = np.flatnonzero(taken & (token_spans[:, 0] < token_spans[:, 1]))  # runs' nonempty tokens
    spans: list[Span] = []
    if len(pieces):  # a run spans from its first nonempty token's start to its last one's end
        firsts = np.flatnonzero(np.r_[True, run[pieces][1:] != run[pieces][:-1]])
        spans = list(zip(np.minimum.reduceat(token_spans[pieces, 0], firsts).tolist(),
                         np.maximum.reduceat(token_spans[pieces, 1], firsts).tolist()))
    if trim:
        spans = [s for s in (trim_span(span, text) for span in spans) if s is not None]
    spans = snap_spans(spans, text, snap)
    if snap is SnapMode.MORPHEME:
        spans = drop_function_only(spans, text)
    return merge_spans(spans)


def drop_function_only(spans: Iterable[Span], text: str) -> list[Span]:
    """Drop spans whose morphemes are all grammatical (e.g. a lone ending 다 or particle 는).

    Example:
        >>> drop_function_only([(20, 21), (17, 21)], "이 기자 기사 쓰는 수준 진짜 바닥이다")
        [(17, 21)]
    """
    spans = list(spans)
    morphemes = morpheme_tags(text)
    grammatical = np.array([tag.startswith(FUNCTION_TAGS) for _, _, tag in morphemes], dtype=bool)
    found = OverlapIndex([(s, e) for s, e, _ in morphemes]).overlapping_many(spans)
    return [tuple(span) for span, at in zip(spans, found) if not grammatical[at].size or not grammatical[at].all()]


def trim_span(span: Span, text: str) -> Optional[Span]:
    """The span without leading/trailing whitespace; None when nothing is left."""
    start, end = span
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def snap_spans(spans: Iterable[Span], text: str, snap: str) -> list[Span]:
    """Widen each span to whole units of `text`: `snap` "morpheme", "eojeol", "word" or "none".

    The units are Kiwi's morphemes, runs of non-space characters (eojeol, punctuation
    included), or Unicode words (`words.word_offsets`: whitespace, punctuation and symbols
    are no word). A span grows to the union of itself and every unit it overlaps, so it never
    starts or ends inside one; an edge outside every unit stays. Kiwi gives contracted
    syllables (할 = 하 + ㄹ) several morphemes with the same offsets; the union rule handles
    them. Spans are returned one for one, in order (not merged: `merge_spans` does that).

    Example:
        >>> snap_spans([(3, 4)], "여성징병제에도 동의하라고", "eojeol")
        [(0, 7)]
        >>> text = "treasonous traitor, Hitler's"  # "ous traitor" and the "s" of "Hitler's"
        >>> snap_spans([(7, 18), (27, 28)], text, "word")
        [(0, 18), (20, 28)]
        >>> snap_spans([(3, 5), (8, 9)], "너 진짜바보냐 !!", "word")  # inside a word; on "!" (no word)
        [(2, 7), (8, 9)]
    """
    snap = SnapMode.parse(snap, "snap")
    if snap is SnapMode.NONE:
        return list(spans)
    return OverlapIndex(SNAP_UNITS[snap](text)).widen(list(spans))


def eojeol_offsets(text: str) -> tuple[Span, ...]:
    """End-exclusive offsets of the whitespace-delimited words (eojeol) of `text`."""
    return tuple(m.span() for m in re.finditer(r"\S+", text))


# The units each snap mode widens spans to (offsets in text order).
SNAP_UNITS: dict[SnapMode, Callable[[str], Sequence[Span]]] = {
    SnapMode.MORPHEME: morpheme_offsets, SnapMode.EOJEOL: eojeol_offsets, SnapMode.WORD: word_offsets}


def _parse_tag(tag: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """Split "B-OFF" into ("B", "OFF") and "I" into ("I", None); None stays (None, None)."""
    if tag is None:
        return None, None
    prefix, _, tag_type = tag.partition("-")
    if prefix not in ("B", "I", "O"):
        raise ArgumentError(f"tag must be None, 'O' or start with 'B'/'I', got {tag!r}")
    return prefix, (tag_type or None)


def utf16_units(text: str) -> list[int]:
    """For each code-point offset 0..len(text), the UTF-16 code units before it (what JavaScript's indices and
    Perspective's `spanScores` count): a character past U+FFFF is two units, a surrogate pair.

    Example:
        >>> utf16_units("a😀b")
        [0, 1, 3, 4]
    """
    return [0, *accumulate(2 if ord(ch) > 0xFFFF else 1 for ch in text)]


def from_utf16(units: list[int], unit: int) -> Optional[int]:
    """The code-point offset of UTF-16 offset `unit`, given the text's `utf16_units`; None when it falls inside
    a surrogate pair or outside the text.

    Example:
        >>> units = utf16_units("a😀b")
        >>> from_utf16(units, 3), from_utf16(units, 2), from_utf16(units, 5)
        (2, None, None)
    """
    at = bisect_left(units, unit)
    return at if at < len(units) and units[at] == unit else None
