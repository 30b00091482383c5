"""Tests for kold_span.text.align: character spans <-> token tags, and span snapping."""
from __future__ import annotations

import doctest
import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kold_span.text import align
from kold_span.data.example import merge_spans
from kold_span.text.align import IGNORE_INDEX, OverlapIndex, bio_labels, content_offsets, snap_spans, spans_to_tags, tags_to_spans

CORPUS = [
    "you are a stupid idiot",
    "stupid people are stupid",
    "여성징병제에도 동의하라고",
    "그런 짓을 할 놈들이 했다",
    "한국 남자들 진짜 싫다",
    "가나다 나다라 한국 다가 ab ba aab!",
]

# WordPiece-like: "##" pieces, offsets never include spaces.
WP_TEXT = "you are stupid idiot"
WP_OFFSETS = [(0, 0), (0, 3), (4, 7), (8, 11), (11, 14), (15, 20), (0, 0)]  # [CLS] you are stu ##pid idiot [SEP]

# BPE-like: offsets of word-initial tokens include the space before the word.
BPE_TEXT = "you are stupid idiot"
BPE_OFFSETS = [(0, 3), (3, 7), (7, 11), (11, 14), (14, 20)]  # you Ġare Ġstu pid Ġidiot

KO_TEXT = "여성징병제에도 동의하라고"


@functools.lru_cache(maxsize=None)
def wordpiece_tokenizer():
    """A BERT-style tokenizer trained on CORPUS, with [CLS] A [SEP] B [SEP] pairs."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(CORPUS, trainers.WordPieceTrainer(
        vocab_size=120, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"]))
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]", pad_token="[PAD]")


@functools.lru_cache(maxsize=None)
def metaspace_tokenizer():
    """A SentencePiece-style BPE tokenizer whose offsets include the space before a word."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=100, special_tokens=["<unk>", "<pad>"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>")


def encode(tokenizer, text: str) -> list[tuple[int, int]]:
    """The offset mapping of `text` alone."""
    return [tuple(o) for o in tokenizer(text, return_offsets_mapping=True)["offset_mapping"]]


def test_docstring_examples():
    result = doctest.testmod(align)
    assert result.attempted >= 5 and result.failed == 0


def test_bio_labels_order():
    assert IGNORE_INDEX == -100
    assert bio_labels(["OFF", "TGT"]) == ["O", "B-OFF", "I-OFF", "B-TGT", "I-TGT"]
    assert bio_labels([]) == ["O"]


# --- hand-built offsets -------------------------------------------------------------------

def test_wordpiece_offsets_exact_tags_and_back():
    tags = spans_to_tags([(8, 20)], WP_OFFSETS, span_type="OFF")
    assert tags == [None, "O", "O", "B-OFF", "I-OFF", "I-OFF", None]
    assert tags_to_spans(tags, WP_OFFSETS, WP_TEXT, span_type="OFF") == [(8, 20)]


def test_span_inside_tokens_widens_to_token_edges():
    tags = spans_to_tags([(9, 12)], WP_OFFSETS)  # "tu" + "p": cuts both pieces of "stupid"
    assert tags == [None, "O", "O", "B", "I", "O", None]
    assert tags_to_spans(tags, WP_OFFSETS, WP_TEXT) == [(8, 14)]


def test_adjacent_spans_each_get_a_b():
    assert spans_to_tags([(4, 7), (8, 14)], WP_OFFSETS) == [None, "O", "B", "B", "I", "O", None]
    assert spans_to_tags([(11, 14), (8, 11)], WP_OFFSETS) == [None, "O", "O", "B", "B", "O", None]
    # decoding merges spans that touch
    assert tags_to_spans([None, "O", "O", "B", "B", "O", None], WP_OFFSETS, WP_TEXT) == [(8, 14)]
    assert tags_to_spans([None, "O", "B", "B", "I", "O", None], WP_OFFSETS, WP_TEXT) == [(4, 7), (8, 14)]


def test_io_scheme_and_bad_scheme():
    assert spans_to_tags([(4, 14)], WP_OFFSETS, scheme="IO") == [None, "O", "I", "I", "I", "O", None]
    with pytest.raises(ValueError, match="BIO"):
        spans_to_tags([(4, 14)], WP_OFFSETS, scheme="BIOES")


def test_bpe_leading_space_is_not_covered_when_text_given():
    # span "are " ends on the space that starts the offset of "Ġstu"
    assert spans_to_tags([(4, 8)], BPE_OFFSETS, text=BPE_TEXT) == ["O", "B", "O", "O", "O"]
    assert spans_to_tags([(4, 8)], BPE_OFFSETS) == ["O", "B", "I", "O", "O"]
    assert content_offsets(BPE_OFFSETS, BPE_TEXT) == [(0, 3), (4, 7), (8, 11), (11, 14), (15, 20)]


def test_bpe_spans_back_start_after_the_space():
    assert tags_to_spans(["O", "B", "O", "O", "O"], BPE_OFFSETS, BPE_TEXT, trim=False) == [(4, 7)]
    assert tags_to_spans(["O", "O", "B", "I", "I"], BPE_OFFSETS, BPE_TEXT, trim=False) == [(8, 20)]


def test_whitespace_only_token_inside_span_is_inside():
    text = "you are  stupid"
    offsets = [(0, 3), (3, 7), (7, 8), (8, 15)]  # ▁you ▁are ▁ ▁stupid (double space)
    assert spans_to_tags([(4, 15)], offsets, text=text) == ["O", "B", "I", "I"]
    assert spans_to_tags([(9, 15)], offsets, text=text) == ["O", "O", "O", "B"]
    assert tags_to_spans(["O", "B", "I", "I"], offsets, text, trim=False) == [(4, 15)]
    # the empty "▁" token adds no characters to a run it starts
    assert tags_to_spans(["O", "O", "B", "I"], offsets, text, trim=False) == [(9, 15)]
    # a run made only of the empty "▁" token gives no span
    assert tags_to_spans(["O", "O", "B", "O"], offsets, text) == []


def test_segment_mask_and_special_tokens_get_none():
    mask = [False, False, False, True, True, True, False]
    tags = spans_to_tags([(0, 20)], WP_OFFSETS, segment_mask=mask)
    assert tags == [None, None, None, "B", "I", "I", None]
    assert tags_to_spans(["B", "I", "I", "I", "I", "I", "I"], WP_OFFSETS, WP_TEXT, segment_mask=mask) == [(8, 20)]
    with pytest.raises(ValueError, match="segment_mask"):
        spans_to_tags([(0, 3)], WP_OFFSETS, segment_mask=[True])


# --- decoding repairs ---------------------------------------------------------------------

def test_ill_formed_bio_is_repaired():
    # I without B at the start, I after O, and B-I-I continuing through "##pid"
    tags = [None, "I", "O", "I", "I", "B", None]
    assert tags_to_spans(tags, WP_OFFSETS, WP_TEXT) == [(0, 3), (8, 14), (15, 20)]


def test_none_and_type_change_break_runs():
    assert tags_to_spans([None, "B", None, "I", "I", "O", None], WP_OFFSETS, WP_TEXT) == [(0, 3), (8, 14)]
    tags = [None, "B-OFF", "I-TGT", "I-TGT", "O", "B-OFF", None]
    assert tags_to_spans(tags, WP_OFFSETS, WP_TEXT, span_type="OFF") == [(0, 3), (15, 20)]
    assert tags_to_spans(tags, WP_OFFSETS, WP_TEXT, span_type="TGT") == [(4, 11)]
    # without a type filter, an I of another type still starts its own span
    assert tags_to_spans(tags, WP_OFFSETS, WP_TEXT) == [(0, 3), (4, 11), (15, 20)]


def test_trim_strips_whitespace_of_token_offsets():
    text = "are you ok"
    offsets = [(0, 4), (4, 8), (8, 10)]  # tokens whose offsets keep a trailing space
    assert tags_to_spans(["B", "O", "O"], offsets, text) == [(0, 3)]
    assert tags_to_spans(["B", "O", "O"], offsets, text, trim=False) == [(0, 4)]


def test_bad_tags_and_lengths_raise():
    with pytest.raises(ValueError, match="'E'"):
        tags_to_spans([None, "E", "O", "O", "O", "O", None], WP_OFFSETS, WP_TEXT)
    with pytest.raises(ValueError, match="6 tags for 7 tokens"):
        tags_to_spans([None, "O", "O", "O", "O", None], WP_OFFSETS, WP_TEXT)


# --- snapping -----------------------------------------------------------------------------
# Kiwi on KO_TEXT: 여성 0-2, 징병 2-4, 제 4-5, 에 5-6, 도 6-7, 동의 8-10, 하 10-11, 라고 11-13.

def test_morpheme_snap_widens_to_whole_morphemes():
    assert snap_spans([(3, 4), (1, 6), (9, 10), (11, 12)], KO_TEXT, "morpheme") == [(2, 4), (0, 6), (8, 10), (11, 13)]
    assert snap_spans([(2, 4)], KO_TEXT, "morpheme") == [(2, 4)]


def test_morpheme_snap_with_contracted_syllables():
    # Kiwi: 하/VV + ᆯ/ETM both at 6-7 ("할"), 하/VV + 었/EP both at 12-13 ("했"), 다 13-14
    text = "그런 짓을 할 놈들이 했다"
    assert snap_spans([(6, 7), (12, 13), (12, 14)], text, "morpheme") == [(6, 7), (12, 13), (12, 14)]
    assert snap_spans([(1, 4)], text, "morpheme") == [(0, 4)]  # "런 짓" → "그런 짓"


def test_eojeol_snap_widens_to_whole_words():
    assert snap_spans([(3, 4), (9, 10), (6, 9)], KO_TEXT, "eojeol") == [(0, 7), (8, 13), (0, 13)]
    assert snap_spans([(3, 4)], KO_TEXT, "none") == [(3, 4)]


def test_tags_to_spans_snaps():
    offsets = [(i, i + 1) for i, ch in enumerate(KO_TEXT) if not ch.isspace()]  # one token per syllable
    tags = ["B" if start == 3 else "O" for start, _ in offsets]  # only "병"
    assert tags_to_spans(tags, offsets, KO_TEXT) == [(3, 4)]
    assert tags_to_spans(tags, offsets, KO_TEXT, snap="morpheme") == [(2, 4)]
    assert tags_to_spans(tags, offsets, KO_TEXT, snap="eojeol") == [(0, 7)]


def test_bad_snap_names_allowed_values():
    with pytest.raises(ValueError, match="'none', 'morpheme', 'eojeol', 'word'"):
        snap_spans([(0, 1)], KO_TEXT, "words")
    with pytest.raises(ValueError, match="morpheme"):
        tags_to_spans([], [], KO_TEXT, snap="syllable")


# --- real tokenizers ----------------------------------------------------------------------

def test_wordpiece_pair_encoding_masks_context():
    tokenizer = wordpiece_tokenizer()
    context, text = "여성징병제 찬성", "동의하라고, 한국 남자들!"
    enc = tokenizer(context, text, return_offsets_mapping=True)
    offsets = [tuple(o) for o in enc["offset_mapping"]]
    mask = [sid == 1 for sid in enc.sequence_ids()]
    span = (7, 13)
    assert text[slice(*span)] == "한국 남자들"
    tags = spans_to_tags([span], offsets, span_type="TGT", segment_mask=mask, text=text)
    for tag, sid, (start, end) in zip(tags, enc.sequence_ids(), offsets):
        if sid != 1:
            assert tag is None
        elif start < span[1] and span[0] < end:
            assert tag in ("B-TGT", "I-TGT")
        else:
            assert tag == "O"
    assert tags.count("B-TGT") == 1
    assert tags_to_spans(tags, offsets, text, span_type="TGT", segment_mask=mask) == [span]
    # the context's offsets point into another string: unmasked, they would be tagged too
    unmasked = spans_to_tags([span], offsets, span_type="TGT", text=text)
    assert any(t is not None and t != "O" for t, sid in zip(unmasked, enc.sequence_ids()) if sid == 0)


def test_metaspace_round_trip_on_real_offsets():
    tokenizer = metaspace_tokenizer()
    text = "you are  stupid idiot"
    offsets = encode(tokenizer, text)
    assert any(text[s].isspace() for s, e in offsets if s < e)  # offsets do include spaces
    tags = spans_to_tags([(9, 15)], offsets, span_type="OFF", text=text)
    assert tags_to_spans(tags, offsets, text, span_type="OFF", trim=False) == [(9, 15)]


# --- properties ---------------------------------------------------------------------------

ALPHABET = "가나다한국ab! "
texts = st.text(alphabet=ALPHABET, min_size=1, max_size=30).filter(lambda t: t.strip())
TOKENIZERS = {"wordpiece": wordpiece_tokenizer, "metaspace": metaspace_tokenizer}


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@settings(max_examples=100, deadline=None)
@given(text=texts, data=st.data())
def test_token_aligned_spans_round_trip_exactly(name, text, data):
    offsets = encode(TOKENIZERS[name](), text)
    pieces = [i for i, (s, e) in enumerate(content_offsets(offsets, text)) if s < e]
    bounds = sorted(data.draw(st.lists(st.sampled_from(pieces), max_size=6)))
    aligned = content_offsets(offsets, text)
    spans = [(aligned[i][0], aligned[j][1]) for i, j in zip(bounds[::2], bounds[1::2])]
    tags = spans_to_tags(spans, offsets, text=text)
    assert tags_to_spans(tags, offsets, text, trim=False) == merge_spans(spans)


@settings(max_examples=100, deadline=None)
@given(text=texts, data=st.data())
def test_any_spans_round_trip_to_covering_token_spans(text, data):
    offsets = encode(wordpiece_tokenizer(), text)
    ends = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6, unique=True)))
    spans = [(s, e) for s, e in zip(ends[::2], ends[1::2])]
    back = tags_to_spans(spans_to_tags(spans, offsets, text=text), offsets, text)
    covered = {i for s, e in back for i in range(s, e)}
    wanted = {i for s, e in spans for i in range(s, e) if not text[i].isspace()}
    assert wanted <= covered
    # and nothing beyond the tokens that touch a span (plus whitespace between them)
    touching = {i for ts, te in offsets for s, e in spans if ts < e and s < te for i in range(ts, te)}
    assert all(i in touching or text[i].isspace() for i in covered)


def test_morpheme_snapping_drops_spans_of_grammatical_morphemes_only():
    text = "이 기자 기사 쓰는 수준 진짜 바닥이다"
    offsets = [(0, 1), (2, 4), (5, 7), (8, 10), (11, 13), (14, 16), (17, 19), (19, 20), (20, 21)]
    tags = ["O", "O", "O", "O", "B", "I", "I", "O", "B"]  # "수준 진짜 바닥" and a lone ending "다"
    assert tags_to_spans(tags, offsets, text, snap="none") == [(11, 19), (20, 21)]
    assert tags_to_spans(tags, offsets, text, snap="morpheme") == [(11, 19)]


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 8)), max_size=30),
       st.integers(0, 45), st.integers(1, 10))
def test_overlap_index_agrees_with_a_scan(raw, start, width):
    intervals = [(s, s + w) for s, w in raw]
    end = start + width
    expected = [i for i, (s, e) in enumerate(intervals) if s < end and e > start]
    assert OverlapIndex(intervals).overlapping(start, end) == expected


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 8)), max_size=30), st.booleans(),
       st.lists(st.tuples(st.integers(0, 45), st.integers(0, 10)), max_size=12))
def test_overlap_index_many_spans_agree_with_a_scan(raw, in_order, raw_spans):
    # in start order with ends never falling back (tokens, morphemes: answered as runs), or as drawn
    intervals = [(s, s + w) for s, w in raw]
    if in_order:
        intervals = sorted(intervals)
        intervals = [(s, max(e for _, e in intervals[:i + 1])) for i, (s, _) in enumerate(intervals)]
    spans = [(s, s + w) for s, w in raw_spans]
    index = OverlapIndex(intervals)
    assert index.contiguous or not in_order
    positions = np.arange(len(intervals))
    for (start, end), found in zip(spans, index.overlapping_many(spans)):
        expected = [i for i, (s, e) in enumerate(intervals) if s < end and e > start]
        assert positions[found].tolist() == expected == index.overlapping(start, end)
    # widening: the union of a span and every interval it overlaps (snap_spans' rule)
    assert index.widen(spans) == [
        (min([start] + [s for s, e in intervals if s < end and e > start]),
         max([end] + [e for s, e in intervals if s < end and e > start])) for start, end in spans]


def runs_by_scan(tags, offsets, text, span_type=None, segment_mask=None):
    """tags_to_spans' runs before trimming, snapping and merging, by its definition: one token at a time."""
    runs, run_type, in_run = [], None, False
    for i, tag in enumerate(tags):
        prefix, _, tag_type = (tag or "").partition("-")
        tag_type = tag_type or None
        if (tuple(offsets[i]) == (0, 0) or (segment_mask is not None and not segment_mask[i])
                or prefix not in ("B", "I") or (span_type is not None and tag_type != span_type)):
            in_run = False
            continue
        if not (in_run and prefix == "I" and tag_type == run_type):
            runs.append([])
            run_type, in_run = tag_type, True
        runs[-1].append(content_offsets([offsets[i]], text)[0])
    pieces = [[(s, e) for s, e in run if s < e] for run in runs]
    return [(min(s for s, _ in piece), max(e for _, e in piece)) for piece in pieces if piece]


@given(st.lists(st.tuples(st.sampled_from([None, "O", "B", "I", "B-OFF", "I-OFF", "B-TGT", "I-TGT"]),
                          st.integers(0, 12), st.integers(0, 3), st.booleans()), max_size=40),
       st.text("ab ", min_size=60, max_size=60), st.sampled_from([None, "OFF"]), st.booleans())
def test_tags_to_spans_agrees_with_a_token_by_token_scan(tokens, text, span_type, masked):
    # tokens of random widths, some special (0, 0), some of spaces only; a segment mask or none
    offsets, at = [], 0
    for _, step, width, special in tokens:
        at = min(at + step, 55)
        offsets.append((0, 0) if special else (at, at + width))
    tags = [tag for tag, *_ in tokens]
    mask = [i % 3 != 0 for i in range(len(tags))] if masked else None
    expected = merge_spans(s for s in (align.trim_span(span, text) for span in
                                       runs_by_scan(tags, offsets, text, span_type, mask)) if s is not None)
    assert tags_to_spans(tags, offsets, text, span_type=span_type, segment_mask=mask) == expected
