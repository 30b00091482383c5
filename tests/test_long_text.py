"""A long comment: Kiwi analyses it in pieces and the pre-tokenizer cuts it from halves, and its
predictions are those of the whole-text path (`KIWI_PIECE_CHARS` and `SLICE_LEAF` set past its length)."""
import json

import pytest

from kold_span.inference.predictor import Predictor
from kold_span.text import morphemes

from conftest import FIXTURE, FIXTURES


@pytest.fixture(scope="module")
def long_text() -> str:
    """About 5,000 characters: the fixture's comments, in order, joined by spaces until long enough."""
    comments = [record["comment"] for record in json.loads(FIXTURE.read_text(encoding="utf-8"))]
    parts, length = [], 0
    while length < 5000:
        parts.append(comments[len(parts) % len(comments)])
        length += len(parts[-1]) + 1
    return " ".join(parts)


def predict_cold(predictor: Predictor, text: str) -> dict:
    morphemes.clear_cache()  # analyses are cached by text: each path must make its own
    [out] = predictor.predict([text])
    morphemes.clear_cache()
    return out


def test_a_long_text_is_predicted_as_by_the_whole_text_path(long_text, monkeypatch):
    predictor = Predictor.from_pretrained(FIXTURES / "model_v1" / "model")  # Kiwi pre-tokens, morpheme snapping
    assert len(morphemes.piece_bounds(long_text, morphemes.KIWI_PIECE_CHARS)) > 1
    pieces = predict_cold(predictor, long_text)
    monkeypatch.setattr(morphemes, "KIWI_PIECE_CHARS", len(long_text))
    monkeypatch.setattr(morphemes, "SLICE_LEAF", len(long_text))
    whole = predict_cold(predictor, long_text)
    assert pieces["spans"] and pieces == whole
    for span in pieces["spans"]:
        assert long_text[span["start"]:span["end"]] == span["text"]
