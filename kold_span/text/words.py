"""Words of any script, from Unicode's default word boundaries: the units of `align.snap: word`.

A snap mode for languages without Kiwi: `word_offsets` cuts a text at the default word
boundaries of Unicode (UAX #29, as the `regex` package implements them), so "treasonous",
"Hitler's", "don’t", "3.14" and "먹다가" are one word each, while every Han or Thai character
is a word of its own (UAX #29 does not segment those scripts into dictionary words, so a span
there may end after any character). `align.snap_spans(spans, text, "word")` widens each span
to the whole words it overlaps, as it does with morphemes and eojeol: a span never starts or
ends inside a word. Whitespace, punctuation and symbols are no word, so an edge there stays
where it is; only words pull edges outward.

Example:
    >>> text = "treasonous traitor, Hitler's"
    >>> [text[s:e] for s, e in word_offsets(text)]
    ['treasonous', 'traitor', "Hitler's"]
"""
from __future__ import annotations

import regex

from kold_span.data.example import Span

# (?w): \b follows Unicode's default word boundaries (UAX #29) rather than \w/\W changes.
_BOUNDARY = regex.compile(r"(?w)\b")
# A segment between two boundaries is a word when it holds a letter, digit, mark or connector
# (not when it is whitespace, punctuation or a symbol such as an emoji).
_WORD_CHARACTER = regex.compile(r"[\p{L}\p{N}\p{M}\p{Pc}]")


def word_offsets(text: str) -> tuple[Span, ...]:
    """End-exclusive offsets of the words of `text`, in order: runs between two default word boundaries
    that hold a letter, digit, mark or connector (``_``).

    Example:
        >>> text = "Hitler's racist , bigot, 먹다가"
        >>> [text[s:e] for s, e in word_offsets(text)]
        ["Hitler's", 'racist', 'bigot', '먹다가']
    """
    bounds = sorted({0, len(text)} | {m.start() for m in _BOUNDARY.finditer(text)})
    return tuple((start, end) for start, end in zip(bounds, bounds[1:])
                 if _WORD_CHARACTER.search(text, start, end))

