"""Evasion perturbations (`kold_span.text.perturb`): hand-checked per kind, and the properties every kind keeps."""
from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kold_span.config.choices import EvasionKind
from kold_span.data.example import Example
from kold_span.errors import ArgumentError
from kold_span.text.perturb import (compatibility_jamo, latin_lookalikes, parse_kinds, perturb, perturb_example)

ALL = 1.0  # every word disguised


def disguise(text: str, kind: str, seed: int = 0) -> str:
    return perturb(text, kind, seed, ALL).text


# -- each kind, by hand ------------------------------------------------------------------

def test_nfd_decomposes_hangul_into_conjoining_jamo():
    out = disguise("바보 caf\u00e9", "nfd")
    assert out == "\u1107\u1161\u1107\u1169 cafe\u0301"
    assert unicodedata.normalize("NFC", out) == "바보 caf\u00e9"


def test_compat_jamo_spells_the_first_syllable_of_each_word():
    assert disguise("시발 놈아", "compat_jamo") == "ㅅㅣ발 ㄴㅗㅁ아"
    assert compatibility_jamo("닭") == "ㄷㅏㄺ" and compatibility_jamo("꽤") == "ㄲㅙ"
    assert disguise("idiot", "compat_jamo") == "idiot"


def test_compatibility_jamo_is_defined_for_every_syllable():
    for code in range(0xAC00, 0xD7A4):
        jamo = compatibility_jamo(chr(code))
        assert 2 <= len(jamo) <= 3 and all(0x3131 <= ord(c) <= 0x318E for c in jamo)


def test_zero_width_puts_one_space_inside_each_longer_word():
    out = disguise("너 진짜 바보", "zero_width")
    assert out.replace("\u200b", "") == "너 진짜 바보"
    assert out.count("\u200b") == 2  # not in the one-syllable word
    assert re.fullmatch(r"너 진\u200b짜 바\u200b보", out)


def test_zero_width_never_splits_a_grapheme_cluster():
    out = disguise("cafe\u0301s", "zero_width", seed=4)
    assert "\u200b\u0301" not in out and out.replace("\u200b", "") == "cafe\u0301s"


def test_bidi_wraps_each_word_in_a_control_and_its_terminator():
    out = disguise("you idiot", "bidi")
    stripped = re.sub("[\u202a-\u202e\u2066-\u2069]", "", out)
    assert stripped == "you idiot"
    words = out.split(" ")
    assert all(w[0] in "\u202a\u202d\u2066\u2068" and w[-1] in "\u202c\u2069" for w in words)


def test_fullwidth_changes_ascii_letters_and_digits_only():
    assert disguise("idiot 2 바보", "fullwidth") == "ｉｄｉｏｔ ２ 바보"


def test_confusables_are_cyrillic_or_greek_lookalikes():
    out = disguise("idiot", "confusables")
    assert len(out) == 5 and out != "idiot"
    for before, after in zip("idiot", out):
        assert after == before or after in latin_lookalikes(before)
        assert after == before or unicodedata.name(after).startswith(("CYRILLIC", "GREEK"))
    assert "а" in latin_lookalikes("a") and latin_lookalikes("k") == ()  # Cyrillic а; no small k look-alike


def test_leet_replaces_some_letters_by_digits_or_symbols():
    out = disguise("idiot", "leet")
    assert len(out) == 5 and out != "idiot"
    allowed = {"i": "i1!", "d": "d", "o": "o0", "t": "t7"}
    assert all(after in allowed[before] for before, after in zip("idiot", out))
    assert disguise("바보", "leet") == "바보"


def test_separators_insert_a_mark_or_star_a_vowel():
    for seed in range(10):
        out = disguise("씨발", "separators", seed)
        assert len(out) == 3 and out[0] + out[2] == "씨발" and out[1] in ".,-_~*"
        latin = disguise("fuck", "separators", seed)
        assert latin == "f*ck" or (len(latin) == 5 and latin[0] == "f" and re.sub(r"[.,\-_~*]", "", latin) == "fuck")
    assert {disguise("fuck", "separators", seed) for seed in range(20)} > {"f*ck"}  # both ways occur


def test_digit_insert_puts_a_digit_inside_the_word():
    out = disguise("시발", "digit_insert")
    assert re.fullmatch(r"시[0-9]발", out)
    assert disguise("너", "digit_insert") == "너"  # one syllable: no inside


def test_spaced_syllables():
    assert disguise("씨발 놈", "spaced_syllables") == "씨 발 놈"


def test_keyboard_types_hangul_on_english_keys():
    assert disguise("시발 닭 과자", "keyboard") == "tlqkf ekfr rhkwk"
    assert disguise("stupid", "keyboard") == "stupid"


def test_keyboard_keys_type_each_syllable_back_on_a_2_beolsik_keyboard():
    from hangulpy import convert_qwerty_to_hangul  # the other direction, a separate code path

    for code in range(0xAC00, 0xD7A4, 7):
        syllable = chr(code)
        keys = disguise(syllable, "keyboard")
        assert keys.isascii() and keys.isalpha() and convert_qwerty_to_hangul(keys) == syllable


def test_elongation_repeats_a_vowel_of_a_latin_word():
    out = disguise("stupid", "elongation")
    assert re.fullmatch(r"stu{3,5}pid|stupi{3,5}d", out)


def test_char_swap_exchanges_two_different_neighbours():
    out = disguise("바보야", "char_swap")
    assert sorted(out) == sorted("바보야") and out != "바보야"
    assert disguise("ㅋㅋ", "char_swap") == "ㅋㅋ"


def test_deletion_leaves_out_one_character_of_a_longer_word():
    out = disguise("멍청이 너", "deletion")
    assert out.endswith(" 너") and len(out) == 4 and set(out[:2]) < set("멍청이")


def test_duplication_doubles_one_character():
    out = disguise("idiot", "duplication")
    assert len(out) == 6 and re.sub(r"(.)\1", r"\1", out, count=1) == "idiot"


# -- spans carried through -----------------------------------------------------------------

def test_gold_span_maps_onto_the_disguised_word():
    ex = Example(id="1", text="시발 놈아 진짜", labels={"OFF": True}, spans={"OFF": [(0, 2)]})
    out = perturb_example(ex, "keyboard", seed=0, probability=1.0, targets="spans")
    assert out.text == "tlqkf 놈아 진짜" and out.spans == {"OFF": [(0, 5)]}
    assert out.labels == {"OFF": True} and ex.text == "시발 놈아 진짜"  # the original is untouched


def test_inserted_characters_inside_a_span_belong_to_it():
    ex = Example(id="1", text="너 씨발", spans={"OFF": [(2, 4)]})
    out = perturb_example(ex, "digit_insert", seed=0, probability=1.0)
    assert out.span_texts("OFF") == [out.text[2:5]] and re.fullmatch(r"씨\d발", out.text[2:5])


def test_spans_only_disguises_only_words_inside_gold_spans():
    ex = Example(id="1", text="you are an idiot", spans={"OFF": [(11, 16)]})
    out = perturb_example(ex, "fullwidth", seed=0, probability=1.0, targets="spans")
    assert out.text == "you are an ｉｄｉｏｔ"
    untouched = Example(id="2", text="you are nice")
    assert perturb_example(untouched, "fullwidth", seed=0, probability=1.0, targets="spans").text == "you are nice"


def test_a_span_deleted_whole_is_dropped():
    ex = Example(id="1", text="ab", spans={"X": [(1, 2)]})
    outs = {perturb_example(ex, "deletion", seed, 1.0).text: perturb_example(ex, "deletion", seed, 1.0).spans
            for seed in range(20)}
    assert outs == {"a": {"X": []}, "b": {"X": [(0, 1)]}}


def test_parse_kinds():
    assert parse_kinds("all") == list(EvasionKind)
    assert parse_kinds(["nfd", "keyboard"]) == [EvasionKind.NFD, EvasionKind.KEYBOARD]
    with pytest.raises(ArgumentError, match="--perturb kind must be one of"):
        parse_kinds("nfd,lit")
    with pytest.raises(ArgumentError, match="names no perturbation kind"):
        parse_kinds(" , ")


# -- properties of every kind ------------------------------------------------------------------

TEXTS = st.text(alphabet=st.sampled_from(list("시발바보놈닭과 abcidiotSTUPID.,!1é\u0301ㅋ")), max_size=24)


@st.composite
def text_and_span(draw):
    text = draw(TEXTS)
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, len(text)))
    return text, (start, end)


@settings(max_examples=300, deadline=None)
@given(text_and_span(), st.sampled_from(list(EvasionKind)), st.integers(0, 1000), st.sampled_from([0.5, 1.0]),
       st.booleans())
def test_mapped_spans_cover_exactly_the_disguised_characters(case, kind, seed, probability, spans_only):
    text, (start, end) = case
    within = [(start, end)] if spans_only else None
    out = perturb(text, kind, seed, probability, within)
    assert out.original == text
    assert perturb(text, kind, seed, probability, within) == out  # same seed, same output
    s, e = out.from_original(start, end)
    assert 0 <= s <= e <= len(out.text)
    for i, (a, b) in enumerate(out.sources):
        from_span = start < end and a < b and a < end and start < b
        inserted_inside = a == b and start < a < end
        # Each character of the span's disguised form is inside the mapped span, and nothing else is.
        assert (s <= i < e) == (from_span or inserted_inside), (out.text, i)
    if spans_only:
        # Words outside the span keep every character where it was.
        touched = [(ws, we) for ws, we in _words(text) if ws < end and start < we]
        for i, (a, b) in enumerate(out.sources):
            if a < b and not any(ws < b and a < we for ws, we in touched):
                assert (a + 1, out.text[i]) == (b, text[a])


@settings(max_examples=100, deadline=None)
@given(TEXTS, st.sampled_from(list(EvasionKind)), st.integers(0, 1000))
def test_probability_zero_changes_nothing(text, kind, seed):
    assert perturb(text, kind, seed, 0.0).text == text


def _words(text):
    from kold_span.text.words import word_offsets
    return word_offsets(text)


def test_perturb_takes_all_kinds_as_the_robustness_command_does():
    """`perturb(text, "all")` raised "perturbation kind must be one of ..." though `--perturb all` works (issue 43)."""
    text = "너 진짜 바보 you stupid idiot"
    mixed = perturb(text, "all", seed=4, probability=1.0)
    assert mixed.text != text and mixed == perturb(text, list(EvasionKind), seed=4, probability=1.0)
    assert perturb(text, "leet", seed=4, probability=1.0) == perturb(text, EvasionKind.LEET, 4, 1.0)
    assert perturb(text, "leet,nfd", seed=4, probability=1.0) == perturb(text, ["leet", "nfd"], 4, 1.0)
    assert perturb(text, "all", seed=5, probability=1.0) != mixed  # the seed decides which kind each word gets
    ex = Example(id="1", text="you idiot", spans={"OFF": [(4, 9)]})
    out = perturb_example(ex, "nfd,leet", seed=0, probability=1.0)
    assert out.meta == {"evasion": "nfd,leet"}
    with pytest.raises(ArgumentError, match="perturb\\(\\) kind must be one of"):
        perturb(text, "all,lit", seed=0)


# -- typos and respellings (issue 58) -----------------------------------------------------------

def test_adjacent_key_types_one_neighbouring_key():
    from kold_span.text.perturb import key_neighbours

    assert key_neighbours("g") == "fhtyvb" and key_neighbours("q") == "wa"
    for seed in range(10):
        out = disguise("stupid", "adjacent_key", seed)
        diff = [(a, b) for a, b in zip("stupid", out) if a != b]
        assert len(out) == 6 and len(diff) == 1 and diff[0][1] in key_neighbours(diff[0][0])
        korean = disguise("바보", "adjacent_key", seed)
        assert len(korean) == 2 and korean != "바보" and all("가" <= c <= "힣" for c in korean)


def test_dropped_vowels_and_korean_initials():
    assert disguise("you stupid idiot", "dropped_vowels") == "you stpd idt"  # `you`: one consonant, kept
    assert disguise("병신 새끼", "dropped_vowels") == "ㅂㅅ ㅅㄲ"


def test_sound_alike_respells_one_sound():
    outs = {disguise("fuck", "sound_alike", seed) for seed in range(20)}
    assert outs <= {"phuck", "fuk"} and len(outs) == 2
    korean = {disguise("씨발", "sound_alike", seed) for seed in range(30)}
    assert "시발" in korean and all(len(k) == 2 for k in korean)


def test_joined_leaves_out_the_space_after_a_word():
    assert disguise("you are an idiot", "joined") == "youareanidiot"
    out = perturb_example(Example("1", "you idiot now", spans={"OFF": [(4, 9)]}), "joined", 0, 1.0, "spans")
    assert out.text == "you idiotnow" and out.span_texts("OFF") == ["idiot"]


def test_letter_like_draws_from_the_unicode_database():
    from kold_span.text.letters import readings

    for seed in range(5):
        out = disguise("idiot", "letter_like", seed)
        assert out != "idiot" and len(out) == 5
        assert all(a == b or readings(b) == (a,) for a, b in zip("idiot", out))


def test_masks_hide_inner_letters():
    for seed in range(10):
        out = disguise("fuck", "masks", seed)
        assert out[0] == "f" and out[-1] == "k" and len(out) == 4 and not out[1:3].isalpha()
        korean = disguise("개새끼", "masks", seed)
        assert korean[0] + korean[2] == "개끼" and korean[1] in "*#@%_$!x"
    assert disguise("바보", "masks") == "바보"  # no inner syllable
