"""Normalization wired through a model directory: saved, loaded, applied to inputs, spans on the original."""
from __future__ import annotations

import json
import time
import unicodedata

import pytest

from kold_span import corpora
from kold_span.cli import main
from kold_span.config.loading import load_config
from kold_span.errors import ModelFormatError
from kold_span.inference.predictor import Predictor, on_original
from kold_span.models.manifest import write_manifest
from kold_span.text.normalize import STEPS, normalize
from kold_span.training.evaluators import evaluate_predictor
from kold_span.training.run import normalized_splits, train

from conftest import FIXTURE, TINY, untrained_model

NFC_TEXT = "바보 멍청이 꺼져라 이 쓰레기 같은 정치인들"
NFD_TEXT = unicodedata.normalize("NFD", NFC_TEXT)


def normalizing_model(directory, steps=STEPS):
    """`untrained_model` whose config.json asks for normalization by `steps`, its span task deciding at
    P(B) + P(I) >= 0.5 (where the seeded weights mark 바보, 꺼져라 and 정치인들 in NFC_TEXT)."""
    model = untrained_model(directory)
    path = model / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["tasks"][1]["thresholds"] = [0.5]
    path.write_text(json.dumps({**config, "normalize": {"steps": list(steps)}}), encoding="utf-8")
    write_manifest(model)  # config.json changed on purpose
    return model


def without_signals(output):
    return {k: v for k, v in output.items() if k != "signals"}


def test_a_normalizing_model_reads_nfd_and_nfc_alike(tmp_path):
    predictor = Predictor.from_pretrained(normalizing_model(tmp_path / "m"))
    assert predictor.settings.normalize == STEPS
    nfc, nfd = predictor.predict([NFC_TEXT, NFD_TEXT])
    syllables = sum("가" <= c <= "힣" for c in NFC_TEXT)
    assert nfc["signals"] == {} and nfd["signals"] == {"nfc": syllables}
    assert nfc["labels"] == nfd["labels"]
    assert [s["text"] for s in nfc["spans"]] == ["바보", "꺼져라", "정치인들"]
    # Each NFC syllable is three NFD jamo here: spans land on the same syllables of each input.
    to_nfd = {i: len(unicodedata.normalize("NFD", NFC_TEXT[:i])) for i in range(len(NFC_TEXT) + 1)}
    assert [(to_nfd[s["start"]], to_nfd[s["end"]], s["type"]) for s in nfc["spans"]] == \
        [(s["start"], s["end"], s["type"]) for s in nfd["spans"]]
    for text, out in ((NFC_TEXT, nfc), (NFD_TEXT, nfd)):
        for span in out["spans"]:
            assert text[span["start"]:span["end"]] == span["text"]


def test_the_steps_are_saved_and_a_model_without_them_reads_text_as_written(tmp_path):
    predictor = Predictor.from_pretrained(normalizing_model(tmp_path / "m", ("invisible", "nfc")))
    assert predictor.settings.normalize == ("nfc", "invisible")
    again = Predictor.from_pretrained(predictor.save_pretrained(tmp_path / "again"))
    saved = json.loads((tmp_path / "again" / "config.json").read_text(encoding="utf-8"))
    assert saved["normalize"] == {"steps": ["nfc", "invisible"]} and again.settings.normalize == ("nfc", "invisible")
    [out] = again.predict(["바\u200b보\u202e"])
    assert out["signals"] == {"invisible": 1, "bidi": 1}

    plain = Predictor.from_pretrained(untrained_model(tmp_path / "plain"))
    assert plain.settings.normalize is None
    [out] = plain.predict(["바\u200b보"])
    assert "signals" not in out
    assert "normalize" not in json.loads((tmp_path / "plain" / "config.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("section, message", [
    ({"steps": "nfc"}, "must be an object with a list 'steps'"),
    ({"steps": ["nfkc"]}, r"config\.json: key 'normalize\.steps': unknown normalization step\(s\) 'nfkc'"),
])
def test_a_bad_normalize_key_names_the_file(tmp_path, section, message):
    model = untrained_model(tmp_path / "m")
    path = model / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text(encoding="utf-8")), "normalize": section}))
    write_manifest(model)
    with pytest.raises(ModelFormatError, match=message):
        Predictor.from_pretrained(model)


def test_spans_found_on_the_normalized_text_cover_what_was_removed_on_the_original():
    original = "너 씨.발 i\u200bd\u0456ot e\u0301h"
    n = normalize(original)
    assert n.aligned.text == "너 씨발 idiot éh"
    spans = [{"type": "OFF", "start": s, "end": e, "text": n.aligned.text[s:e], "score": 0.9}
             for s, e in ((2, 4), (5, 10), (11, 12))]
    out = on_original({"labels": {}, "spans": spans}, n)
    assert [(s["start"], s["end"], s["text"]) for s in out["spans"]] == [
        (2, 5, "씨.발"), (6, 12, "i\u200bd\u0456ot"), (13, 15, "e\u0301")]
    assert out["signals"] == {"nfc": 1, "invisible": 1, "confusables": 1, "separators": 1}


def test_gold_spans_move_onto_the_normalized_training_text():
    gold = corpora.read("kold", FIXTURE)[0]
    nfd = type(gold)(id=gold.id, text=unicodedata.normalize("NFD", gold.text), context=gold.context,
                     labels=gold.labels, spans={"OFF": [(len(unicodedata.normalize("NFD", gold.text[:s])),
                                                         len(unicodedata.normalize("NFD", gold.text[:e])))
                                                        for s, e in gold.spans["OFF"]]})
    splits, extra = normalized_splits({"train": [nfd]}, {"OFF": ([nfd], 2)}, STEPS)
    [moved] = splits["train"]
    assert moved.text == gold.text
    assert moved.spans["OFF"] == gold.spans["OFF"]
    assert extra == {"OFF": ([moved], 2)}
    assert normalized_splits({"train": [nfd]}, {}, None)[0]["train"][0] is nfd


@pytest.mark.slow
def test_a_model_trained_with_normalization_predicts_nfd_like_nfc(tmp_path):
    config = load_config(TINY, [f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=r", "data.limit=16",
                                "normalize.enabled=true"])
    result = train(config, quiet=True)
    saved = json.loads((result.model_dir / "config.json").read_text(encoding="utf-8"))
    assert saved["normalize"] == {"steps": list(STEPS)}
    predictor = Predictor.from_pretrained(result.model_dir)
    examples = corpora.read("kold", FIXTURE)[:16]
    assert evaluate_predictor(predictor, examples)["OFF_span/char_f1"] >= 0.9

    text = next(e.text for e in examples if e.spans.get("OFF"))
    nfd = unicodedata.normalize("NFD", text)
    out_nfc, out_nfd = predictor.predict([text, nfd])
    assert out_nfc["spans"], "the overfit model marks a span on a training text"
    to_nfd = {i: len(unicodedata.normalize("NFD", text[:i])) for i in range(len(text) + 1)}
    assert [(to_nfd[s["start"]], to_nfd[s["end"]]) for s in out_nfc["spans"]] == \
        [(s["start"], s["end"]) for s in out_nfd["spans"]]
    assert out_nfc["labels"]["OFF"]["label"] == out_nfd["labels"]["OFF"]["label"]
    for span in out_nfd["spans"]:
        assert nfd[span["start"]:span["end"]] == span["text"]

    inputs = tmp_path / "in.jsonl"
    inputs.write_text(json.dumps({"id": "1", "text": nfd}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["predict", "--model", str(result.model_dir), "--input", str(inputs), "--output",
                 str(tmp_path / "out.jsonl"), "--quiet", "--precision", "fp32"]) == 0
    [row] = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert row["signals"]["nfc"] > 0
    assert [(s["start"], s["end"]) for s in row["spans"]] == [(s["start"], s["end"]) for s in out_nfd["spans"]]


def test_the_service_answers_with_signals_and_spans_on_the_text_as_sent(tmp_path):
    from fastapi.testclient import TestClient

    from kold_span.inference.ensemble import load_predictor
    from kold_span.service.app import Settings, create_app

    model = normalizing_model(tmp_path / "m")
    comments = [{"id": "nfd", "text": NFD_TEXT}, {"id": "zw", "text": "바\u200b보 멍청이 꺼져라"}]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in comments), encoding="utf-8")
    assert main(["predict", "--model", str(model), "--input", str(source), "--output", str(tmp_path / "out.jsonl"),
                 "--quiet"]) == 0
    written = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    with TestClient(create_app(Settings(models=(str(model),)), lambda: load_predictor([model]))) as client:
        for _ in range(600):
            if client.get("/health").status_code == 200:
                break
            time.sleep(0.1)
        response = client.post("/v1/predict", json={"comments": comments})
    assert response.status_code == 200
    answered = response.json()["predictions"]
    assert answered == written
    assert [p["signals"] for p in answered] == [{"nfc": 18}, {"invisible": 1}]
    zw = answered[1]
    assert zw["spans"][0]["text"] == "바\u200b보"  # the span over 바보 covers the zero-width space inside it
    for p, c in zip(answered, comments):
        assert all(c["text"][s["start"]:s["end"]] == s["text"] for s in p["spans"])


def test_the_config_section_switches_steps_and_names_a_mistyped_one(tmp_path):
    from kold_span.errors import ConfigError

    base = [f"output_dir={tmp_path}", f"data.train={FIXTURE}"]
    assert load_config(TINY, base).normalize.steps() == STEPS  # on by default (issue 58)
    assert load_config(TINY, [*base, "normalize.enabled=false"]).normalize.steps() is None
    config = load_config(TINY, [*base, "normalize.keyboard=false"])
    assert config.normalize.steps() == tuple(s for s in STEPS if s != "keyboard")
    with pytest.raises(ConfigError, match="keybord"):
        load_config(TINY, [*base, "normalize.keybord=false"])


def test_the_predictions_page_shows_hidden_characters_and_keeps_the_text():
    import html
    import re

    from kold_span.inference.html import render_prediction_html

    text = "너 바\u200b보 \u202e꺼져라\u202c \U0001F468\u200d\U0001F469"
    fragment = render_prediction_html(text, {"labels": {}, "spans": [{"type": "OFF", "start": 2, "end": 5,
                                                                      "score": 0.9}]})
    assert re.findall(r'data-name="([^"]+)"', fragment) == ["ZWSP", "RLO", "PDF"]  # the emoji's joiner is its own
    block = fragment.split('<div class="ks-text"', 1)[1].split(">", 1)[1].rsplit("</div></div>", 1)[0]
    assert html.unescape(re.sub(r"<[^>]+>", "", block)) == text  # badges are CSS: the text is the input
    signalled = render_prediction_html(text, {"labels": {}, "spans": [], "signals": {"invisible": 1, "bidi": 2}})
    assert ">invisible 1 · bidi 2</span>" in signalled and "ks-signals" not in fragment


def test_the_spacy_component_puts_the_spans_on_the_doc_as_written(tmp_path):
    import spacy

    import kold_span.integrations.spacy_component  # noqa: F401  (registers the factory)

    model = normalizing_model(tmp_path / "m")
    nlp = spacy.blank("xx")
    nlp.add_pipe("kold_span", config={"model": str(model)})
    doc = nlp(NFD_TEXT)
    prediction = doc._.kold_prediction
    assert prediction == without_signals(Predictor.from_pretrained(model).predict([NFD_TEXT])[0]) | \
        {"signals": {"nfc": 18}}
    assert [NFD_TEXT[s["start"]:s["end"]] for s in prediction["spans"]] == [s["text"] for s in prediction["spans"]]
    assert len(prediction["spans"]) == 3
    assert [span.text for span in doc.spans["sc"]] == [s["text"] for s in prediction["spans"]]
