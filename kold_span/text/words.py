"""Words of any script, from Unicode's default word boundaries, and spans widened to whole words.

A snap mode for languages without Kiwi: `word_offsets` cuts a text at the default word
boundaries of Unicode (UAX #29, as the `regex` package implements them), so "treasonous",
"Hitler's", "don’t", "3.14" and "먹다가" are one word each, while every Han or Thai character
is a word of its own (UAX #29 does not segment those scripts into dictionary words, so a span
there may end after any character). `snap_spans_to_words` widens each span to the whole words
it overlaps, as `align.snap_spans` does with morphemes and eojeol: a span never starts or
ends inside a word. An edge in whitespace or punctuation stays where it is; only words pull
edges outward.

Example:
    >>> text = "treasonous traitor, Hitler's"
    >>> snap_spans_to_words([(7, 18), (27, 28)], text)  # "ous traitor" and the "s" of "Hitler's"
    [(0, 18), (20, 28)]
"""
from __future__ import annotations

from typing import Iterable

import regex

from kold_span.data.example import Span
from kold_span.text.align import OverlapIndex

# (?w): \b follows Unicode's default word boundaries (UAX #29) rather than \w/\W changes.
_BOUNDARY = regex.compile(r"(?w)\b")
# A segment between two boundaries is a word when it holds a letter, digit, mark or connector
# (not when it is whitespace, punctuation or a symbol such as an emoji).
_WORD_CHARACTER = regex.compile(r"[\p{L}\p{N}\p{M}\p{Pc}]")


def word_offsets(text: str) -> tuple[Span, ...]:
    """End-exclusive offsets of the words of `text`, in order.

    Args:
        text: any text.

    Returns:
        One ``(start, end)`` per word: a run between two Unicode default word
        boundaries that holds a letter, digit, mark or connector (``_``).

    Example:
        >>> text = "Hitler's racist , bigot, 먹다가"
        >>> [text[s:e] for s, e in word_offsets(text)]
        ["Hitler's", 'racist', 'bigot', '먹다가']
    """
    bounds = sorted({0, len(text)} | {m.start() for m in _BOUNDARY.finditer(text)})
    return tuple((start, end) for start, end in zip(bounds, bounds[1:])
                 if _WORD_CHARACTER.search(text, start, end))


def snap_spans_to_words(spans: Iterable[Span], text: str) -> list[Span]:
    """Widen each span to the union of itself and every word of `text` it overlaps.

    Args:
        spans: end-exclusive character spans of `text`.
        text: the text the spans point into.

    Returns:
        The widened spans, one for one and in order (not merged: `merge_spans` does that).

    Example:
        >>> snap_spans_to_words([(3, 5), (8, 9)], "너 진짜바보냐 !!")  # inside a word; on "!" (no word)
        [(2, 7), (8, 9)]
    """
    words = word_offsets(text)
    index = OverlapIndex(words)
    widened = []
    for start, end in spans:
        hits = [words[i] for i in index.overlapping(start, end)]
        widened.append((min([start] + [s for s, _ in hits]), max([end] + [e for _, e in hits])))
    return widened
