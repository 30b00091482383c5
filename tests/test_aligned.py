"""Tests for kold_span.text.aligned: edited text with its alignment back to the original."""
from __future__ import annotations

import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kold_span.text import aligned
from kold_span.text.aligned import AlignedText, grapheme_span


def test_docstring_examples():
    result = doctest.testmod(aligned)
    assert result.attempted >= 8 and result.failed == 0


def test_identity_maps_each_character_to_itself():
    t = AlignedText.identity("바보 idiot")
    assert t.text == t.original and not t.changed
    assert t.sources == tuple((i, i + 1) for i in range(8))
    assert t.to_original(3, 8) == (3, 8) and t.from_original(0, 2) == (0, 2)


def test_removed_dot_is_covered_by_the_span_over_the_word():
    t = AlignedText.identity("너 씨.발 놈").edit([(3, 4, "")])
    assert t.text == "너 씨발 놈"
    assert t.to_original(2, 4) == (2, 5)          # "씨발" -> "씨.발", the dot inside
    assert t.to_original(2, 3) == (2, 3)          # "씨" alone
    assert t.from_original(2, 5) == (2, 4)
    assert t.removed() == [3]


def test_zero_width_spaces_inside_a_word_are_covered_but_not_at_its_edges():
    original = "\u200bi\u200bdiot\u200b"
    t = AlignedText.identity(original).edit([(0, 1, ""), (2, 3, ""), (7, 8, "")])
    assert t.text == "idiot"
    assert t.to_original(0, 5) == (1, 7)
    assert t.removed() == [0, 2, 7]


def test_several_characters_replacing_one_range_share_it():
    # Two jamo recomposed into one syllable, then a ligature expanded.
    t = AlignedText.identity("ㅅㅣ발 ﬁ").edit([(0, 2, "시"), (4, 5, "fi")])
    assert t.text == "시발 fi"
    assert t.sources == ((0, 2), (2, 3), (3, 4), (4, 5), (4, 5))
    assert t.to_original(0, 1) == (0, 2)
    assert t.to_original(4, 5) == (4, 5)          # half of the ligature is the whole ligature
    assert t.from_original(1, 2) == (0, 1)        # the vowel jamo is inside the syllable


def test_edits_compose_through_their_alignment():
    # "tlqkf" -> "시발" in one step per syllable, then a later step removes nothing but inserts.
    t = AlignedText.identity("야 tlqkf").edit([(2, 4, "시"), (4, 7, "발")])
    assert (t.text, t.sources[2:]) == ("야 시발", ((2, 4), (4, 7)))
    u = t.edit([(3, 3, ".")])                     # a perturbation inserts a dot inside
    assert u.text == "야 시.발" and u.sources[3] == (4, 4)
    assert u.to_original(2, 5) == (2, 7)
    assert u.from_original(2, 7) == (2, 5)        # the inserted dot is strictly inside the gold span
    assert u.from_original(4, 7) == (4, 5)        # ... but not one at its edge
    assert u.to_original(3, 4) == (4, 4)          # only an inserted character: empty, at its place


def test_insertions_at_the_edges_and_inside_one_replacement():
    t = AlignedText.identity("ab").edit([(0, 0, "<"), (1, 2, "XY"), (2, 2, ">")])
    assert t.text == "<aXY>"
    assert t.sources == ((0, 0), (0, 1), (1, 2), (1, 2), (2, 2))
    inside = t.edit([(3, 3, "-")])                # between X and Y, which share (1, 2)
    assert inside.sources[3] == (1, 2)
    assert t.from_original(0, 2) == (1, 4)        # the edge insertions are outside the gold span


def test_to_original_keeps_grapheme_clusters_whole():
    family = "\U0001F468\u200d\U0001F469\u200d\U0001F467"   # one ZWJ emoji sequence
    original = "e\u0301 " + family + " x"
    t = AlignedText.identity(original)
    assert t.to_original(1, 2) == (0, 2)           # a span on the accent takes its letter
    assert t.to_original(4, 6) == (3, 3 + len(family))
    assert t.to_original(1, 2, graphemes=False) == (1, 2)
    assert grapheme_span("ab", 1, 1) == (1, 1)


def test_bad_edits_and_spans_raise():
    t = AlignedText.identity("abc")
    with pytest.raises(ValueError):
        t.edit([(2, 3, "x"), (0, 1, "y")])
    with pytest.raises(ValueError):
        t.edit([(0, 4, "x")])
    with pytest.raises(ValueError):
        t.to_original(2, 5)
    with pytest.raises(ValueError):
        t.from_original(3, 2)
    with pytest.raises(ValueError):
        AlignedText("ab", "ab", ((0, 1),))


# Property tests. Originals use distinct characters (CJK ideographs), edits insert ASCII, so a
# character that survived every edit is recognisable and must still point at itself.
ORIGINALS = st.integers(0, 12).map(lambda n: "".join(chr(0x4E00 + i) for i in range(n)))


@st.composite
def edit_chains(draw):
    """An original and a chain of 1-4 edit steps applied to it."""
    t = AlignedText.identity(draw(ORIGINALS))
    for _ in range(draw(st.integers(1, 4))):
        cuts = sorted(draw(st.lists(st.integers(0, len(t.text)), max_size=6)))
        pairs = list(zip(cuts[::2], cuts[1::2]))
        news = draw(st.lists(st.text("xyz", max_size=3), min_size=len(pairs), max_size=len(pairs)))
        t = t.edit([(s, e, new) for (s, e), new in zip(pairs, news)])
    return t


@settings(max_examples=200, deadline=None)
@given(edit_chains())
def test_sources_are_monotone_and_inside_the_original(t):
    for (s, e) in t.sources:
        assert 0 <= s <= e <= len(t.original)
    for (s1, e1), (s2, e2) in zip(t.sources, t.sources[1:]):
        assert s1 <= s2 and e1 <= e2


@settings(max_examples=200, deadline=None)
@given(edit_chains())
def test_every_original_character_is_covered_or_removed_and_survivors_point_at_themselves(t):
    covered = {i for s, e in t.sources for i in range(s, e)}
    assert covered | set(t.removed()) == set(range(len(t.original)))
    assert not covered & set(t.removed())
    for char, (s, e) in zip(t.text, t.sources):
        if char not in "xyz":
            assert (s, e) == (s, s + 1) and t.original[s] == char


@settings(max_examples=200, deadline=None)
@given(edit_chains(), st.data())
def test_spans_map_back_and_forth_containing_what_they_came_from(t, data):
    start = data.draw(st.integers(0, len(t.text)))
    end = data.draw(st.integers(start, len(t.text)))
    o_start, o_end = t.to_original(start, end, graphemes=False)
    assert 0 <= o_start <= o_end <= len(t.original)
    for s, e in t.sources[start:end]:
        assert o_start <= s and e <= o_end           # contains every character it came from
    back = t.from_original(o_start, o_end)
    non_inserted = [i for i in range(start, end) if t.sources[i][0] < t.sources[i][1]]
    if non_inserted:
        assert back[0] <= non_inserted[0] and non_inserted[-1] < back[1]


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=20), st.data())
def test_identity_round_trips(text, data):
    t = AlignedText.identity(text)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert t.from_original(start, end) == (start, end)
    assert t.to_original(start, end, graphemes=False) == (start, end)
    g_start, g_end = t.to_original(start, end)
    assert g_start <= start and end <= g_end


@settings(max_examples=300, deadline=None)
@given(edit_chains(), st.data())
def test_from_original_is_its_definition(t, data):
    # from_original bisects the monotone sources; its definition scans every character: the
    # characters whose range overlaps the span, and inserted ones strictly inside it.
    start = data.draw(st.integers(0, len(t.original)))
    end = data.draw(st.integers(start, len(t.original)))
    inside = [i for i, (s, e) in enumerate(t.sources)
              if start < end and (start < s < end if s == e else s < end and e > start)]
    if inside:
        assert t.from_original(start, end) == (inside[0], inside[-1] + 1)
    else:
        position = sum(1 for _, e in t.sources if e <= start)
        assert t.from_original(start, end) == (position, position)


def test_a_long_text_finds_its_grapheme_clusters_once(monkeypatch):
    # Moving 2,000 predicted spans of a 20,000-character comment back onto it found every grapheme
    # cluster of the comment again for each span: 13 s on the service's model thread.
    from kold_span.text import aligned

    calls = []
    found = aligned.grapheme_bounds
    monkeypatch.setattr(aligned, "grapheme_bounds", lambda text: calls.append(1) or found(text))
    t = AlignedText.identity("가나 " * 1000)
    spans = [t.to_original(i, i + 2) for i in range(0, 3000, 3)]
    assert spans[:2] == [(0, 2), (3, 5)] and len(calls) == 1
    gold = t.spans_from_original({"OFF": [(i, i + 2) for i in range(0, 3000, 3)]})
    assert gold["OFF"][:2] == [(0, 2), (3, 5)]
