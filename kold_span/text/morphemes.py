"""Korean morphemes with character offsets (Kiwi), shared by tokenizers and alignment."""
from __future__ import annotations

import re
import sys
import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import Iterable, Iterator, Optional

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
# And a bounded number of bytes: 32,768 comments of 20,000 characters (what a service may be sent) would
# hold about 36 GB by count alone. 256 MiB holds the chunks above for comments of ordinary length.
CACHE_BYTES = 256 * 1024 * 1024
MORPHEME_BYTES = 120  # one (start, end, tag) triple: the tuple and its two ints (tags are shared strings)
_CACHE: OrderedDict[str, Morphemes] = OrderedDict()
_SIZES: dict[str, int] = {}  # each cached text's estimated bytes (`entry_bytes`)
_held = 0  # their sum
# The pipeline prepares one chunk (filling the cache) while it decodes another (reading it).
_CACHE_LOCK = threading.Lock()


# Texts longer than this are analysed in pieces of at most this many characters, cut where a sentence
# ends (`piece_bounds`), all in one batched call: Kiwi's time per character grows with a text's length,
# and it gives each text of a batch to one of its threads, so one long comment whole took longer than
# the same characters as many comments (docs/benchmarks/memory.md). Texts up to this length, ordinary
# comments among them, are analysed whole as they always were.
KIWI_PIECE_CHARS = 1024
# Where a piece may end: after a sentence's final punctuation and a space, or a line break.
_SENTENCE_END = re.compile(r"[.!?…]\s|\n")
_SPACE = re.compile(r"\s")


def piece_bounds(text: str, max_chars: int) -> list[tuple[int, int]]:
    """(start, end) of consecutive pieces of at most `max_chars` characters that together make `text`.

    A piece longer than `max_chars` is cut in its second half: after the last sentence end there
    (`.`, `!`, `?` or `…` and a space, or a line break), else after its last space, else at
    `max_chars` characters.

    Example:
        >>> piece_bounds("가나다라. 마 바사", 8)  # a sentence ends at 6, a space at 8
        [(0, 6), (6, 10)]
        >>> piece_bounds("가나다 라마바사", 6)
        [(0, 4), (4, 8)]
        >>> piece_bounds("가나다라마", 2), piece_bounds("가나", 4096)
        ([(0, 2), (2, 4), (4, 5)], [(0, 2)])
    """
    bounds, start = [], 0
    while len(text) - start > max_chars:
        half, limit = start + max_chars // 2, start + max_chars
        cut = ([m.end() for m in _SENTENCE_END.finditer(text, half, limit)]
               or [m.end() for m in _SPACE.finditer(text, half, limit)] or [limit])[-1]
        bounds.append((start, cut))
        start = cut
    bounds.append((start, len(text)))
    return bounds


# The characters of the pieces one Kiwi call takes: a long text's pieces go in several calls, each a turn
# (`KiwiTurns`), so a short text analysed on another thread (the service measures small requests on a
# thread of their own) waits for one call of ~20 ms, not for the whole text (40,000 characters: ~0.2 s).
KIWI_TURN_CHARS = 8192


class KiwiTurns:
    """Turns at Kiwi, taken in the order they were asked for (a ticket lock).

    A thread analysing a long text asks for a turn per call, so one that asked in between goes first.
    Python's own lock promises no order: the thread that just released it usually takes it again.

    Example:
        >>> turns = KiwiTurns()
        >>> with turns.turn():
        ...     turns.waiting
        1
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next = 0  # the ticket the next caller gets
        self._serving = 0  # the ticket whose turn it is
        self._gone: set[int] = set()  # tickets whose callers stopped waiting (interrupted): skipped

    @property
    def waiting(self) -> int:
        """Callers holding or waiting for a turn."""
        return self._next - self._serving - len(self._gone)

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Hold the turn; callers wait in the order they asked."""
        with self._cond:
            ticket = self._next
            self._next += 1
            try:
                while ticket != self._serving:
                    self._cond.wait()
            except BaseException:  # interrupted while waiting: its turn must not stop the others'
                if ticket == self._serving:
                    self._advance()
                else:
                    self._gone.add(ticket)
                raise
        try:
            yield
        finally:
            with self._cond:
                self._advance()

    def _advance(self) -> None:
        """The next caller's turn (past any that stopped waiting); call with the lock held."""
        self._serving += 1
        while self._serving in self._gone:
            self._gone.discard(self._serving)
            self._serving += 1
        self._cond.notify_all()


_TURNS = KiwiTurns()


def turn_batches(pieces: list[str], max_chars: int) -> list[list[str]]:
    """Consecutive batches of pieces of at most `max_chars` characters in all (a longer piece alone).

    Example:
        >>> turn_batches(["ab", "cd", "efg", "h"], 4), turn_batches(["abcdef", "g"], 4), turn_batches([], 4)
        ([['ab', 'cd'], ['efg', 'h']], [['abcdef'], ['g']], [])
    """
    batches: list[list[str]] = []
    size = 0
    for piece in pieces:
        if not batches or size + len(piece) > max_chars:
            batches.append([])
            size = 0
        batches[-1].append(piece)
        size += len(piece)
    return batches


def _analyse(texts: list[str]) -> list[Morphemes]:
    """Kiwi's analyses of texts in batched calls, as (start, end, tag) triples.

    A text longer than `KIWI_PIECE_CHARS` is analysed in pieces (`piece_bounds`), their offsets
    shifted back into the text, and a piece met twice is analysed once: a long text and its
    lowercased form (`prefetch_for`) differ in few of their pieces. The pieces go to Kiwi in calls of
    at most `KIWI_TURN_CHARS` characters, one caller at a time and in turn (`KiwiTurns`): Kiwi's batch
    call already uses its own threads, and a second caller (the pipeline's decoding thread on a rare
    cache miss, the service's quick measuring thread) waits rather than relying on Kiwi being safe to
    call from two threads at once.
    """
    pieces = [(i, start, text[start:end]) for i, text in enumerate(texts)
              for start, end in piece_bounds(text, KIWI_PIECE_CHARS)]
    distinct = list(dict.fromkeys(piece for _, _, piece in pieces))
    analyser = kiwi()
    found: dict[str, list[tuple[int, int, str]]] = {}
    for batch in turn_batches(distinct, KIWI_TURN_CHARS):
        with _TURNS.turn():
            found.update({piece: [(t.start, t.start + t.len, t.tag) for t in tokens]
                          for piece, tokens in zip(batch, analyser.tokenize(batch), strict=True)})
    analyses: list[list[tuple[int, int, str]]] = [[] for _ in texts]
    for i, shift, piece in pieces:
        analyses[i].extend((shift + start, shift + end, tag) for start, end, tag in found[piece])
    return [tuple(a) for a in analyses]


def entry_bytes(text: str, tags: Morphemes) -> int:
    """An estimate of the memory a cached analysis holds: the text, its key's slot and its triples.

    Example:
        >>> entry_bytes("가" * 1000, ((0, 1, "NNG"),) * 500) > 1000 * 2 + 500 * MORPHEME_BYTES
        True
    """
    return sys.getsizeof(text) + sys.getsizeof(tags) + MORPHEME_BYTES * len(tags) + 100


def cache_held() -> tuple[int, int]:
    """(texts, estimated bytes) the cache holds now."""
    with _CACHE_LOCK:
        return len(_CACHE), _held


def _store(texts: list[str], analyses: list[Morphemes]) -> None:
    """Cache analyses, dropping the least recently used past `CACHE_SIZE` texts or `CACHE_BYTES`."""
    global _held
    with _CACHE_LOCK:
        for text, tags in zip(texts, analyses):
            _held -= _SIZES.pop(text, 0)
            _CACHE[text] = tags
            _CACHE.move_to_end(text)
            _SIZES[text] = entry_bytes(text, tags)
            _held += _SIZES[text]
            while _CACHE and (len(_CACHE) > CACHE_SIZE or _held > CACHE_BYTES):
                old, _ = _CACHE.popitem(last=False)
                _held -= _SIZES.pop(old)


def prefetch(texts: Iterable[str]) -> None:
    """Analyse all uncached texts in batched Kiwi calls (`KIWI_TURN_CHARS` each) instead of one call per text.

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
    global _held
    with _CACHE_LOCK:
        _CACHE.clear()
        _SIZES.clear()
        _held = 0


def morpheme_pieces(text: str) -> list[tuple[int, int]]:
    """Non-overlapping, non-blank pieces of `text` cut at every morpheme and space boundary."""
    cuts = {0, len(text), *(edge for span in morpheme_offsets(text) for edge in span)}
    cuts.update(edge for space in re.finditer(r"\s", text) for edge in space.span())  # \s is str.isspace
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
