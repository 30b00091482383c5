"""The morpheme cache: bounded (least recently used dropped first) and still right past its bound."""
import time

import pytest

from kold_span.text import morphemes


@pytest.fixture
def small_cache(monkeypatch):
    monkeypatch.setattr(morphemes, "CACHE_SIZE", 3)
    morphemes.clear_cache()
    yield
    morphemes.clear_cache()


def test_cache_keeps_the_most_recently_used_texts(small_cache):
    morphemes.prefetch(["가", "나", "다"])
    morphemes.morpheme_tags("가")  # now the most recent
    morphemes.prefetch(["라", "마"])
    assert list(morphemes._CACHE) == ["가", "라", "마"]


def test_a_prefetch_larger_than_the_cache_still_gives_every_analysis(small_cache):
    texts = ["의원은", "먹다가", "쓰레기", "놈들이다", "국회"]
    expected = {}
    for text in texts:
        morphemes.clear_cache()
        expected[text] = morphemes.morpheme_tags(text)
    morphemes.clear_cache()
    morphemes.prefetch(texts)
    assert len(morphemes._CACHE) == 3
    assert {text: morphemes.morpheme_tags(text) for text in texts} == expected


def test_the_cache_is_bounded_by_bytes_too(monkeypatch):
    """Long texts (a service's maximal comments) fill the byte bound long before the count bound."""
    monkeypatch.setattr(morphemes, "CACHE_BYTES", 1_000_000)
    morphemes.clear_cache()
    try:
        texts = [f"{i:03d}" + "가" * 20_000 for i in range(100)]  # ~40 KB of text and ~1.2 MB of triples each
        for text in texts:
            morphemes._store([text], [((0, 1, "NNG"),) * 10_000])
            count, held = morphemes.cache_held()
            assert held <= 1_000_000 and count <= 1
        assert list(morphemes._CACHE) == [] or list(morphemes._CACHE) == texts[-1:]
        short = [f"{i}가" for i in range(50)]
        morphemes._store(short, [((0, 1, "NNG"),)] * 50)
        count, held = morphemes.cache_held()
        assert count == 50 and held == sum(morphemes.entry_bytes(t, ((0, 1, "NNG"),)) for t in short)
    finally:
        morphemes.clear_cache()
    assert morphemes.cache_held() == (0, 0)


def test_empty_text_has_no_morphemes_and_is_not_cached(small_cache):
    assert morphemes.morpheme_tags("") == ()
    assert len(morphemes._CACHE) == 0


# Kiwi on "기사를 읽었다. " (9 characters): 기사 0-2 NNG, 를 2-3 JKO, 읽 4-5 VV, 었 5-6 EP, 다 6-7 EF, . 7-8 SF.
SENTENCE = "기사를 읽었다. "
SENTENCE_TAGS = ((0, 2, "NNG"), (2, 3, "JKO"), (4, 5, "VV"), (5, 6, "EP"), (6, 7, "EF"), (7, 8, "SF"))


def test_piece_bounds_cover_the_text_and_cut_after_a_sentence_end_first():
    text = "가나다라마. 바사 아자차카 타파하거너더"  # a sentence ends at 7; spaces at 6, 9 and 14
    assert morphemes.piece_bounds(text, 10) == [(0, 7), (7, 15), (15, 21)]  # not (0, 10): after ". " first
    assert morphemes.piece_bounds(text, 100) == [(0, 21)]
    assert morphemes.piece_bounds("가나다라마바", 4) == [(0, 4), (4, 6)]  # no space: cut at the bound


def test_a_text_longer_than_a_piece_is_analysed_in_pieces_with_its_offsets_shifted_back(monkeypatch):
    morphemes.clear_cache()
    monkeypatch.setattr(morphemes, "KIWI_PIECE_CHARS", 12)  # one sentence a piece
    text = SENTENCE * 3
    assert morphemes.piece_bounds(text, 12) == [(0, 9), (9, 18), (18, 27)]
    expected = tuple((shift + start, shift + end, tag) for shift in (0, 9, 18) for start, end, tag in SENTENCE_TAGS)
    assert morphemes.morpheme_tags(text) == expected
    morphemes.clear_cache()
    monkeypatch.setattr(morphemes, "KIWI_PIECE_CHARS", 1000)  # the text whole: Kiwi finds the same morphemes
    assert morphemes.morpheme_tags(text) == expected
    morphemes.clear_cache()


def test_slices_cut_from_halves_keep_the_offsets_of_slices_cut_at_once(monkeypatch):
    from tokenizers import PreTokenizedString

    def split(leaf: int) -> list:
        monkeypatch.setattr(morphemes, "SLICE_LEAF", leaf)
        pretok = PreTokenizedString("머리말 가나 다라 마 바사아")
        pretok.split(lambda _i, normalized: [normalized[0:3], normalized[4:]])  # the second split starts at 4
        pretok.split(lambda i, normalized: morphemes._slices(normalized, [(0, 2), (3, 5), (6, 7), (8, 11)]) if i
                     else [normalized])
        return [(piece, offsets) for piece, offsets, _tokens in pretok.get_splits()]

    expected = [("머리말", (0, 3)), ("가나", (4, 6)), ("다라", (7, 9)), ("마", (10, 11)), ("바사아", (12, 15))]
    assert split(1) == split(64) == expected


def test_kiwi_turns_are_taken_in_the_order_they_were_asked_for():
    import threading

    turns, order = morphemes.KiwiTurns(), []

    def take(name):
        with turns.turn():
            order.append(name)

    first = turns.turn()
    first.__enter__()  # the first caller holds its turn
    threads = []
    for name in "abc":
        threads.append(threading.Thread(target=take, args=(name,)))
        threads[-1].start()
        deadline = time.monotonic() + 10
        while turns.waiting < len(threads) + 1 and time.monotonic() < deadline:  # bounded: it has asked
            time.sleep(0.001)
    assert turns.waiting == 4 and order == []
    first.__exit__(None, None, None)
    for t in threads:
        t.join(10)
    assert order == ["a", "b", "c"] and turns.waiting == 0


def test_a_short_text_is_analysed_between_the_calls_of_a_long_one(monkeypatch):
    import threading
    from types import SimpleNamespace

    calls, short_done = [], []

    class FakeKiwi:
        def tokenize(self, pieces):
            calls.append(list(pieces))
            if len(calls) == 1:  # the long text's first call: a short text on another thread asks for a turn
                thread = threading.Thread(target=lambda: short_done.append(morphemes._analyse(["짧은"])))
                thread.start()
                deadline = time.monotonic() + 10
                while morphemes._TURNS.waiting < 2 and time.monotonic() < deadline:
                    time.sleep(0.001)
            return [[SimpleNamespace(start=0, len=len(p), tag="NNG")] for p in pieces]

    monkeypatch.setattr(morphemes, "kiwi", FakeKiwi)
    monkeypatch.setattr(morphemes, "KIWI_PIECE_CHARS", 4)
    monkeypatch.setattr(morphemes, "KIWI_TURN_CHARS", 8)
    long_text = "가나다. " * 6  # pieces of 4 characters (5 distinct), two to a call
    [analysis] = morphemes._analyse([long_text])
    assert all(sum(map(len, call)) <= 8 for call in calls)
    assert calls[1] == ["짧은"]  # served between the long text's first and second calls
    assert len(calls) == 3 and short_done == [[((0, 2, "NNG"),)]]
    assert analysis[0] == (0, 4, "NNG") and analysis[-1][1] == len(long_text)


def test_a_caller_interrupted_while_waiting_does_not_stop_the_turns_after_it():
    import threading

    turns, order = morphemes.KiwiTurns(), []
    first = turns.turn()
    first.__enter__()
    stopped = turns.turn()

    class Stop(Exception):
        pass

    def wait(timeout=None):  # the waiting caller is interrupted (a KeyboardInterrupt, say)
        raise Stop()

    real_wait, turns._cond.wait = turns._cond.wait, wait
    with pytest.raises(Stop):
        stopped.__enter__()
    turns._cond.wait = real_wait
    later = threading.Thread(target=lambda: turns.turn().__enter__() or order.append("later"), daemon=True)
    later.start()
    deadline = time.monotonic() + 10
    while turns.waiting < 2 and time.monotonic() < deadline:  # bounded: the later caller has asked
        time.sleep(0.001)
    first.__exit__(None, None, None)
    later.join(10)
    assert order == ["later"]  # its turn came though the ticket before it was never served
