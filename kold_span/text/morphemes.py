"""Korean morphemes with character offsets (Kiwi), shared by tokenizers and alignment."""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterable

_KIWI = None


def kiwi():
    """One Kiwi analyser per process (loading its model is slow)."""
    global _KIWI
    if _KIWI is None:
        from kiwipiepy import Kiwi
        _KIWI = Kiwi()
    return _KIWI


Morphemes = tuple[tuple[int, int, str], ...]

# A least-recently-used cache of analyses. Predicting millions of distinct comments must keep memory
# flat, so it holds a bounded number of texts; one chunk of `Predictor.predict_examples` (its texts,
# their context turns and their normalised forms) fits in it at the usual batch sizes.
CACHE_SIZE = 8192
_CACHE: OrderedDict[str, Morphemes] = OrderedDict()


def prefetch(texts: Iterable[str]) -> None:
    """Analyse all uncached texts in one batched Kiwi call instead of one call per text.

    Texts already cached become the most recently used; the least recently used are dropped past
    `CACHE_SIZE`.
    """
    todo = []
    for text in dict.fromkeys(t for t in texts if t):
        if text in _CACHE:
            _CACHE.move_to_end(text)
        else:
            todo.append(text)
    for text, tokens in zip(todo, kiwi().tokenize(todo) if todo else ()):
        _CACHE[text] = tuple((t.start, t.start + t.len, t.tag) for t in tokens)
        if len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)


def morpheme_tags(text: str) -> Morphemes:
    """(start, end, part-of-speech tag) of every Kiwi morpheme (Sejong tags: NNG, JKS, EF, …).

    Example:
        >>> morpheme_tags("의원은")
        ((0, 2, 'NNG'), (2, 3, 'JX'))
    """
    if not text:
        return ()
    tags = _CACHE.get(text)
    if tags is None:
        prefetch([text])
        tags = _CACHE[text]
    else:
        _CACHE.move_to_end(text)
    return tags


def morpheme_offsets(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of every Kiwi morpheme; contracted morphemes may share offsets.

    Example:
        >>> morpheme_offsets("기사를 읽었다")  # 기사 를 · 읽 었 다
        ((0, 2), (2, 3), (4, 5), (5, 6), (6, 7))
    """
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
