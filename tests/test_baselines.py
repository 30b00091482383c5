"""Baselines: hand-checked predictions on tiny invented examples."""
import pytest

from kold_span.data.example import Example
from kold_span.errors import ArgumentError
from kold_span.evaluation.baselines import (HybridScorer, LexiconSpanTagger, MajorityBaseline, label_scores,
                                            run_baselines, word_spans)
from kold_span.models.ngram import NgramBaseline

approx = pytest.approx


def labelled(values, key="y", **kwargs):
    """One example per label value, ids in order."""
    return [Example(str(i), f"text {i}", labels={key: v}, **kwargs) for i, v in enumerate(values)]


# --------------------------------------------------------------------------- majority


def test_majority_single_picks_most_frequent_and_ignores_missing():
    train = labelled(["b", "a", "b", "c", None, None, None])
    assert MajorityBaseline("y").fit(train).predict(labelled([None, None])) == ["b", "b"]


def test_majority_tie_takes_smallest_label_and_booleans_become_strings():
    assert MajorityBaseline("y").fit(labelled(["b", "a"])).predict(labelled([None])) == ["a"]
    assert MajorityBaseline("y").fit(labelled([False, True, True])).predict(labelled([None])) == ["true"]


def test_majority_multi_keeps_labels_in_more_than_half():
    # x: 3/4, y: 2/4 (not more than half), z: 1/4
    train = labelled([["x", "y"], ["x"], ["y", "z"], ["x"]])
    model = MajorityBaseline("y").fit(train)
    assert model.problem == "multi"
    assert model.predict(labelled([None, None])) == [["x"], ["x"]]


def test_majority_without_labels_names_the_key():
    with pytest.raises(ValueError, match="no example has a label 'off'"):
        MajorityBaseline("off").fit(labelled(["a"]))


# --------------------------------------------------------------------------- n-grams

OFFENSIVE = ["you stupid idiot", "what an idiot", "stupid moron", "shut up moron", "idiot stupid fool"]
FRIENDLY = ["have a lovely day", "thanks so much", "lovely kind words", "thanks friend", "kind and lovely"]


def toy_binary():
    texts = OFFENSIVE + FRIENDLY
    return [Example(str(i), t, labels={"off": i < len(OFFENSIVE)}) for i, t in enumerate(texts)]


def test_ngram_learns_separable_binary_problem():
    train = toy_binary()
    model = NgramBaseline("off").fit(train)
    assert model.labels_ == ("false", "true")
    assert model.predict(train) == ["true"] * 5 + ["false"] * 5
    probs = model.predict_proba(train)
    assert set(probs[0]) == {"false", "true"}
    assert sum(probs[0].values()) == approx(1.0)
    assert probs[0]["true"] > 0.5 > probs[-1]["true"]


@pytest.mark.parametrize("analyzers", [("char_wb",), ("word",)])
def test_ngram_single_analyzer_three_classes(analyzers):
    texts = {"sport": ["football match goal", "goal in the match", "football league"],
             "food": ["pasta and pizza", "pizza dinner", "fresh pasta dinner"],
             "weather": ["rain and wind", "wind storm", "rain storm today"]}
    train = [Example(f"{c}{i}", t, labels={"topic": c}) for c, ts in texts.items() for i, t in enumerate(ts)]
    model = NgramBaseline("topic", analyzers=analyzers).fit(train)
    assert model.predict(train) == [ex.labels["topic"] for ex in train]


def test_ngram_multi_label_with_one_vs_rest():
    rows = [("idiot women", ["insult", "women"]), ("stupid idiot", ["insult"]), ("the women", ["women"]),
            ("nice weather", []), ("women are idiot", ["insult", "women"]), ("idiot", ["insult"]),
            ("women only", ["women"]), ("a fine day", [])]
    train = [Example(str(i), t, labels={"groups": g}) for i, (t, g) in enumerate(rows)]
    model = NgramBaseline("groups", problem="multi", C=20.0).fit(train)
    assert model.labels_ == ("insult", "women")
    assert model.predict(train) == [sorted(g) for _, g in rows]


def test_context_features_carry_the_signal_the_text_lacks():
    # The reply is the same everywhere: only the context tells the labels apart.
    contexts = [["you are an idiot"], "what a stupid idiot", ["idiot", "stupid"], "stupid moron",
                ["what a lovely day"], "thanks so much", ["lovely", "thanks"], "kind words"]
    train = [Example(str(i), "ok then", context=c, labels={"sarcasm": i < 4}) for i, c in enumerate(contexts)]
    gold = ["true"] * 4 + ["false"] * 4
    without = NgramBaseline("sarcasm").fit(train).predict(train)
    with_context = NgramBaseline("sarcasm", use_context=True).fit(train).predict(train)
    assert len(set(without)) == 1  # identical texts get identical predictions
    assert with_context == gold


def test_use_context_without_any_context_is_an_error():
    with pytest.raises(ValueError, match="none of the 10 training examples has a context"):
        NgramBaseline("off", use_context=True).fit(toy_binary())


def test_ngram_rejects_a_single_class_and_unknown_analyzer():
    with pytest.raises(ValueError, match="single value 'true'"):
        NgramBaseline("off").fit(toy_binary()[:5])
    with pytest.raises(ValueError, match="analyzers"):
        NgramBaseline("off", analyzers=("char",))


# --------------------------------------------------------------------------- lexicon


def test_word_spans_strip_punctuation_and_lowercase():
    assert word_spans('"Idiot!!" ... go-away') == [("idiot", (1, 6)), ("go-away", (14, 21))]


def test_lexicon_marks_every_occurrence_with_exact_offsets():
    train = [Example("1", "You idiot, go away.", spans={"OFF": [(4, 9)]}),
             Example("2", "Go to hell!", spans={"OFF": [(6, 10)]})]
    tagger = LexiconSpanTagger().fit(train)
    assert tagger.lexicon_ == {"hell": 1.0, "idiot": 1.0}
    #         0123456789012345678901234
    test = [Example("a", "IDIOT!! you are an idiot."),
            Example("b", "(hell) and heller"),
            Example("c", "nothing here")]
    assert tagger.predict(test) == [[(0, 5), (19, 24)], [(1, 5)], []]


def test_lexicon_respects_min_precision_and_min_count():
    # "idiot": inside 1 of 3 occurrences (precision 1/3); "dumb": inside 2 of 2.
    train = [Example("1", "idiot dumb", spans={"OFF": [(0, 10)]}),
             Example("2", "Idiot is a word", spans={}),
             Example("3", "the idiot. dumb", spans={"OFF": [(11, 15)]})]
    assert LexiconSpanTagger().fit(train).lexicon_ == {"dumb": 1.0}
    assert LexiconSpanTagger(min_precision=0.3).fit(train).lexicon_ == {"dumb": 1.0, "idiot": approx(1 / 3)}
    assert LexiconSpanTagger(min_count=2, min_precision=0.0).fit(train).lexicon_ == {"dumb": 1.0}


def test_lexicon_counts_a_partly_covered_word_as_inside():
    train = [Example("1", "so stupidly", spans={"OFF": [(3, 9)]})]  # "stupid" of "stupidly"
    assert LexiconSpanTagger().fit(train).lexicon_ == {"stupidly": 1.0}


# --------------------------------------------------------------------------- hybrid


def test_fuse_interpolates_and_fills_missing_labels_with_zero():
    fused = HybridScorer.fuse([{"a": 0.8, "b": 0.2}, {"a": 1.0}], [{"a": 0.2, "b": 0.8}, {"c": 1.0}], 0.75)
    assert fused[0] == {"a": approx(0.65), "b": approx(0.35)}
    assert fused[1] == {"a": approx(0.75), "c": approx(0.25)}


def test_fuse_rejects_bad_weight_and_misaligned_inputs():
    with pytest.raises(ValueError, match="weight"):
        HybridScorer.fuse([{}], [{}], 1.5)
    with pytest.raises(ValueError, match="differ in length"):
        HybridScorer.fuse([{}], [], 0.5)


def test_choose_weight_picks_the_better_model_at_the_ends():
    good = [{"true": 0.9, "false": 0.1}, {"true": 0.2, "false": 0.8}]
    bad = [{"true": 0.1, "false": 0.9}, {"true": 0.7, "false": 0.3}]
    gold = [True, False]
    # A right when weight > 0.5 (example 1: 0.1 + 0.8w > 0.5; example 2: 0.7 - 0.5w < 0.5 → w > 0.4)
    scorer = HybridScorer()
    assert scorer.choose_weight(good, bad, gold, "accuracy") == 0.6
    assert scorer.weight == 0.6
    assert scorer.dev_scores_[0.5] == 0.5 and scorer.dev_scores_[1.0] == 1.0
    assert len(scorer.dev_scores_) == 11
    assert HybridScorer().choose_weight(bad, good, gold, "macro_f1") == 0.0
    assert scorer.predict(good, bad) == ["true", "false"]


def test_choose_weight_multi_label_and_callable_metric():
    a = [{"x": 0.9, "y": 0.9}]
    b = [{"x": 0.9, "y": 0.0}]
    # gold {x}: y is dropped once 0.9w < 0.5 → w ≤ 0.5; the smallest best weight is 0.0
    scorer = HybridScorer(problem="multi")
    assert scorer.choose_weight(a, b, [["x"]], "micro_f1") == 0.0
    # a callable preferring more predicted labels picks the first weight keeping y: 0.9w ≥ 0.5 → 0.6
    assert scorer.choose_weight(a, b, [["x"]], lambda g, p: len(p[0])) == 0.6
    with pytest.raises(ValueError, match="multi-label metric"):
        scorer.choose_weight(a, b, [["x"]], "accuracy")


# --------------------------------------------------------------------------- scores


def test_label_scores_binary_hand_values():
    scores = label_scores(["true", "true", "false", "false"], ["true", "true", "true", "true"], "single")
    assert scores["accuracy"] == 0.5
    assert scores["macro_f1"] == approx(1 / 3)  # true: P .5 R 1 F 2/3; false: 0
    assert scores["f1"] == approx(2 / 3) and scores["recall"] == 1.0
    assert "f1" not in label_scores(["a", "b"], ["a", "a"], "single")


def test_run_baselines_scores_each_applicable_baseline():
    train = [Example("1", "bad idiot", context="a", labels={"off": True}, spans={"OFF": [(4, 9)]}),
             Example("2", "the idiot", context="b", labels={"off": True}, spans={"OFF": [(4, 9)]}),
             Example("3", "what idiot", context="c", labels={"off": True}, spans={"OFF": [(5, 10)]}),
             Example("4", "good day", context="d", labels={"off": False})]
    test = [Example("5", "idiot here", labels={"off": True}, spans={"OFF": [(0, 5)]}),
            Example("6", "you idiot", labels={"off": True}, spans={"OFF": [(0, 9)]}),
            Example("7", "fine", labels={"off": False}),
            Example("8", "nice", labels={"off": False}),
            Example("9", "unlabelled")]
    results = run_baselines(train, test, "off", span_type="OFF")
    assert (results["n_train"], results["n_test"]) == (4, 4)
    assert results["majority"]["accuracy"] == 0.5
    assert results["majority"]["f1"] == approx(2 / 3)
    assert {"ngram", "ngram_context"} <= set(results)
    # per-text F1: 1, 2·5/(5+9), 1, 1, 1 (the unlabelled text has no gold and no prediction)
    assert results["lexicon"]["char_f1"] == approx((4 + 10 / 14) / 5)
    assert results["lexicon"]["lexicon_size"] == 1
    no_context = run_baselines([Example(e.id, e.text, labels=e.labels) for e in train], test, "off")
    assert "ngram_context" not in no_context and "lexicon" not in no_context


def test_span_baselines_that_learn_nothing_and_the_token_tagger_score_beside_the_lexicon():
    train = [Example(str(i), text, spans={"OFF": [(0, 4)]}) for i, text in enumerate(["미친 놈 진짜", "미친 놈 또"])]
    train += [Example("8", "오늘 좋은 날", spans={"OFF": []}), Example("9", "좋은 날 진짜", spans={"OFF": []})]
    # gold "미친 놈" (4 characters) in a text of 9 characters, 6 of them not spaces
    test = [Example("t", "미친 놈 좋은 날", spans={"OFF": [(0, 4)]})]
    results = run_baselines(train, test, None, span_type="OFF",
                            span_baselines=("whole_text", "non_space", "lexicon", "token_ngram"))
    assert results["whole_text"] == {"char_f1": approx(2 * 4 / (9 + 4))}  # all 9 characters marked, 4 right
    assert results["non_space"] == {"char_f1": approx(2 * 3 / (6 + 4))}  # 6 non-space characters, 3 in gold
    assert results["lexicon"]["char_f1"] == approx(2 * 3 / (3 + 4))  # 미친, 놈: only seen inside; the space missed
    assert results["token_ngram"] == {"char_f1": 1.0}  # adjacent words joined with the space between them
    assert set(run_baselines(train, test, None, span_type="OFF")) == {"n_train", "n_test", "lexicon"}
    with pytest.raises(ArgumentError, match="unknown span baseline 'whole'"):
        run_baselines(train, test, None, span_type="OFF", span_baselines=("whole",))
