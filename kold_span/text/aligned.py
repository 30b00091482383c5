"""Text edited with an exact alignment back to the text it came from.

An `AlignedText` holds the `original` text, the edited `text`, and for each character of `text`
the end-exclusive range of `original` it came from (`sources`). Every edit goes through
`AlignedText.edit` (a list of replacements on `text`), which composes the alignment, so a chain
of edits (normalization steps, or the perturbations that disguise a text) still knows, for every
character, where it came from. Spans travel both ways:

- `to_original(start, end)`: a span found on the edited text, as a span of the original that
  covers every original character in between, removed ones included (the zero-width space inside
  a word, the dot in `씨.발`), widened to whole grapheme clusters of the original so a span never
  starts on a combining accent or inside an emoji ZWJ sequence;
- `from_original(start, end)`: a span of the original (a gold span) on the edited text.

Rules of the alignment:

- a character that replaces original characters gets the whole range they span; several
  characters replacing one range all get that range (`ﬁ` → `fi`: both come from the ligature);
- a character inserted where nothing was replaced gets an empty range at its position;
- a removed character belongs to no range.

The ranges are monotone (starts and ends never decrease) and lie inside the original.

Example:
    >>> t = AlignedText.identity("씨.발 놈").edit([(1, 2, "")])
    >>> t.text, t.to_original(0, 2), t.from_original(0, 3)
    ('씨발 놈', (0, 3), (0, 2))
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Sequence

import regex

from kold_span.data.example import Span

Replacement = tuple[int, int, str]  # (start, end) on the edited text, end-exclusive, and what replaces it

_GRAPHEME = regex.compile(r"\X")


@dataclass(frozen=True)
class AlignedText:
    """An edited text and, per character, the end-exclusive range of `original` it came from."""

    original: str
    text: str
    sources: tuple[Span, ...]

    def __post_init__(self) -> None:
        if len(self.sources) != len(self.text):
            raise ValueError(f"{len(self.sources)} sources for a text of {len(self.text)} characters")

    @classmethod
    def identity(cls, text: str) -> "AlignedText":
        """The text unedited: character i comes from original character i.

        Example:
            >>> AlignedText.identity("ab").sources
            ((0, 1), (1, 2))
        """
        return cls(text, text, tuple(zip(range(len(text)), range(1, len(text) + 1))))

    @property
    def changed(self) -> bool:
        """Whether any edit changed the text."""
        return self.text != self.original

    def edit(self, replacements: Iterable[Replacement]) -> "AlignedText":
        """The text with `replacements` applied, the alignment composed: ``(start, end, new)`` on `self.text`, sorted
        and not overlapping (else a ValueError); ``start == end`` inserts, ``new == ""`` removes.

        Example:
            >>> t = AlignedText.identity("ﬁne").edit([(0, 1, "fi")])
            >>> t.text, t.sources
            ('fine', ((0, 1), (0, 1), (1, 2), (2, 3)))
        """
        pieces: list[str] = []
        sources: list[Span] = []
        done = 0
        for start, end, new in replacements:
            if not done <= start <= end <= len(self.text):
                raise ValueError(f"replacement ({start}, {end}) is out of order or outside a text of "
                                 f"{len(self.text)} characters (previous one ended at {done})")
            pieces.append(self.text[done:start])
            sources.extend(self.sources[done:start])
            pieces.append(new)
            sources.extend([self._source_of(start, end)] * len(new))
            done = end
        pieces.append(self.text[done:])
        sources.extend(self.sources[done:])
        return AlignedText(self.original, "".join(pieces), tuple(sources))

    def _source_of(self, start: int, end: int) -> Span:
        """The original range that characters replacing text[start:end] come from."""
        if start < end:
            return self.sources[start][0], self.sources[end - 1][1]
        before = self.sources[start - 1][1] if start > 0 else 0
        after = self.sources[start][0] if start < len(self.sources) else len(self.original)
        # Inserted between two characters of one replacement (ranges overlap): it belongs to both.
        return (after, after) if before <= after else (after, before)

    def to_original(self, start: int, end: int, graphemes: bool = True) -> Span:
        """A span of `text` as the span of `original` its characters came from.

        Every original character from the first one's start to the last one's end is inside,
        removed ones too. With `graphemes`, the span is widened to whole grapheme clusters of
        the original. An empty span, or one whose characters were all inserted, maps to an
        empty span at its position.

        Example:
            >>> t = AlignedText.identity("a\\u200bb c").edit([(1, 2, "")])
            >>> t.text, t.to_original(0, 2), t.to_original(3, 4)
            ('ab c', (0, 3), (4, 5))
        """
        if not 0 <= start <= end <= len(self.text):
            raise ValueError(f"span ({start}, {end}) is outside a text of {len(self.text)} characters")
        if start == end:
            position = self._source_of(start, start)[0]
            return position, position
        span = self.sources[start][0], self.sources[end - 1][1]
        if graphemes and span[0] < span[1]:
            span = grapheme_span(self.original, *span, bounds=self._graphemes)
        return span

    # Found once per text: the spans of one long comment would otherwise each walk the whole of it again.
    @cached_property
    def _graphemes(self) -> list[int]:
        return grapheme_bounds(self.original)

    @cached_property
    def _starts(self) -> list[int]:
        return [s for s, _ in self.sources]

    @cached_property
    def _ends(self) -> list[int]:
        return [e for _, e in self.sources]

    def from_original(self, start: int, end: int) -> Span:
        """A span of `original` (a gold span) as the span of `text` that came from it.

        The characters whose range overlaps the span, and inserted characters strictly inside
        it. A span whose characters were all removed maps to an empty span at its position.

        Example:
            >>> t = AlignedText.identity("씨.발 놈").edit([(1, 2, "")])
            >>> t.from_original(0, 3), t.from_original(1, 2), t.from_original(4, 5)
            ((0, 2), (1, 1), (3, 4))
        """
        if not 0 <= start <= end <= len(self.original):
            raise ValueError(f"span ({start}, {end}) is outside an original of {len(self.original)} characters")
        # Sources are monotone, so the characters inside (a range overlapping the span; an inserted
        # character's empty range strictly inside it) run from the first ending after `start` to the
        # last starting before `end`; none inside: the position after those ending at or before `start`.
        first = bisect_right(self._ends, start)
        last = bisect_left(self._starts, end) if start < end else first
        return (first, last) if first < last else (first, first)

    def spans_from_original(self, spans: dict[str, list[Span]]) -> dict[str, list[Span]]:
        """`from_original` of every span, by type; a span whose characters were all removed is dropped."""
        moved = {name: [self.from_original(s, e) for s, e in pairs] for name, pairs in spans.items()}
        return {name: [(s, e) for s, e in pairs if s < e] for name, pairs in moved.items()}

    def removed(self) -> list[int]:
        """Original positions no character of `text` came from (removed characters), in order.

        Example:
            >>> AlignedText.identity("a\\u200bb").edit([(1, 2, "")]).removed()
            [1]
        """
        covered = [False] * len(self.original)
        for s, e in self.sources:
            for i in range(s, e):
                covered[i] = True
        return [i for i, c in enumerate(covered) if not c]


def grapheme_bounds(text: str) -> list[int]:
    """The offsets where a grapheme cluster of `text` starts, and its length.

    Example:
        >>> grapheme_bounds("e\\u0301a")
        [0, 2, 3]
    """
    return [m.start() for m in _GRAPHEME.finditer(text)] + [len(text)]


def grapheme_span(text: str, start: int, end: int, bounds: Sequence[int] | None = None) -> Span:
    """The span widened to whole grapheme clusters of `text` (combining marks, ZWJ emoji, pairs).

    Example:
        >>> grapheme_span("ae\\u0301b", 2, 3)
        (1, 3)
    """
    bounds = grapheme_bounds(text) if bounds is None else bounds
    if start == end:
        return start, end
    first = bounds[bisect_right(bounds, start) - 1]
    last = bounds[bisect_left(bounds, end)]
    return first, last
