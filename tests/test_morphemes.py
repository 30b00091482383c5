"""The morpheme cache: bounded (least recently used dropped first) and still right past its bound."""
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


def test_empty_text_has_no_morphemes_and_is_not_cached(small_cache):
    assert morphemes.morpheme_tags("") == ()
    assert len(morphemes._CACHE) == 0
