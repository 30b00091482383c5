"""Tests for kold_span.text.words (Unicode word boundaries) and `align.snap_spans(..., "word")`."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kold_span.text.align import snap_spans, tags_to_spans
from kold_span.text.words import word_offsets


def words_of(text: str) -> list[str]:
    return [text[s:e] for s, e in word_offsets(text)]


@pytest.mark.parametrize("text, words", [
    ("treasonous traitor", ["treasonous", "traitor"]),
    # An apostrophe between letters joins them; punctuation after a space is no word.
    ("Hitler's racist , bigot,", ["Hitler's", "racist", "bigot"]),
    ("don’t l'homme", ["don’t", "l'homme"]),
    # Decimal and thousands separators between digits, and a full stop between letters, join.
    ("3.14 1,000 e.g. U.S.A.", ["3.14", "1,000", "e.g", "U.S.A"]),
    ("먹다가 의원은 ㅋㅋㅋ", ["먹다가", "의원은", "ㅋㅋㅋ"]),
    ("Русский текст", ["Русский", "текст"]),
    ("हिन्दी पाठ", ["हिन्दी", "पाठ"]),  # combining vowel signs stay inside their word
    ("cafe\u0301 snake_case", ["cafe\u0301", "snake_case"]),
    # UAX #29 leaves Han text unsegmented: each ideograph is a word; a katakana run is one.
    ("中文文本", ["中", "文", "文", "本"]),
    ("日本語のテキスト", ["日", "本", "語", "の", "テキスト"]),
    ("#tag @user 👍🏽 !!", ["tag", "user"]),
    ("e-mail 2020-01-01", ["e", "mail", "2020", "01", "01"]),
    ("", []),
    ("   \n\t", []),
])
def test_word_offsets(text, words):
    assert words_of(text) == words


def test_word_offsets_are_end_exclusive_offsets_into_the_text():
    assert word_offsets("  a bc. ") == ((2, 3), (4, 6))


@pytest.mark.parametrize("text, spans, snapped", [
    # The Toxic Spans cases: "ous traitor" of "treasonous traitor", the "s" of "Hitler's".
    ("treasonous traitor", [(7, 18)], [(0, 18)]),
    ("Hitler's fault", [(7, 8)], [(0, 8)]),
    # A span on punctuation only touches no word and stays.
    ("idiot!!! you", [(5, 8), (6, 7)], [(5, 8), (6, 7)]),
    # Edges already on boundaries, or in whitespace and punctuation, do not move.
    ("you racist , bigot,", [(4, 10), (3, 13), (11, 12)], [(4, 10), (3, 13), (11, 12)]),
    # Korean without Kiwi: a cut inside an eojeol grows to the whole eojeol.
    ("국회의원은 먹다가 잤다", [(2, 4), (7, 8)], [(0, 5), (6, 9)]),
    # Han: every character is a word, so a span is never widened.
    ("中文文本", [(1, 3)], [(1, 3)]),
    # One for one and in order, not merged, even when they now overlap.
    ("stupid idiot", [(8, 12), (2, 3), (5, 9)], [(7, 12), (0, 6), (0, 12)]),
])
def test_word_snap(text, spans, snapped):
    assert snap_spans(spans, text, "word") == snapped


def test_tags_to_spans_snaps_to_words():
    text = "treasonous traitor, Hitler's"
    offsets = [(0, 7), (7, 10), (11, 18), (18, 19), (20, 26), (26, 28)]  # treas·onous traitor , Hitler 's
    tags = ["O", "B", "I", "I", "O", "I"]
    assert tags_to_spans(tags, offsets, text, snap="word") == [(0, 19), (20, 28)]
    assert tags_to_spans(tags, offsets, text, snap="none") == [(7, 19), (26, 28)]


TEXTS = st.text(alphabet=st.sampled_from(list("ab'., -!\n") + ["가", "나", "中", "é", "\u0301", "3", "_", "👍"]),
                max_size=30)


@st.composite
def text_and_spans(draw):
    text = draw(TEXTS)
    bounds = st.integers(0, len(text))
    pairs = draw(st.lists(st.tuples(bounds, bounds), max_size=4))
    return text, [(min(a, b), max(a, b)) for a, b in pairs if a != b]


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_words_are_ordered_disjoint_and_hold_a_letter_or_digit(text):
    words = word_offsets(text)
    assert all(0 <= s < e <= len(text) for s, e in words)
    assert all(e1 <= s2 for (_, e1), (s2, _) in zip(words, words[1:]))
    assert all(any(c.isalnum() or c in "_\u0301" for c in text[s:e]) for s, e in words)


@settings(max_examples=300, deadline=None)
@given(text_and_spans())
def test_snapped_spans_cover_the_input_start_and_end_on_no_word_inside_and_are_stable(case):
    text, spans = case
    snapped = snap_spans(spans, text, "word")
    assert len(snapped) == len(spans)
    assert all(s2 <= s1 and e1 <= e2 for (s1, e1), (s2, e2) in zip(spans, snapped))
    for start, end in snapped:
        assert not any(s < start < e or s < end < e for s, e in word_offsets(text))
    assert snap_spans(snapped, text, "word") == snapped
