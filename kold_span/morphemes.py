"""Korean morphemes with character offsets (Kiwi), shared by tokenizers and alignment."""
from __future__ import annotations

from functools import lru_cache

_KIWI = None


def kiwi():
    """One Kiwi analyser per process (loading its model takes about a second)."""
    global _KIWI
    if _KIWI is None:
        from kiwipiepy import Kiwi
        _KIWI = Kiwi()
    return _KIWI


@lru_cache(maxsize=65536)
def morpheme_offsets(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of every Kiwi morpheme; contracted morphemes may share offsets."""
    return tuple((t.start, t.start + t.len) for t in kiwi().tokenize(text))


def morpheme_pieces(text: str) -> list[tuple[int, int]]:
    """Non-overlapping, non-blank pieces of `text` cut at every morpheme and space boundary."""
    cuts = {0, len(text)}
    for start, end in morpheme_offsets(text):
        cuts.update((start, end))
    for i, ch in enumerate(text):
        if ch.isspace():
            cuts.update((i, i + 1))
    bounds = sorted(c for c in cuts if 0 <= c <= len(text))
    return [(s, e) for s, e in zip(bounds, bounds[1:]) if text[s:e].strip()]


class MorphemePreTokenizer:
    """A `tokenizers` custom pre-tokenizer splitting text into Kiwi morphemes."""

    def _split(self, _index, normalized):
        text = str(normalized)
        return [normalized[s:e] for s, e in morpheme_pieces(text)]

    def pre_tokenize(self, pretok) -> None:
        pretok.split(self._split)
