"""Perspectivist data: per-annotator expansion, trait verbalisation, soft labels, conditioned predict."""
import dataclasses
import json

import pytest

from kold_span.cli import main
from kold_span.config.loading import load_config
from kold_span.data.example import Annotation, Example
from kold_span.data.jsonl import write_jsonl
from kold_span.data.perspectives import expand_by_annotator, parse_perspective, verbalise, with_perspective
from kold_span.errors import ArgumentError
from kold_span.inference.predictor import Predictor
from kold_span.models.kinds.problems import soft_distribution
from kold_span.training.run import train

from conftest import TINY


def test_verbalise_chosen_traits_only():
    traits = {"gender": "Female", "age": 23, "nationality": "Ireland"}
    assert verbalise(traits, ["gender", "age"]) == "annotator: gender female, generation Z"
    assert verbalise(traits, ["age"]) == "annotator: generation Z"
    assert verbalise({"age": 50}, ["age"]) == "annotator: generation X"
    assert verbalise(traits, []) is None
    assert verbalise({"gender": None}, ["gender"]) is None


def test_perspective_goes_after_the_context():
    assert with_perspective("a title", "annotator: x") == ["a title", "annotator: x"]
    assert with_perspective(["A: hi", "B: yo"], "annotator: x") == ["A: hi", "B: yo", "annotator: x"]
    assert with_perspective(None, None) is None


def test_expand_one_example_per_annotator():
    item = Example(id="7", text="reply", context="post", labels={"irony": True},
                   annotations=[Annotation("a", {"irony": True}, traits={"gender": "Male"}),
                                Annotation("b", {"irony": False}, traits={"gender": "Female"}),
                                Annotation("c", {}, traits={"gender": "Female"})])
    out = expand_by_annotator([item], "irony", ["gender"])
    assert [e.id for e in out] == ["7#a", "7#b"]
    assert [e.labels["irony"] for e in out] == [True, False]
    assert out[1].context == ["post", "annotator: gender female"]
    assert out[1].meta["traits"] == {"gender": "Female"}


def test_parse_perspective():
    assert parse_perspective("gender=Female, age=23") == {"gender": "Female", "age": "23"}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_perspective("female")


def test_soft_distribution_from_votes_or_stored_label():
    votes = Example(id="1", text="t", annotations=[Annotation(str(i), {"OFF": v}) for i, v in
                                                   enumerate([True, True, False])])
    assert soft_distribution(votes, "OFF") == {"true": 2 / 3, "false": 1 / 3}
    stored = Example(id="2", text="t", labels={"irony_soft": {"0": 0.25, "1": 0.75}})
    assert soft_distribution(stored, "irony") == {"0": 0.25, "1": 0.75}


def toy_items(n=24):
    """Women call replies with 'great' ironic, men never do."""
    items = []
    for i in range(n):
        text = f"{'great' if i % 2 else 'fine'} service number {i}"
        anns = [Annotation(f"w{j}", {"irony": i % 2 == 1}, traits={"gender": "Female", "age": 25}) for j in range(2)]
        anns += [Annotation(f"m{j}", {"irony": False}, traits={"gender": "Male", "age": 50}) for j in range(2)]
        items.append(Example(id=str(i), text=text, context="the train was late", annotations=anns,
                             labels={"irony": i % 2 == 1}))
    return items


@pytest.fixture(scope="module")
def toy_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("toy") / "toy.jsonl"
    write_jsonl(toy_items(), path)
    return path


@pytest.mark.slow
def test_annotator_conditioned_training_and_predict(toy_file, tmp_path):
    config = load_config(TINY, [f"output_dir={tmp_path}", "run=p", "data.reader=jsonl", f"data.train={toy_file}",
                                "data.test_fraction=0.25", "data.stratify=irony", "model.encoder.scratch.morpheme_pretokenize=false",
                                "tasks=[{name: irony, kind: sequence, source: irony}]",
                                "data.perspective={label: irony, traits: [gender]}", "trainer.max_epochs=30"])
    result = train(config, quiet=True)
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    assert metrics["sizes"]["test"] == 6 * 4  # 6 held-out items × 4 annotators
    assert set(metrics["test_by_trait"]["gender"]) == {"gender female", "gender male"}
    predictor = Predictor.from_pretrained(result.model_dir)
    assert predictor.settings.perspective == {"label": "irony", "traits": ["gender"]}
    # The context the training replies had: without it the input is unlike anything trained on,
    # and the probability there is arbitrary (with the tokenizer trained reproducibly, this toy
    # model gave 0.0002 for both genders on the bare text, and 0.9996 against 0.0002 with it).
    inputs = tmp_path / "in.jsonl"
    inputs.write_text(json.dumps({"text": "great service number 99", "context": "the train was late"}) + "\n",
                      encoding="utf-8")
    for who in ("gender=Female", "gender=Male"):
        out = tmp_path / f"{who}.jsonl"
        assert main(["predict", "--model", str(result.model_dir), "--input", str(inputs), "--output", str(out),
                     "--perspective", who, "--quiet"]) == 0
    woman = json.loads((tmp_path / "gender=Female.jsonl").read_text())["labels"]["irony"]["probs"]["true"]
    man = json.loads((tmp_path / "gender=Male.jsonl").read_text())["labels"]["irony"]["probs"]["true"]
    assert woman > 0.5 > man
    # A trait the model does not read would be dropped without a word: it is an error instead.
    assert main(["predict", "--model", str(result.model_dir), "--input", str(inputs), "--output",
                 str(tmp_path / "x.jsonl"), "--perspective", "Gender=Female", "--quiet"]) == 2
    with pytest.raises(ArgumentError, match=r"unknown trait\(s\) Gender; this model reads gender"):
        predictor.predict(["x"], perspective={"Gender": "Female"})
    with pytest.raises(ArgumentError, match=r"for one text pass \[text\]"):
        predictor.predict("great service")


@pytest.mark.slow
def test_soft_label_task_reports_distribution_scores(toy_file, tmp_path):
    config = load_config(TINY, [f"output_dir={tmp_path}", "run=s", "data.reader=jsonl", f"data.train={toy_file}",
                                "data.test_fraction=0.25", "model.encoder.scratch.morpheme_pretokenize=false",
                                "tasks=[{name: irony, kind: sequence, source: irony, problem: soft}]",
                                "trainer.max_epochs=3"])
    result = train(config, quiet=True)
    test = json.loads((result.run_dir / "metrics.json").read_text())["test"]
    assert {"irony/cross_entropy", "irony/manhattan", "irony/macro_f1"} <= set(test)
    assert 0 <= test["irony/manhattan"] <= 2


def test_extra_ngram_data_is_expanded_by_annotator_like_the_splits(toy_file, tmp_path):
    from kold_span.corpora.experiment import load_splits
    from kold_span.training.calibration import ngram_extra

    extra = tmp_path / "extra.jsonl"
    config = load_config(TINY, ["data.reader=jsonl", f"data.train={toy_file}", "data.test_fraction=0.25",
                                "data.dev_fraction=0.25", "data.perspective={label: irony, traits: [gender]}",
                                f"tasks=[{{name: irony, kind: sequence, source: irony, fuse_ngram: true, "
                                f"fuse_ngram_train: [{extra}]}}]"])
    splits = load_splits(config)
    dev_texts = {ex.text for ex in splits["dev"]}
    new = [dataclasses.replace(ex, id=f"x{ex.id}", text=f"more {ex.text}") for ex in toy_items(6)]
    write_jsonl(new + [ex for ex in toy_items() if ex.text in dev_texts][:2], extra)  # two dev texts
    kept, left_out = ngram_extra(config, splits)["irony"]
    assert left_out == 2
    assert len(kept) == 6 * 4  # one example per annotator
    assert {ex.context[-1] for ex in kept} == {"annotator: gender female", "annotator: gender male"}
