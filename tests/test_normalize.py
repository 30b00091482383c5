"""Tests for kold_span.text.normalize: evasion-robust normalization with an exact map to the original."""
from __future__ import annotations

import doctest
import unicodedata
from unittest import mock

import pytest
import regex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kold_span.text import normalize as normalize_module
from kold_span.text.aligned import grapheme_bounds
from kold_span.text.hangul import syllables
from kold_span.text.normalize import STEPS, check_steps, normalize

NFD_TEXT = unicodedata.normalize("NFD", "바보 멍청이 꺼져라")


def test_docstring_examples():
    result = doctest.testmod(normalize_module)
    assert result.attempted >= 6 and result.failed == 0


@pytest.mark.parametrize("written, normalized, signals", [
    ("너 시1발", "너 시발", {"separators": 1}),
    ("씨.발 놈아", "씨발 놈아", {"separators": 1}),
    ("ㅅㅣ발", "시발", {"jamo": 1}),
    ("ㅅㅣㅂㅏㄹ놈", "시발놈", {"jamo": 2}),
    ("씨 발", "씨발", {"spaced": 1}),
    ("야 tlqkf", "야 시발", {"keyboard": 1}),
    ("dkssud qkqh", "안녕 바보", {"keyboard": 2}),
    ("what the f*ck", "what the fuck", {"leet": 1}),
    ("you 1d10t", "you idiot", {"leet": 1}),
    ("$tupid sh!t!", "stupid shit!", {"leet": 2}),
    ("\u0456d\u0456ot", "idiot", {"confusables": 2}),
    ("ｉｄｉｏｔ ｂａｂｏ１", "idiot babo1", {"width": 10}),
    ("바\uffb2보", "바ㅂ보", {"width": 1}),
    ("i\u200bdi\u200dot", "idiot", {"invisible": 2}),
    ("\u202eidiot\u202c you", "idiot you", {"bidi": 2}),
    ("stuuuupid cooool", "stupid cool", {"elongation": 2}),
    (NFD_TEXT, "바보 멍청이 꺼져라", {"nfc": 8}),
    ("you\u00a0idiot\u3000now\u202f!", "you idiot now !", {"spaces": 3}),
    ("씨\u2009발", "씨발", {"spaces": 1, "spaced": 1}),
    ("you are s t u p i d", "you are stupid", {"spaced": 5}),
    ("F U C K off", "FUCK off", {"spaced": 3}),
    ("y o u i d i o t !", "you idiot !", {"spaced": 6}),
    ("st.upid man", "stupid man", {"separators": 1}),
    ("you id1iot", "you idiot", {"separators": 1}),
])
def test_evasions_from_the_issue(written, normalized, signals):
    result = normalize(written)
    assert (result.aligned.text, result.signals) == (normalized, signals)


@pytest.mark.parametrize("ordinary", [
    "제1장 오후2시3분 2020년3월",                   # digits between Hangul that are numbers
    "네.그래요 응.알았어",                          # a sentence end without a space
    "이 밥 좀 줘 내 말 못 해",                      # single-syllable words in a sentence
    "Windows10 mp3 1st 100s covid19 @user 3.5",   # numbers, units, mentions
    "hello world, I'm happy. zzz www",            # English words
    "\U0001F468\u200d\U0001F469\u200d\U0001F467 \u2764\ufe0f",  # emoji ZWJ and variation sequences
    "نمی\u200cخواهم",                              # a Persian non-joiner between Arabic letters
    "m² ① … naïve Ωmega Москва",                  # compatibility characters that are text; whole Cyrillic words
    "I am a b c d, x y z",                        # single letters that spell no word stay apart
    "e-mail co-op some.thing well-known U.S. a.k.a. i.e.",  # pieces that are words, abbreviations
    "google.com/st.upid @st.upid #id1iot",        # URLs, handles, tags
    "a\tb\nc \u1680 d",                            # tabs, line breaks and the Ogham space mark are not spaces to fold
])
def test_ordinary_text_is_unchanged(ordinary):
    result = normalize(ordinary)
    assert (result.aligned.text, result.signals) == (ordinary, {})


def test_chosung_abbreviations_stay_as_written_and_are_signalled():
    result = normalize("ㅋㅋㅋㅋ ㅅㅂ ㅠㅠ ㅇㅋ")
    assert result.aligned.text == "ㅋㅋㅋㅋ ㅅㅂ ㅠㅠ ㅇㅋ" and result.signals == {"chosung": 2}  # laughter is none
    assert normalize("ㅅㅂ", tuple(s for s in STEPS if s != "jamo")).signals == {}


def test_spans_map_back_over_what_was_removed_or_folded():
    result = normalize("너 씨.발 놈")
    assert result.aligned.text == "너 씨발 놈"
    assert result.aligned.to_original(2, 4) == (2, 5)   # the dot is inside
    zw = normalize("you i\u200bdiot")
    assert zw.aligned.to_original(4, 9) == (4, 10)
    key = normalize("야 tlqkf")
    assert key.aligned.to_original(2, 3) == (2, 4)      # 시 came from "tl"
    assert key.aligned.to_original(3, 4) == (4, 7)      # 발 from "qkf"
    nfd = normalize(NFD_TEXT)
    assert nfd.aligned.to_original(0, 2) == (0, 4)      # 바보 from four conjoining jamo


def test_spaces_letters_and_latin_separators_map_back_exactly():
    spaces = normalize("you\u00a0idiot\u3000now")
    assert spaces.aligned.text == "you idiot now"
    assert spaces.aligned.sources == tuple((i, i + 1) for i in range(13))  # one character for one
    spaced = normalize("you are s t u p i d .")
    assert spaced.aligned.text == "you are stupid ."
    assert spaced.aligned.to_original(8, 14) == (8, 19)  # the spaces between the letters are inside
    assert spaced.aligned.from_original(8, 19) == (8, 14)
    assert spaced.aligned.to_original(15, 16) == (20, 21)
    two = normalize("y o u i d i o t")
    assert two.aligned.text == "you idiot" and two.aligned.to_original(4, 9) == (6, 15)
    dotted = normalize("st.upid")
    assert dotted.aligned.text == "stupid" and dotted.aligned.to_original(0, 6) == (0, 7)
    assert dotted.aligned.to_original(2, 3) == (3, 4)


def test_gold_spans_map_onto_the_normalized_text():
    result = normalize("씨.발 \u0456d\u0456ot")
    assert result.aligned.text == "씨발 idiot"
    assert result.aligned.from_original(0, 3) == (0, 2)
    assert result.aligned.from_original(4, 9) == (3, 8)


def test_steps_switch_separately():
    text = "ｉｄｉｏｔ 씨.발"
    assert normalize(text, ("width",)).aligned.text == "idiot 씨.발"
    assert normalize(text, ("separators",)).aligned.text == "ｉｄｉｏｔ 씨발"
    assert normalize(text, ()).aligned.text == text
    assert check_steps(["leet", "nfc"]) == ("nfc", "leet")
    with pytest.raises(ValueError, match="unknown normalization step"):
        check_steps(["nfkc"])


def test_syllables_of_compound_vowels_and_finals():
    assert syllables("ㄷㅏㄹㄱ") == [(0, 4, "닭")]
    assert syllables("ㄷㅏㄹㄱㅏ") == [(0, 3, "달"), (3, 5, "가")]
    assert syllables("ㅇㅗㅏ") == [(0, 3, "와")]
    assert syllables("ㅏ") is None and syllables("ㅅㅣㅅ ") is None


# Property tests over text that mixes the evasions with ordinary characters.
ALPHABET = st.sampled_from(list("가나다바보씨발시놈 ㅅㅂㅋㅣㅏㅗ.1*$0!aeiostudkqlfh xyz\u0456\u043e") +
                           ["\u200b", "\u200d", "\u202e", "\ufe0f", "\u0301", "\u1100", "\u1161", "\u11a8",
                            "ｉ", "\U0001F468", "\U0001F469", "é", "\u00a0", "\u3000", " s", " t", " u", "-"])
TEXTS = st.lists(ALPHABET, max_size=24).map("".join)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(TEXTS)
def test_map_is_monotone_and_covers_every_original_character(text):
    aligned = normalize(text).aligned
    assert aligned.original == text
    for (s1, e1), (s2, e2) in zip(aligned.sources, aligned.sources[1:]):
        assert s1 <= s2 and e1 <= e2
    covered = {i for s, e in aligned.sources for i in range(s, e)}
    assert covered | set(aligned.removed()) == set(range(len(text)))


@SETTINGS
@given(TEXTS)
def test_normalizing_twice_changes_nothing(text):
    once = normalize(text).aligned.text
    twice = normalize(once)
    assert twice.aligned.text == once, twice.signals


@SETTINGS
@given(TEXTS, st.data())
def test_a_span_mapped_back_lies_on_graphemes_and_holds_its_characters(text, data):
    aligned = normalize(text).aligned
    start = data.draw(st.integers(0, len(aligned.text)))
    end = data.draw(st.integers(start, len(aligned.text)))
    o_start, o_end = aligned.to_original(start, end)
    if o_start == o_end:
        return
    bounds = set(grapheme_bounds(text))
    assert o_start in bounds and o_end in bounds
    for s, e in aligned.sources[start:end]:
        assert o_start <= s and e <= o_end


WORDS = st.sampled_from(["the", "people", "are", "happy", "today", "we", "went", "home", "hola", "amigo",
                         "여성", "사람들", "오늘", "정말", "좋아요", "한국", "학교에", "갔다", "1999년", "3시"])
SEPARATORS = st.sampled_from([" ", ", ", ". ", "! ", "\n"])


@SETTINGS
@given(st.lists(st.tuples(WORDS, SEPARATORS), max_size=10))
def test_nfc_text_without_evasions_is_returned_unchanged(pairs):
    text = "".join(word + sep for word, sep in pairs)
    result = normalize(text)
    assert result.aligned.text == text and result.signals == {}
    assert result.aligned.sources == tuple((i, i + 1) for i in range(len(text)))


@pytest.mark.parametrize("step", STEPS)
def test_each_step_alone_keeps_the_alignment_consistent(step):
    text = "ｉ\u200bd\u0456ooot " + NFD_TEXT + " 씨.발 tlqkf ㅅㅣ발 1d10t"
    aligned = normalize(text, (step,)).aligned
    assert len(aligned.sources) == len(aligned.text)
    assert regex.sub(r"\s", "", aligned.text) != ""


def test_separators_are_removed_before_single_syllables_are_joined():
    """`아 씨.발` was `아씨.발`: the space joined 아 to 씨 first, and 씨.발 was left as written (found in review)."""
    result = normalize("아 씨.발")
    assert result.aligned.text == "아 씨발" and result.signals == {"separators": 1}
    assert normalize("씨 발 놈아").aligned.text == "씨발 놈아"
    steps = tuple(s for s in STEPS if s != "spaced")  # normalize.spaced: false
    assert normalize("씨 발 놈아", steps).aligned.text == "씨 발 놈아"


@given(st.text(st.sampled_from("aＡｂ１𝐚\u00a0\u3000\u2003 \t바\uffb2ﾊ①"), max_size=30))
def test_width_edits_are_each_characters_fold(text):
    # character by character: a no-break or wide space becomes a space, a wide or mathematical letter or
    # digit its plain form; nothing else is touched
    t = normalize_module.AlignedText.identity(text)
    edits, counts = normalize_module._width(t)
    spaces = [(i, i + 1, " ") for i, c in enumerate(text) if c == "\u00a0" or c in "\u3000\u2003"]
    folded = [(i, i + 1, unicodedata.normalize("NFKC", c)) for i, c in enumerate(text) if c in "Ａｂ１𝐚"]
    halfwidth = [(i, i + 1, "ㅂ") for i, c in enumerate(text) if c == "\uffb2"]
    katakana = [(i, i + 1, unicodedata.normalize("NFKC", c)) for i, c in enumerate(text) if c == "ﾊ"]
    assert edits == sorted(spaces + folded + halfwidth + katakana)
    assert counts == {"width": len(edits) - len(spaces), "spaces": len(spaces)}


WORDS = {"씨발", "가나", "나다", "가나다", "제일", "다가"}


def joins_by_chain(text, across_space):
    """_join_pieces by its definition: every chain of Hangul pieces joined by separators or single spaces, walked
    piece by piece (a gap closes where the right kind of gap makes a word of the list)."""
    separator = normalize_module._SEPARATOR
    chain_re = regex.compile(r"[가-힣]+(?:(?:" + separator + r"{1,3}| )[가-힣]+)+")
    edits = []
    for chain in chain_re.finditer(text):
        pieces = list(regex.finditer(r"[가-힣]+", text[:chain.end()], pos=chain.start()))
        joined, current = pieces[0].group(), pieces[0]
        for piece in pieces[1:]:
            gap = text[current.end():piece.start()]
            spaced = gap == " "
            ok = (spaced == across_space and joined + piece.group() in WORDS
                  and not (spaced and (len(joined) > 1 or len(piece.group()) > 1))
                  and not (joined.endswith("제") and any(c.isdigit() for c in gap)))
            if ok:
                edits.append((current.end(), piece.start(), ""))
            joined = joined + piece.group() if ok else piece.group()
            current = piece
    return edits


@settings(max_examples=400)
@given(st.text(st.sampled_from("씨발가나다제일 .1!a"), max_size=16), st.booleans())
@example("가나 다", True).via("a run of two syllables is no single syllable")
@example("제1일 가.나", False).via("an ordinal, then a word cut by a dot")
def test_join_pieces_closes_the_gaps_a_walk_of_every_chain_closes(text, across_space):
    with mock.patch.object(normalize_module, "is_word", lambda word, langs=("en", "es"): word in WORDS):
        found = normalize_module._join_pieces(normalize_module.AlignedText.identity(text), across_space)
    assert found == joins_by_chain(text, across_space)
