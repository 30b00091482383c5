"""The spaCy component `kold_span` and the Kiwi tokenizer `kold_span.KiwiTokenizer.v1`.

Most tests use a model with random weights built in seconds (training one takes minutes of a shared
CPU): the component must give what `Predictor.predict` gives, whatever the weights, and a random model
predicts spans everywhere, many of them starting or ending inside an eojeol. The last test runs the
demo model when `make demo` has trained it.
"""
from __future__ import annotations

import configparser
import importlib
import importlib.metadata
import re
import shutil
from pathlib import Path

import pytest
import spacy
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from spacy import displacy

from kold_span import corpora
from kold_span.config.schema import ScratchEncoderConfig
from kold_span.errors import ArgumentError
from kold_span.inference.predictor import Predictor, PredictorSettings
from kold_span.integrations.kiwi_tokenizer import create_kiwi_tokenizer, morpheme_words
from kold_span.integrations.spacy_component import cats_of, make_kold_span, span_groups, span_keys_for
from kold_span.models.backbones import scratch_encoder, train_tokenizer
from kold_span.models.network import MultiTaskModel
from kold_span.models.tasks import Task
from kold_span.text.align import eojeol_offsets

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests/fixtures/kold_small.json"
DEMO_MODEL = ROOT / "checkpoints/demo/demo/model"
KIWI = {"nlp": {"tokenizer": {"@tokenizers": "kold_span.KiwiTokenizer.v1"}}}
TASKS = [Task("OFF", "sequence", "OFF", labels=("false", "true")),
         Task("GRP", "sequence", "GRP", problem="multi", labels=("gender", "politics", "race")),
         Task("OFF_span", "span", "OFF"), Task("TGT_span", "span", "TGT")]


@pytest.fixture(scope="module")
def examples():
    return corpora.read("kold", FIXTURE)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, examples):
    """A saved model with random weights: two sequence tasks (one multi-label), two span types,
    titles as context, spans snapped to morphemes, Kiwi pre-tokens."""
    scratch = ScratchEncoderConfig(vocab_size=400, hidden_size=32, layers=1, heads=2, intermediate_size=64,
                                   max_position=128, morpheme_pretokenize=True)
    tokenizer = train_tokenizer([e.text for e in examples] + [e.context for e in examples if e.context], scratch)
    torch.manual_seed(0)
    model = MultiTaskModel(scratch_encoder(scratch, len(tokenizer), tokenizer.pad_token_id), TASKS)
    settings = PredictorSettings(max_length=64, stride=16, context_mode="title", snap="morpheme")
    predictor = Predictor(model, tokenizer, TASKS, settings)
    return predictor.save_pretrained(tmp_path_factory.mktemp("model") / "model")


def pipeline(model, tokenizer: str = "kiwi", **config):
    nlp = spacy.blank("xx", config=KIWI if tokenizer == "kiwi" else {})
    nlp.add_pipe("kold_span", config={"model": str(model), **config})
    return nlp


def token_spans(doc):
    """{key: [(label, start, end, score)]} of every span group."""
    return {key: [(s.label_, s.start_char, s.end_char, score) for s, score in zip(group, group.attrs["scores"])]
            for key, group in doc.spans.items()}


def expected_spans(prediction, keys):
    found = {key: [] for key in keys.values()}
    for s in prediction["spans"]:
        found[keys[s["type"]]].append((s["type"], s["start"], s["end"], s["score"]))
    return found


# -- the Kiwi tokenizer ---------------------------------------------------------------------------

def test_kiwi_tokens_are_morphemes_with_exact_offsets():
    nlp = spacy.blank("xx", config=KIWI)
    doc = nlp("ㅋㅋ  진짜\n역겹다!! 저 놈들이다")
    assert [(t.text, t.idx, t.whitespace_, t.tag_) for t in doc] == [
        ("ㅋㅋ", 0, "", "SW"), ("  ", 2, "", "_SP"), ("진짜", 4, "", "MAG"), ("\n", 6, "", "_SP"),
        ("역겹", 7, "", "VA-I"), ("다", 9, "", "EF"), ("!!", 10, " ", "SF"),
        ("저", 13, " ", "MM"), ("놈", 15, "", "NNB"), ("들", 16, "", "XSN"), ("이", 17, "", "VCP"), ("다", 18, "", "EF")]


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("가나다놈들이는을했봤해서 \n\t!?ab1ㅋ")), max_size=30))
def test_kiwi_tokens_cover_the_text_and_cut_at_every_morpheme(text):
    from kold_span.text.morphemes import morpheme_offsets

    words, spaces, tags = morpheme_words(text)
    assert "".join(w + (" " if s else "") for w, s in zip(words, spaces)) == text
    assert all(words) and len(tags) == len(words)
    doc = spacy.blank("xx", config=KIWI)(text)
    assert doc.text == text
    for start, end in morpheme_offsets(text):
        if start < end:  # Kiwi restores an elided copula as an empty morpheme ("1 는": 이 at (2, 2))
            assert doc.char_span(start, end) is not None, (text, start, end)


def test_a_korean_pipeline_with_the_kiwi_tokenizer_needs_no_mecab():
    nlp = spacy.blank("ko", config=KIWI)
    assert [t.text for t in nlp("저 놈들이다")] == ["저", "놈", "들", "이", "다"]


# -- aligning given character spans ---------------------------------------------------------------

def test_a_span_inside_an_eojeol_aligns_strictly_on_kiwi_tokens_only():
    text = "저 놈들이다"
    nom = [{"type": "OFF", "start": 2, "end": 3, "score": 0.8}]  # 놈, inside the eojeol 놈들이다
    keys = {"OFF": "sc"}
    kiwi_doc = spacy.blank("xx", config=KIWI)(text)
    words_doc = spacy.blank("xx")(text)
    assert [(s.text, s.start, s.end) for s in span_groups(kiwi_doc, nom, keys, "strict")["sc"]] == [("놈", 1, 2)]
    assert list(span_groups(words_doc, nom, keys, "strict")["sc"]) == []
    assert list(span_groups(words_doc, nom, keys, "contract")["sc"]) == []
    expanded = span_groups(words_doc, nom, keys, "expand")["sc"]
    assert [s.text for s in expanded] == ["놈들이다"] and expanded.attrs["scores"] == [0.8]


def test_span_groups_put_each_type_under_its_key_with_scores_in_order():
    doc = spacy.blank("xx", config=KIWI)("그 의원은 구제불능이다")
    spans = [{"type": "TGT", "start": 0, "end": 4, "score": 0.7}, {"type": "OFF", "start": 6, "end": 8, "score": 0.9},
             {"type": "OFF", "start": 8, "end": 10, "score": 0.6}]
    groups = span_groups(doc, spans, {"OFF": "sc", "TGT": "targets", "RACE": "race"})
    assert {k: [(s.text, s.label_) for s in g] for k, g in groups.items()} == {
        "sc": [("구제", "OFF"), ("불능", "OFF")], "targets": [("그 의원", "TGT")], "race": []}
    assert groups["sc"].attrs["scores"] == [0.9, 0.6] and groups["targets"].attrs["scores"] == [0.7]


def test_span_keys_default_to_sc_for_the_first_span_task_and_refuse_unknown_types():
    assert span_keys_for(TASKS, {}) == {"OFF": "sc", "TGT": "TGT"}
    assert span_keys_for(TASKS, {"OFF": "off", "TGT": "sc"}) == {"OFF": "off", "TGT": "sc"}
    with pytest.raises(ArgumentError, match=r"\['GRP'\].*span types are \['OFF', 'TGT'\]"):
        span_keys_for(TASKS, {"GRP": "groups"})


def test_cats_name_task_and_label_and_keep_multi_label_scores_independent():
    labels = {"OFF": {"label": True, "probs": {"false": 0.25, "true": 0.75}},
              "GRP": {"label": ["race"], "probs": {"gender": 0.1, "race": 0.8}}}
    assert cats_of(labels) == {"OFF/false": 0.25, "OFF/true": 0.75, "GRP/gender": 0.1, "GRP/race": 0.8}


@pytest.mark.parametrize("config, message", [({"alignment_mode": "loose"}, "alignment_mode must be one of"),
                                             ({"batch_size": 0}, "batch_size must be a whole number")])
def test_bad_component_settings_are_errors(config, message):
    with pytest.raises(ArgumentError, match=message):
        pipeline("unused", **config)


# -- the component with a model -------------------------------------------------------------------

def test_cats_and_spans_equal_predictor_predict(model_dir, examples):
    texts, contexts = [e.text for e in examples], [e.context for e in examples]
    expected = Predictor.from_pretrained(model_dir).predict(texts, contexts, batch_size=8)
    nlp = pipeline(model_dir, alignment_mode="strict", batch_size=8)
    docs = [doc for doc, _ in nlp.pipe([(t, {"context": c}) for t, c in zip(texts, contexts)], as_tuples=True)]
    keys = {"OFF": "sc", "TGT": "TGT"}
    assert sum(len(p["spans"]) for p in expected) > 20  # the random model marks spans of both types
    for doc, context, prediction in zip(docs, contexts, expected, strict=True):
        assert doc._.kold_prediction == prediction
        assert doc._.kold_context == context
        assert doc.cats == cats_of(prediction["labels"])
        assert token_spans(doc) == expected_spans(prediction, keys)  # every span, on Kiwi tokens, strictly
    assert any(abs(sum(v for k, v in doc.cats.items() if k.startswith("GRP/")) - 1) > 0.01 for doc in docs)


def test_model_spans_inside_an_eojeol_become_spans_with_kiwi_tokens_not_with_words(model_dir, examples):
    texts = [e.text for e in examples]
    predictions = Predictor.from_pretrained(model_dir).predict(texts)
    inside = [(i, s) for i, (text, p) in enumerate(zip(texts, predictions)) for s in p["spans"]
              if s["start"] not in {a for a, _ in eojeol_offsets(text)} or s["end"] not in {b for _, b in eojeol_offsets(text)}]
    assert inside, "the model predicts no span starting or ending inside an eojeol"
    kiwi_docs = list(pipeline(model_dir, alignment_mode="strict").pipe(texts))
    word_docs = list(pipeline(model_dir, tokenizer="words", alignment_mode="strict").pipe(texts))
    for i, span in inside:
        found = [(s.label_, s.start_char, s.end_char) for group in kiwi_docs[i].spans.values() for s in group]
        assert (span["type"], span["start"], span["end"]) in found
        lost = [(s.label_, s.start_char, s.end_char) for group in word_docs[i].spans.values() for s in group]
        assert (span["type"], span["start"], span["end"]) not in lost
        assert span in word_docs[i]._.kold_prediction["spans"]  # kept with its exact offsets


def test_context_from_as_tuples_or_the_extension(model_dir, examples):
    titled = [e for e in examples if e.context][:6]
    texts, titles = [e.text for e in titled], [e.context for e in titled]
    predictor = Predictor.from_pretrained(model_dir)
    with_titles, without = predictor.predict(texts, titles), predictor.predict(texts)
    assert with_titles != without  # the model reads the title
    nlp = pipeline(model_dir)
    by_tuples = nlp.pipe([(t, {"context": c, "id": i}) for i, (t, c) in enumerate(zip(texts, titles))],
                         as_tuples=True)
    assert [(doc._.kold_prediction, meta["id"]) for doc, meta in by_tuples] == list(zip(with_titles, range(6)))
    docs = [nlp.make_doc(t) for t in texts]
    for doc, title in zip(docs, titles):
        doc._.kold_context = title
    assert [doc._.kold_prediction for doc in nlp.pipe(docs)] == with_titles
    assert [doc._.kold_prediction for doc in nlp.pipe(texts)] == without
    assert [nlp(t)._.kold_prediction for t in texts[:2]] == predictor.predict(texts[:1]) + predictor.predict(texts[1:2])


def test_a_context_that_is_not_text_is_an_error(model_dir):
    nlp = pipeline(model_dir)
    with pytest.raises(ArgumentError, match=r"context's 'context' of the doc '그 의원' must be a string"):
        list(nlp.pipe([("그 의원", {"context": 3})], as_tuples=True))


def test_to_disk_holds_the_model_and_spacy_load_predicts_the_same(model_dir, examples, tmp_path):
    own = tmp_path / "own_model"
    shutil.copytree(model_dir, own)
    texts = [e.text for e in examples]
    nlp = pipeline(own, span_keys={"TGT": "targets"}, alignment_mode="strict")
    before = list(nlp.pipe(texts))
    nlp.to_disk(tmp_path / "pipeline")
    shutil.rmtree(own)  # the loaded pipeline must not need the directory its config names
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.pipe_names == ["kold_span"]
    assert (tmp_path / "pipeline/kold_span/model/model.safetensors").exists()
    after = list(loaded.pipe(texts))
    assert [d.text for d in after] == texts
    assert [[t.text for t in d] for d in after] == [[t.text for t in d] for d in before]  # Kiwi tokens again
    assert [d._.kold_prediction for d in after] == [d._.kold_prediction for d in before]
    assert [token_spans(d) for d in after] == [token_spans(d) for d in before]
    assert "targets" in after[0].spans


def test_a_directory_that_is_no_model_gives_the_predictor_error(tmp_path):
    with pytest.raises(Exception) as direct:
        Predictor.from_pretrained(tmp_path)
    nlp = pipeline(tmp_path)
    with pytest.raises(Exception) as via_spacy:
        nlp("그 의원")
    assert type(via_spacy.value) is type(direct.value) and str(via_spacy.value) == str(direct.value)
    assert str(tmp_path) in str(direct.value)


def test_displacy_draws_the_predicted_spans(model_dir, examples):
    doc = pipeline(model_dir, alignment_mode="strict")(examples[1].text)
    html = displacy.render(doc, style="span")
    assert len(doc.spans["sc"]) > 0
    assert len(re.findall(r">\s*OFF\s*</span>", html)) == len(doc.spans["sc"])


# -- registration ---------------------------------------------------------------------------------

def setup_cfg_entry_points() -> dict[str, dict[str, str]]:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg", encoding="utf-8")
    groups = {}
    for group, lines in parser["options.entry_points"].items():
        pairs = (line.split("=", 1) for line in lines.strip().splitlines())
        groups[group] = {name.strip(): target.strip() for name, target in pairs}
    return groups


def resolve(target: str):
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def test_setup_cfg_entry_points_name_the_registered_factory_and_tokenizer():
    groups = setup_cfg_entry_points()
    assert resolve(groups["spacy_factories"]["kold_span"]) is make_kold_span
    assert spacy.registry.factories.get("kold_span") is make_kold_span
    assert resolve(groups["spacy_tokenizers"]["kold_span.KiwiTokenizer.v1"]) is create_kiwi_tokenizer
    assert spacy.registry.tokenizers.get("kold_span.KiwiTokenizer.v1") is create_kiwi_tokenizer


def test_the_installed_package_declares_the_entry_points():
    # Entry points are read from the installed metadata: this fails until the package is reinstalled.
    declared = setup_cfg_entry_points()
    for group in ("spacy_factories", "spacy_tokenizers"):
        installed = {ep.name: ep.value for ep in importlib.metadata.entry_points(group=group)
                     if ep.value.startswith("kold_span.")}
        assert installed == declared[group], f"reinstall the package (pip install -e .): {group}"


@pytest.mark.skipif(not (DEMO_MODEL / "config.json").exists(), reason="`make demo` has not trained the demo model")
def test_the_demo_model_in_spacy_equals_predict():
    texts = [line.strip() for line in (ROOT / "data/sample/comments.txt").read_text(encoding="utf-8").splitlines()
             if line.strip()]
    titles = ["국회 본회의 통과"] * len(texts)
    expected = Predictor.from_pretrained(DEMO_MODEL).predict(texts, titles)
    nlp = pipeline(DEMO_MODEL, alignment_mode="strict")
    docs = [doc for doc, _ in nlp.pipe([(t, {"context": c}) for t, c in zip(texts, titles)], as_tuples=True)]
    keys = span_keys_for(nlp.get_pipe("kold_span").predictor.tasks, {})
    for doc, prediction in zip(docs, expected, strict=True):
        assert doc.cats == cats_of(prediction["labels"])
        assert token_spans(doc) == expected_spans(prediction, keys)
    assert any(doc.spans["sc"] for doc in docs)
