"""`make demo`'s model normalizes by default: a comment, its NFD and its zero-width forms get the same labels and
spans."""
from __future__ import annotations

import dataclasses
import json
import unicodedata

import pytest

from kold_span.config.loading import load_config
from kold_span.inference.predictor import Predictor
from kold_span.text.normalize import STEPS
from kold_span.training.run import train

from conftest import DEMO

COMMENT = "이 쓰레기 같은 정치인들 다 꺼져라 바보들"


def zero_width(text: str) -> str:
    """A zero-width space after the first character of every word of two characters or more."""
    return " ".join(w[0] + "\u200b" + w[1:] if len(w) > 1 else w for w in text.split(" "))


def on_comment(written: str, spans: list[dict]) -> list[tuple[str, str, float]]:
    """Each span as (type, its text with the disguise undone, score), to compare forms of one comment."""
    return [(s["type"], unicodedata.normalize("NFC", written[s["start"]:s["end"]]).replace("\u200b", ""), s["score"])
            for s in spans]


@pytest.mark.slow
def test_the_demo_model_reads_a_comment_and_its_nfd_and_zero_width_forms_alike(tmp_path):
    config = load_config(DEMO, [f"output_dir={tmp_path}", "run=r", "trainer.max_epochs=1", "data.limit=120"])
    assert config.normalize.steps() == STEPS  # the demo config has no normalize section: on by default
    result = train(config, quiet=True)
    saved = json.loads((result.model_dir / "config.json").read_text(encoding="utf-8"))
    assert saved["normalize"] == {"steps": list(STEPS)}
    predictor = Predictor.from_pretrained(result.model_dir)
    forms = [COMMENT, unicodedata.normalize("NFD", COMMENT), zero_width(COMMENT)]
    outputs = predictor.predict(forms)
    assert outputs[1]["signals"].get("nfc") and outputs[2]["signals"] == {"invisible": 5}
    # The network reads one normalized text for all three: the same probabilities, not only the same labels.
    assert outputs[0]["labels"] == outputs[1]["labels"] == outputs[2]["labels"]
    spans = [on_comment(text, out["spans"]) for text, out in zip(forms, outputs)]
    assert spans[0] == spans[1] == spans[2]
    for text, out in zip(forms, outputs):
        assert all(text[s["start"]:s["end"]] == s["text"] for s in out["spans"])
    # the same network reading text as written tells the forms apart
    predictor.settings = dataclasses.replace(predictor.settings, normalize=None)
    as_written = predictor.predict(forms)
    assert as_written[1]["labels"] != as_written[0]["labels"] or \
        on_comment(forms[1], as_written[1]["spans"]) != on_comment(forms[0], as_written[0]["spans"])
