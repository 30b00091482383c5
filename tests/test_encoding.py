"""Input windows: context first in, cut first; long texts covered by overlapping windows."""
import pytest

from kold_span.config.schema import ScratchEncoderConfig
from kold_span.models.backbones import train_tokenizer
from kold_span.models.windows import InputEncoder

WORDS = "너 진짜 쓰레기 같은 정치인 오늘 기사 제목 경기 응원 합니다 바보 멍청이".split()


@pytest.fixture(scope="module")
def tokenizer():
    texts = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))] * 3
    return train_tokenizer(texts, ScratchEncoderConfig(vocab_size=300, morpheme_pretokenize=False))


def text_tokens(window):
    return [tuple(o) for o, m in zip(window["offsets"], window["text_mask"]) if m]


def test_short_pair_is_one_window_with_context_first(tokenizer):
    enc = InputEncoder(tokenizer, max_length=32, stride=4)
    [window] = enc.encode("너 진짜 바보", "오늘 기사 제목")
    assert window["text_mask"][0] == 0  # [CLS]
    ids = tokenizer.convert_ids_to_tokens(window["input_ids"])
    assert ids[0] == "[CLS]" and ids.count("[SEP]") == 2
    assert text_tokens(window) == [(0, 1), (2, 4), (5, 7)]
    assert window["token_type_ids"][-1] == 1 and window["token_type_ids"][1] == 0


def test_context_none_drops_the_context(tokenizer):
    enc = InputEncoder(tokenizer, max_length=32, stride=4, context_mode="none")
    [window] = enc.encode("너 진짜 바보", "오늘 기사 제목")
    assert tokenizer.convert_ids_to_tokens(window["input_ids"]).count("[SEP]") == 1


def test_long_text_windows_cover_every_character(tokenizer):
    text = " ".join(WORDS * 6)
    enc = InputEncoder(tokenizer, max_length=24, stride=6)
    windows = enc.encode(text, "오늘 기사 제목 " * 10)
    assert len(windows) > 3
    covered = {i for w in windows for s, e in text_tokens(w) for i in range(s, e)}
    assert covered == {i for i, ch in enumerate(text) if not ch.isspace()}
    assert all(len(w["input_ids"]) <= 24 for w in windows)
    # Consecutive windows overlap by the stride.
    first, second = text_tokens(windows[0]), text_tokens(windows[1])
    assert set(first) & set(second)


def test_context_is_cut_before_the_text(tokenizer):
    enc = InputEncoder(tokenizer, max_length=24, stride=4)
    text = "너 진짜 바보"
    [window] = enc.encode(text, "오늘 기사 제목 " * 20)
    assert len(window["input_ids"]) <= 24
    assert text_tokens(window) == [(0, 1), (2, 4), (5, 7)]


def test_an_empty_text_with_a_long_title_is_one_window_of_context(tokenizer):
    # Found by tests/test_fuzz.py: the title took the whole budget an empty text left it, and the
    # encoder said "leaves no room for the text" for a row that `predict` must answer.
    enc = InputEncoder(tokenizer, max_length=24, stride=4)
    [window] = enc.encode("", "오늘 기사 제목 " * 20)
    assert len(window["input_ids"]) <= 24 and text_tokens(window) == []
    assert tokenizer.convert_ids_to_tokens(window["input_ids"]).count("[SEP]") == 2


def test_dialogue_keeps_the_last_turns(tokenizer):
    enc = InputEncoder(tokenizer, max_length=64, stride=4, max_turns=1)
    assert enc.context_string(["A: 오늘", "B: 경기", "A: 응원"]) == ("A: 응원", True)
    enc.max_turns = 0
    assert enc.context_string(["A: 오늘"]) == (None, True)


def test_a_batch_encodes_each_example_as_it_would_alone(tokenizer):
    """`encode_many` tokenizes every distinct string once; each example still gets its own windows."""
    enc = InputEncoder(tokenizer, max_length=16, stride=4, max_turns=2)
    long_text = " ".join(WORDS * 2)
    texts = ["너 진짜 바보", "오늘 기사 제목", long_text, "너 진짜 바보", "경기 응원"]
    contexts = ["오늘 기사 제목", None, ["경기", "응원 합니다", "바보 멍청이"], "   ", "너 진짜 바보"]
    together = enc.encode_many(texts, contexts)
    assert together == [enc.encode_many([t], [c])[0] for t, c in zip(texts, contexts)]
    assert len(together[2]) > 1 and together[0] != together[3]  # windows of a long text; " " is no context
    with pytest.raises(ValueError):
        enc.encode_many(texts, contexts[:-1])


def test_a_text_longer_than_the_window_gives_no_indexing_warning(tokenizer, capfd, caplog):
    tokenizer.model_max_length = 16  # the encoder's own window; the whole text is far longer
    encoder = InputEncoder(tokenizer, max_length=16, stride=4)
    windows = encoder.encode_many(["지금 당장 사퇴하라 " * 40], [None])[0]
    assert len(windows) > 1
    captured = capfd.readouterr()
    assert "indexing errors" not in captured.err + captured.out + caplog.text


def test_offsets_are_tuples_the_garbage_collector_can_stop_tracking(tokenizer):
    # a list per token was an object every full collection walked: 17,000 for a comment of 20,000 characters
    import gc

    enc = InputEncoder(tokenizer, max_length=24, stride=6)
    windows = enc.encode(" ".join(WORDS * 6), "오늘 기사 제목")
    offsets = [o for w in windows for o in w["offsets"]]
    assert len(offsets) > 50 and all(type(o) is tuple and len(o) == 2 for o in offsets)
    gc.collect()
    assert not any(gc.is_tracked(o) for o in offsets)
