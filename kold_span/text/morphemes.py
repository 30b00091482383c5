"""Korean morphemes with character offsets (Kiwi), shared by tokenizers and alignment."""
from __future__ import annotations

from typing import Iterable

_KIWI = None


def kiwi():
    """One Kiwi analyser per process (loading its model is slow)."""
    global _KIWI
    if _KIWI is None:
        from kiwipiepy import Kiwi
        _KIWI = Kiwi()
    return _KIWI


_CACHE: dict[str, tuple[tuple[int, int, str], ...]] = {}
_CACHE_LIMIT = 200_000


def prefetch(texts: Iterable[str]) -> None:
    """Analyse all uncached texts in one batched Kiwi call, not one call per text."""
    todo = list(dict.fromkeys(t for t in texts if t and t not in _CACHE))
    if not todo:
        return
    if len(_CACHE) + len(todo) > _CACHE_LIMIT:
        _CACHE.clear()
    for text, tokens in zip(todo, kiwi().tokenize(todo)):
        _CACHE[text] = tuple((t.start, t.start + t.len, t.tag) for t in tokens)


def morpheme_tags(text: str) -> tuple[tuple[int, int, str], ...]:
    """(start, end, part-of-speech tag) of every Kiwi morpheme (Sejong tags: NNG, JKS, EF, …)."""
    if text not in _CACHE:
        if not text:
            return ()
        prefetch([text])
    return _CACHE[text]


def morpheme_offsets(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of every Kiwi morpheme; contracted morphemes may share offsets."""
    return tuple((s, e) for s, e, _ in morpheme_tags(text))


def prefetch_for(tokenizer, texts: Iterable[str], snap: bool = True) -> None:
    """Prefetch what a tokenizer with Kiwi pre-tokens (its normalised texts) and snapping need."""
    texts = list(texts)
    wanted = list(texts) if snap else []
    if getattr(tokenizer, "kold_morphemes", False):
        normalizer = tokenizer.backend_tokenizer.normalizer
        wanted += [normalizer.normalize_str(t) for t in texts] if normalizer else texts
    prefetch(wanted)


def clear_cache() -> None:
    """Forget every cached analysis (benchmarks use this to time cold runs)."""
    _CACHE.clear()


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
