"""The n-gram model fused into a sequence task: exact export, weight choice, training and the CLI."""
import json
from dataclasses import replace

import numpy as np
import pytest

from kold_span.cli import main
from kold_span.config.loading import load_config
from kold_span.data.example import Example
from kold_span.errors import ConfigError
from kold_span.inference.predictor import Predictor
from kold_span.models.ngram import Companion, NgramBaseline, NgramScorer, context_string
from kold_span.training.calibration import choose_companion, refit_companion

from conftest import FIXTURE, TINY

WORDS = ["idiot", "moron", "fool", "nice", "great", "kind", "day", "news", "again", "really"]


def examples(n, labeller, with_context=False):
    rng = np.random.default_rng(n)
    out = []
    for i in range(n):
        words = list(rng.choice(WORDS, size=4))
        context = f"title {rng.choice(['sports', 'politics'])}" if with_context else None
        out.append(Example(str(i), " ".join(words), context=context, labels=labeller(words, context)))
    return out


def rude(words, context):
    return {"off": any(w in ("idiot", "moron", "fool") for w in words),
            "tone": "rude" if "idiot" in words else ("kind" if "kind" in words else "flat"),
            "groups": [g for g, w in (("a", "idiot"), ("b", "nice")) if w in words]}


@pytest.mark.parametrize("label, problem, with_context", [
    ("off", "single", False),     # binary: one logit
    ("tone", "single", True),     # three classes: softmax, with context vectorizers
    ("groups", "multi", False),   # one-vs-rest sigmoids
])
def test_exported_ngram_scores_like_the_fitted_one_and_survives_saving(tmp_path, label, problem, with_context):
    train, test = examples(80, rude, with_context), examples(20, rude, with_context)
    model = NgramBaseline(label, problem, use_context=with_context).fit(train)
    expected = model.predict_proba(test)
    scorer = NgramScorer.from_baseline(model)
    contexts = [ex.context or "" for ex in test]
    texts = [ex.text for ex in test]
    got = scorer.predict_proba(texts, contexts)
    assert list(got[0]) == list(expected[0])
    assert np.allclose([list(p.values()) for p in got], [list(p.values()) for p in expected], atol=1e-12)
    scorer.save(tmp_path / "ngram" / "task", {"weight": 0.3})
    again, meta = NgramScorer.load(tmp_path / "ngram" / "task")
    assert meta["weight"] == 0.3
    assert np.allclose([list(p.values()) for p in again.predict_proba(texts, contexts)],
                       [list(p.values()) for p in expected], atol=1e-6)  # float32 weights on disk


@pytest.mark.filterwarnings("ignore:Label . is present in all training examples")
def test_single_training_label_in_multi_label_export_is_constant():
    train = examples(40, rude)
    for ex in train:
        ex.labels["groups"] = ["always"] + [g for g in ex.labels["groups"] if g == "a"]
    scorer = NgramScorer.from_baseline(NgramBaseline("groups", "multi").fit(train))
    probs = scorer.predict_proba(["nice day"], [""])[0]
    assert probs["always"] == 1.0


def test_fuse_array_is_the_weighted_mean_in_task_label_order():
    companion = Companion("OFF", 0.25, scorer=None)
    fused = companion.fuse_array(("false", "true"), np.array([0.8, 0.2], dtype=np.float32),
                                 {"true": 0.6, "false": 0.4, "unknown": 1.0})
    # false: 0.25 * 0.8 + 0.75 * 0.4 = 0.5; true: 0.25 * 0.2 + 0.75 * 0.6 = 0.5
    assert fused.dtype == np.float32
    assert np.allclose(fused, [0.5, 0.5])
    # A label the n-gram never saw counts as probability 0 for it.
    assert np.allclose(Companion("t", 0.5, None).fuse_array(("a", "b"), np.array([1.0, 0.0]), {"a": 1.0}),
                       [1.0, 0.0])


def test_a_wrong_encoder_hands_the_decision_to_the_ngram():
    train, dev = examples(120, rude), examples(40, rude)
    # The encoder is confidently wrong on every dev example.
    wrong = [{"true": 0.1, "false": 0.9} if ex.labels["off"] else {"true": 0.9, "false": 0.1} for ex in dev]
    companion = choose_companion("OFF", "off", "single", train, dev, wrong, "accuracy")
    assert companion.dev_scores[1.0] == 0.0  # the encoder alone
    assert companion.dev_score == max(companion.dev_scores.values()) >= 0.9
    assert companion.weight < 0.5
    assert not companion.use_context  # no contexts in training


def test_context_variant_is_chosen_when_only_the_context_tells_and_can_be_forbidden():
    def by_context(words, context):
        return {"off": context == "bad thread"}

    rng = np.random.default_rng(0)

    def rows(n, start):
        return [Example(str(start + i), "same words here", context=str(c),
                        labels=by_context(None, str(c)))
                for i, c in enumerate(rng.choice(["bad thread", "good thread"], size=n))]

    train, dev = rows(60, 0), rows(30, 100)
    flat = [{"true": 0.5, "false": 0.5}] * len(dev)
    companion = choose_companion("OFF", "off", "single", train, dev, flat, "accuracy")
    assert companion.use_context and companion.dev_score == 1.0
    text_only = choose_companion("OFF", "off", "single", train, dev, flat, "accuracy", allow_context=False)
    assert not text_only.use_context and text_only.dev_score < 1.0


def test_extra_ngram_data_is_taken_only_when_dev_prefers_it():
    # "moron" is offensive too, but the small training side never shows it; the extra examples do.
    def by_word(words, context):
        return {"off": "idiot" in words or "moron" in words}

    rng = np.random.default_rng(3)

    def rows(n, start, vocabulary):
        return [Example(str(start + i), " ".join(ws), labels=by_word(list(ws), None))
                for i, ws in enumerate(rng.choice(vocabulary, size=(n, 3)))]

    without = [w for w in WORDS if w != "moron"]
    train, dev = rows(40, 0, without), rows(40, 100, WORDS)
    useful = rows(200, 1000, WORDS)
    flat = [{"true": 0.5, "false": 0.5}] * len(dev)
    plain = choose_companion("OFF", "off", "single", train, dev, flat, "accuracy")
    assert plain.extra_examples == 0 and plain.dev_score < 0.9
    helped = choose_companion("OFF", "off", "single", train, dev, flat, "accuracy", extra=useful)
    assert helped.extra_examples == 200 and helped.dev_score == 1.0
    assert helped.summary()["extra_examples"] == 200
    assert helped.ngram_probs(["a moron again"], [""])[0]["true"] > 0.5

    # Extra examples labelled the opposite way would hurt on dev: they are not taken.
    flipped = [Example(ex.id, ex.text, labels={"off": not ex.labels["off"]}) for ex in useful]
    train_ok = rows(80, 2000, WORDS)
    kept = choose_companion("OFF", "off", "single", train_ok, dev, flat, "accuracy", extra=flipped)
    assert kept.extra_examples == 0 and kept.dev_score == 1.0
    # Unlabelled extra examples are ignored, not counted.
    unlabelled = [Example("u", "moron moron", labels={})]
    assert choose_companion("OFF", "off", "single", train, dev, flat, "accuracy",
                            extra=useful + unlabelled).extra_examples == 200


def test_choice_without_refit_keeps_the_train_only_ngram_and_refit_adds_the_given_examples():
    train, dev = examples(60, rude), examples(30, rude)
    flat = [{"true": 0.5, "false": 0.5}] * len(dev)
    probe = [ex.text for ex in dev[:5]] + ["idiot idiot news day"]

    def ngram_true(fitted_on):
        model = NgramBaseline("off", "single", use_context=False).fit(fitted_on)
        return [p["true"] for p in model.predict_proba([Example("p", t, labels={}) for t in probe])]

    train_only = choose_companion("OFF", "off", "single", train, dev, flat, "accuracy", refit=False)
    assert [p["true"] for p in train_only.ngram_probs(probe, [""] * len(probe))] == pytest.approx(
        ngram_true(train), abs=1e-5)
    refitted = choose_companion("OFF", "off", "single", train, dev, flat, "accuracy")
    assert [p["true"] for p in refitted.ngram_probs(probe, [""] * len(probe))] == pytest.approx(
        ngram_true(train + dev), abs=1e-5)
    assert ngram_true(train) != pytest.approx(ngram_true(train + dev), abs=1e-3)  # dev does change the n-gram
    again = refit_companion(train_only, train + dev)
    assert (again.weight, again.dev_score, again.dev_scores) == (refitted.weight, refitted.dev_score,
                                                                 refitted.dev_scores)
    assert [p["true"] for p in again.ngram_probs(probe, [""] * len(probe))] == pytest.approx(
        [p["true"] for p in refitted.ngram_probs(probe, [""] * len(probe))], abs=1e-7)


@pytest.mark.slow
def test_training_scores_dev_with_the_train_only_ngram_and_saves_the_train_plus_dev_one(tmp_path):
    """Refitted on train + dev before dev is scored, the n-gram would make the fused dev scores perfect."""
    from kold_span.corpora.experiment import load_splits
    from kold_span.training.evaluators import evaluate_predictor
    from kold_span.training.run import train

    config = load_config(TINY, [f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=leak",
                                "data.dev_fraction=0.4", "trainer.max_epochs=2", "trainer.threads=1",
                                "normalize.enabled=false",  # the n-gram below is fitted on the splits as read
                                "tasks=[{name: OFF, kind: sequence, source: OFF, fuse_ngram: true, temperature: 1, "
                                "fuse_metric: accuracy}]"])
    result = train(config, quiet=True)
    splits = load_splits(config)
    saved = Predictor.from_pretrained(result.model_dir)
    companion = saved.companions["OFF"]
    assert companion.weight < 1.0  # the n-gram has a say on dev, so which one scored dev shows
    texts = [ex.text for ex in splits["dev"]]
    contexts = [context_string(ex) for ex in splits["dev"]]

    def ngram_on(examples):
        return NgramScorer.from_baseline(NgramBaseline("OFF", "single", use_context=companion.use_context)
                                         .fit(examples))

    true = [p["true"] for p in companion.ngram_probs(texts, contexts)]
    assert true == pytest.approx([p["true"] for p in ngram_on(splits["train"] + splits["dev"])
                                  .predict_proba(texts, contexts)], abs=1e-5)
    saved.companions["OFF"] = replace(companion, scorer=ngram_on(splits["train"]))
    assert result.metrics["dev"] == pytest.approx(evaluate_predictor(saved, splits["dev"]))


def test_choose_companion_checks_its_inputs():
    train = examples(20, rude)
    with pytest.raises(ValueError, match="2 dev examples but 1 encoder outputs"):
        choose_companion("OFF", "off", "single", train, train[:2], [{"true": 1.0}])
    with pytest.raises(ValueError, match="needs labelled dev examples"):
        choose_companion("OFF", "off", "single", train, [], [])


@pytest.mark.parametrize("task, message", [
    ("{name: s, kind: span, source: OFF, fuse_ngram: true}", "fuse_ngram applies to single- or multi-label"),
    ("{name: c, source: OFF, fuse_ngram: true, fuse_metric: micro_f1}", "fuse_metric must be one of"),
    ("{name: c, source: OFF, fuse_ngram_train: [x.jsonl]}", r"fuse_ngram_train needs fuse_ngram: true"),
])
def test_fuse_ngram_config_errors(task, message):
    with pytest.raises(ConfigError, match=message):
        load_config(TINY, [f"tasks=[{task}]", "data.dev_fraction=0.2"])


def test_fuse_ngram_without_a_dev_split_is_a_config_error():
    with pytest.raises(ConfigError, match=r"tasks\[0\]\.fuse_ngram needs a dev split"):
        load_config(TINY, ["tasks=[{name: OFF, source: OFF, fuse_ngram: true}]"])


@pytest.mark.slow
def test_train_cli_with_fuse_ngram_saves_reloads_and_predicts(tmp_path):
    args = ["train", str(TINY), "--set", f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=fused",
            "data.dev_fraction=0.3", "trainer.max_epochs=3", "trainer.threads=1",
            "tasks=[{name: OFF, kind: sequence, source: OFF, fuse_ngram: true, fuse_metric: accuracy, temperature: 1, "
            "confidence_map: none}, "
            "{name: OFF_span, kind: span, source: OFF, gate: OFF}]"]
    assert main(args) == 0
    run = tmp_path / "tiny" / "fused"
    metrics = json.loads((run / "metrics.json").read_text())
    fusion = metrics["ngram_fusion"]["OFF"]
    assert 0.0 <= fusion["weight"] <= 1.0 and set(fusion["dev_scores"]) >= {"0.0", "1.0"}
    assert (run / "model" / "ngram" / "OFF.json").exists()
    assert (run / "model" / "ngram" / "OFF.safetensors").exists()

    predictor = Predictor.from_pretrained(run / "model")
    assert predictor.companions["OFF"].weight == fusion["weight"]
    texts = ["이 쓰레기 같은 정치인들", "좋은 기사 감사합니다"]
    fused = predictor.predict(texts, ["제목", "제목"])
    alone = Predictor.from_pretrained(run / "model")
    alone.companions = {}
    encoder = alone.predict(texts, ["제목", "제목"])
    ngram = predictor.companions["OFF"].ngram_probs(texts, ["제목", "제목"])
    w = fusion["weight"]
    for f, e, n in zip(fused, encoder, ngram):
        expected = w * e["labels"]["OFF"]["probs"]["true"] + (1 - w) * n["true"]
        assert f["labels"]["OFF"]["probs"]["true"] == pytest.approx(expected, abs=3e-6)

    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["predict", "--model", str(run / "model"), "--input", str(tmp_path / "in.txt"),
                 "--output", str(out), "--quiet"]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["labels"]["OFF"]["probs"]["true"] for r in rows] == pytest.approx(
        [r["labels"]["OFF"]["probs"]["true"] for r in predictor.predict(texts)], abs=3e-6)


@pytest.mark.slow
def test_train_cli_offers_extra_ngram_data_without_dev_or_test_texts(tmp_path):
    # The extra file is the training file itself: its dev and test texts must be left out.
    args = ["train", str(TINY), "--set", f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=extra",
            "data.dev_fraction=0.3", "data.test_fraction=0.2", "trainer.max_epochs=1", "trainer.threads=1",
            f"tasks=[{{name: OFF, kind: sequence, source: OFF, fuse_ngram: true, fuse_ngram_train: [{FIXTURE}]}}]"]
    assert main(args) == 0
    metrics = json.loads((tmp_path / "tiny" / "extra" / "metrics.json").read_text())
    fusion, sizes = metrics["ngram_fusion"]["OFF"], metrics["sizes"]
    assert fusion["extra_offered"] == sizes["train"]
    assert fusion["extra_left_out"] == sizes["dev"] + sizes["test"]
    assert fusion["extra_examples"] in (0, sizes["train"])
    saved = json.loads((tmp_path / "tiny" / "extra" / "model" / "ngram" / "OFF.json").read_text())
    assert saved["extra_examples"] == fusion["extra_examples"]


def test_missing_extra_ngram_file_fails_before_training(tmp_path, capsys):
    missing = tmp_path / "nowhere.json"
    args = ["train", str(TINY), "--set", f"output_dir={tmp_path}", f"data.train={FIXTURE}", "run=missing",
            "data.dev_fraction=0.3", "trainer.max_epochs=1", "trainer.threads=1",
            f"tasks=[{{name: OFF, kind: sequence, source: OFF, fuse_ngram: true, fuse_ngram_train: [{missing}]}}]"]
    assert main(args) == 2
    assert "nowhere.json" in capsys.readouterr().err
    assert not (tmp_path / "tiny" / "missing" / "checkpoints").exists()
