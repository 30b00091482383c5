"""Korean morphemes with character offsets (Kiwi), shared by tokenizers and alignment."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Iterable, Optional

_KIWI = None
_KIWI_LOCK = threading.Lock()
# Threads of Kiwi's batch calls: None is every core; a process among many on one machine (a Ray
# worker) sets its share before the first analysis.
KIWI_THREADS: Optional[int] = None


def kiwi():
    """One Kiwi analyser per process (loading its model is slow), its batch calls on `KIWI_THREADS` threads."""
    global _KIWI
    with _KIWI_LOCK:
        if _KIWI is None:
            from kiwipiepy import Kiwi
            _KIWI = Kiwi(num_workers=KIWI_THREADS)
    return _KIWI


Morphemes = tuple[tuple[int, int, str], ...]

# A least-recently-used cache of analyses. Predicting millions of distinct comments must keep memory
# flat, so it holds a bounded number of texts: the chunks `kold_span.inference.pipeline` holds at once
# (one being prepared, one in the network, one being decoded), each with its texts, their context
# turns and their normalised forms, fit in it at batch sizes up to 256.
CACHE_SIZE = 32768
_CACHE: OrderedDict[str, Morphemes] = OrderedDict()
# The pipeline prepares one chunk (filling the cache) while it decodes another (reading it).
_CACHE_LOCK = threading.Lock()


def _analyse(texts: list[str]) -> list[Morphemes]:
    """Kiwi's analyses of texts in one batched call, as (start, end, tag) triples.

    One call at a time: Kiwi's batch call already uses its own threads, and a second caller (the
    pipeline's decoding thread, on a rare cache miss) waits rather than relying on Kiwi being
    safe to call from two threads at once.
    """
    analyser = kiwi()
    with _KIWI_LOCK:
        return [tuple((t.start, t.start + t.len, t.tag) for t in tokens) for tokens in analyser.tokenize(texts)]


def _store(texts: list[str], analyses: list[Morphemes]) -> None:
    """Cache analyses, dropping the least recently used past `CACHE_SIZE`."""
    with _CACHE_LOCK:
        for text, tags in zip(texts, analyses):
            _CACHE[text] = tags
            if len(_CACHE) > CACHE_SIZE:
                _CACHE.popitem(last=False)


def prefetch(texts: Iterable[str]) -> None:
    """Analyse all uncached texts in one batched Kiwi call instead of one call per text.

    Texts already cached become the most recently used; the least recently used are dropped past
    `CACHE_SIZE`. Kiwi runs outside the cache's lock, so other threads read the cache meanwhile.
    """
    todo = []
    with _CACHE_LOCK:
        for text in dict.fromkeys(t for t in texts if t):
            if text in _CACHE:
                _CACHE.move_to_end(text)
            else:
                todo.append(text)
    if todo:
        _store(todo, _analyse(todo))


def morpheme_tags(text: str) -> Morphemes:
    """(start, end, part-of-speech tag) of every Kiwi morpheme (Sejong tags: NNG, JKS, EF, …).

    Example:
        >>> morpheme_tags("의원은")
        ((0, 2, 'NNG'), (2, 3, 'JX'))
    """
    if not text:
        return ()
    with _CACHE_LOCK:
        tags = _CACHE.get(text)
        if tags is not None:
            _CACHE.move_to_end(text)
            return tags
    [tags] = _analyse([text])
    _store([text], [tags])
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
    with _CACHE_LOCK:
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


# Slicing a `tokenizers.NormalizedString` takes time in proportion to where the slice ends (its offsets
# are found by walking the string from its start), so cutting every piece of a long text straight
# from it is quadratic in the text's length: `_slices` halves the string until few pieces are left.
SLICE_LEAF = 64


def _slices(normalized, pieces: list[tuple[int, int]], shift: int = 0) -> list:
    """`normalized[start - shift:end - shift]` for every piece, each cut from a slice about its size."""
    if len(pieces) <= SLICE_LEAF:
        return [normalized[start - shift:end - shift] for start, end in pieces]
    halves = pieces[:len(pieces) // 2], pieces[len(pieces) // 2:]
    return [piece for half in halves
            for piece in _slices(normalized[half[0][0] - shift:half[-1][1] - shift], half, half[0][0])]


class MorphemePreTokenizer:
    """A `tokenizers` custom pre-tokenizer splitting text into Kiwi morphemes."""

    def _split(self, _index, normalized):
        return _slices(normalized, morpheme_pieces(str(normalized)))

    def pre_tokenize(self, pretok) -> None:
        pretok.split(self._split)
