"""Metrics: hand-checked values, and the official Toxic Spans score on real data when present."""
import ast
import csv
import math
import random

import pytest

from kold_span.metrics import (binary_prf, char_f1, classification_report_dict, manhattan_distance,
                                          mean_char_f1, micro_char_prf, multilabel_scores, perspectivist_f1,
                                          seqeval_prf, soft_cross_entropy, span_char_f1, vote_distribution)

from conftest import shared_data

approx = pytest.approx


# --------------------------------------------------------------------------- char_f1


def test_char_f1_partial_overlap():
    # |P∩G| = |{2, 3}| = 2, |P| = 3, |G| = 4 → 2*2/7
    assert char_f1({1, 2, 3}, {2, 3, 4, 5}) == approx(4 / 7)
    assert char_f1({2, 3, 4, 5}, {1, 2, 3}) == approx(4 / 7)


def test_char_f1_identical_disjoint_and_duplicates():
    assert char_f1([4, 5], [5, 4]) == 1.0
    assert char_f1({1}, {2}) == 0.0
    assert char_f1([1, 1, 2], [1, 2]) == 1.0


@pytest.mark.parametrize("pred, gold, semeval, kold", [
    (set(), set(), 1.0, 1.0),
    ({3}, set(), 0.0, 1.0),
    (set(), {3}, 0.0, 0.0),
])
def test_char_f1_empty_sets_under_both_policies(pred, gold, semeval, kold):
    assert char_f1(pred, gold) == semeval
    assert char_f1(pred, gold, policy="semeval") == semeval
    assert char_f1(pred, gold, policy="kold") == kold


def test_char_f1_unknown_policy():
    with pytest.raises(ValueError, match="policy"):
        char_f1({1}, {1}, policy="strict")


def test_span_char_f1_converts_end_exclusive_spans():
    # (1, 4) covers {1, 2, 3}; (2, 6) covers {2, 3, 4, 5}
    assert span_char_f1([(1, 4)], [(2, 6)]) == approx(4 / 7)
    assert span_char_f1([], [(0, 2)]) == 0.0
    assert span_char_f1([(0, 1)], [], policy="kold") == 1.0


def test_mean_char_f1_both_policies():
    preds = [{1, 2, 3}, set(), {9}]
    golds = [{2, 3, 4, 5}, set(), set()]
    assert mean_char_f1(preds, golds) == approx((4 / 7 + 1 + 0) / 3)
    assert mean_char_f1(preds, golds, policy="kold") == approx((4 / 7 + 1 + 1) / 3)


def test_mean_char_f1_rejects_misaligned_or_empty():
    with pytest.raises(ValueError, match="length"):
        mean_char_f1([{1}], [{1}, {2}])
    with pytest.raises(ValueError, match="no texts"):
        mean_char_f1([], [])


def test_micro_char_prf_pools_counts_over_texts():
    # hits 2 ({2,3}), 4 predicted ({1,2,3} + {9}), 4 gold
    assert micro_char_prf([{1, 2, 3}, {9}], [{2, 3, 4, 5}, set()]) == approx(
        {"precision": 0.5, "recall": 0.5, "f1": 0.5})
    # P = 1/2, R = 1/3, F1 = 2*(1/6)/(5/6) = 0.4
    assert micro_char_prf([{1, 2}], [{2, 3, 4}]) == approx({"precision": 0.5, "recall": 1 / 3, "f1": 0.4})


def test_micro_char_prf_matches_offsets_within_their_own_text():
    assert micro_char_prf([{1}, set()], [set(), {1}]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}


def test_micro_char_prf_zero_denominators():
    assert micro_char_prf([set(), set()], [set(), set()]) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert micro_char_prf([set()], [{1}]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert micro_char_prf([{1}], [set()]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}


# --------------------------------------------------------------------------- official Toxic Spans score


def _official_post_f1(predictions, gold):
    """The SemEval-2021 Task 5 rule, restated from its description (P/R form)."""
    if len(gold) == 0:
        return 1.0 if len(predictions) == 0 else 0.0
    if len(predictions) == 0:
        return 0.0
    hits = len(set(predictions) & set(gold))
    precision = hits / len(set(predictions))
    recall = hits / len(set(gold))
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def _official_score(predictions, golds):
    return sum(_official_post_f1(p, g) for p, g in zip(predictions, golds)) / len(golds)


@pytest.fixture(scope="module")
def tsd_trial_golds():
    with shared_data("toxic_spans/tsd_trial.csv").open(encoding="utf-8", newline="") as f:
        return [ast.literal_eval(row["spans"]) for row in csv.DictReader(f)]


def _prediction_sets(golds):
    rng = random.Random(13)
    return {
        "gold": golds,
        "empty": [[] for _ in golds],
        "subset": [[i for i in g if rng.random() < 0.5] for g in golds],
        "shifted": [[i + 3 for i in g] for g in golds],
        "noisy": [[i for i in g if rng.random() < 0.8] + [rng.randrange(300) for _ in range(rng.randrange(4))]
                  for g in golds],
    }


def test_mean_char_f1_equals_official_score_on_tsd_trial(tsd_trial_golds):
    golds = tsd_trial_golds
    assert any(len(g) == 0 for g in golds) and any(len(g) > 0 for g in golds)
    for name, preds in _prediction_sets(golds).items():
        assert mean_char_f1(preds, golds) == approx(_official_score(preds, golds), abs=1e-9), name
    assert mean_char_f1(golds, golds) == 1.0
    share_empty = sum(len(g) == 0 for g in golds) / len(golds)
    assert mean_char_f1([[] for _ in golds], golds) == approx(share_empty, abs=1e-9)


# --------------------------------------------------------------------------- seqeval


def test_seqeval_strict_iob2_ignores_dangling_inside_tags():
    true = [["B-OFF", "I-OFF", "O", "B-TGT"]]
    pred = [["I-OFF", "I-OFF", "O", "B-TGT"]]
    # strict: the predicted I-OFF I-OFF is no entity → 1 of 1 predicted correct, 1 of 2 gold found
    # (lenient conlleval would read it as OFF[0:2] and score 1.0)
    assert seqeval_prf(true, pred) == approx({"precision": 1.0, "recall": 0.5, "f1": 2 / 3})


def test_seqeval_type_and_boundary_must_match():
    true = [["B-OFF", "I-OFF", "O"], ["B-TGT", "O"]]
    pred = [["B-OFF", "O", "O"], ["B-OFF", "O"]]
    assert seqeval_prf(true, pred) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert seqeval_prf(true, true) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}


# --------------------------------------------------------------------------- classification


def test_binary_prf_hand_checked():
    # tp = 2 (idx 0, 4), fp = 1 (idx 2), fn = 1 (idx 1)
    assert binary_prf([1, 1, 0, 0, 1], [1, 0, 1, 0, 1]) == approx(
        {"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3, "support": 3})


def test_binary_prf_string_positive_among_several_labels():
    # tp = 1, fp = 2 → P = 1/3, R = 1, F1 = 0.5
    assert binary_prf(["OFF", "NOT", "OTHER"], ["OFF", "OFF", "OFF"], positive="OFF") == approx(
        {"precision": 1 / 3, "recall": 1.0, "f1": 0.5, "support": 1})
    assert binary_prf(["OFF", "NOT"], ["NOT", "NOT"], positive="OFF")["f1"] == 0.0


def test_classification_report_dict_hand_checked():
    y_true = ["a", "a", "a", "b", "b", "c"]
    y_pred = ["a", "a", "b", "b", "c", "c"]
    # a: P 2/2, R 2/3, F1 0.8 | b: P 1/2, R 1/2, F1 0.5 | c: P 1/2, R 1/1, F1 2/3
    r = classification_report_dict(y_true, y_pred)
    assert r["accuracy"] == approx(4 / 6)
    assert r["macro_f1"] == approx((0.8 + 0.5 + 2 / 3) / 3)
    assert r["weighted_f1"] == approx((3 * 0.8 + 2 * 0.5 + 1 * 2 / 3) / 6)
    assert r["balanced_accuracy"] == approx((2 / 3 + 1 / 2 + 1) / 3)
    assert r["per_class"]["a"] == approx({"precision": 1.0, "recall": 2 / 3, "f1": 0.8, "support": 3})
    assert r["per_class"]["c"] == approx({"precision": 0.5, "recall": 1.0, "f1": 2 / 3, "support": 1})
    assert list(r["per_class"]) == ["a", "b", "c"]


def test_classification_report_dict_restricted_labels():
    r = classification_report_dict(["a", "a", "a", "b", "b", "c"], ["a", "a", "b", "b", "c", "c"], labels=["a", "b"])
    assert r["macro_f1"] == approx((0.8 + 0.5) / 2)
    assert set(r["per_class"]) == {"a", "b"}


def test_multilabel_scores_hand_checked():
    y_true = [["a"], ["a", "b"], ["b", "c"]]
    y_pred = [["a", "c"], ["a"], ["b", "c"]]
    # a: F1 1 | b: tp 1, fn 1 → 2/3 | c: tp 1, fp 1 → 2/3; micro: tp 4, fp 1, fn 1 → 0.8
    assert multilabel_scores(y_true, y_pred, labels=["a", "b", "c"]) == approx({"micro_f1": 0.8, "macro_f1": 7 / 9})


def test_multilabel_scores_lrap():
    y_true = [["a"], ["b", "c"]]
    scores = [{"a": 0.9, "b": 0.5}, {"a": 0.8, "b": 0.7, "c": 0.1}]
    # item 0: a ranked first → 1 | item 1: b at rank 2 (1 true ≤ 2) → 1/2, c at rank 3 (2 true ≤ 3) → 2/3
    out = multilabel_scores(y_true, y_true, labels=["a", "b", "c"], scores=scores)
    assert out["lrap"] == approx((1 + (1 / 2 + 2 / 3) / 2) / 2)
    assert "lrap" not in multilabel_scores(y_true, y_true, labels=["a", "b", "c"])


def test_multilabel_scores_rejects_unknown_label():
    with pytest.raises(ValueError, match="'z'"):
        multilabel_scores([["a"]], [["z"]], labels=["a", "b"])


# --------------------------------------------------------------------------- soft labels


def test_vote_distribution():
    assert vote_distribution([1, 1, 0], classes=[0, 1, 2]) == approx({0: 1 / 3, 1: 2 / 3, 2: 0.0})
    with pytest.raises(ValueError):
        vote_distribution([3], classes=[0, 1])
    with pytest.raises(ValueError):
        vote_distribution([], classes=[0, 1])


def test_soft_cross_entropy_lists_dicts_and_clamping():
    assert soft_cross_entropy([[0.5, 0.5]], [[1.0, 0.0]]) == approx(math.log(2))
    # key order does not matter; a missing key is probability 0
    two = soft_cross_entropy([[0.5, 0.5], {"b": 0.25, "a": 0.75}], [[1.0, 0.0], {"a": 1.0}])
    assert two == approx((math.log(2) - math.log(0.75)) / 2)
    assert soft_cross_entropy([[0.0, 1.0]], [[1.0, 0.0]], eps=1e-12) == approx(-math.log(1e-12))
    with pytest.raises(ValueError):
        soft_cross_entropy([[0.5, 0.5]], [{"a": 1.0}])


def test_manhattan_distance():
    assert manhattan_distance([{"a": 0.75, "b": 0.25}], [{"a": 0.5, "b": 0.5}]) == approx(0.5)
    assert manhattan_distance([[1, 0], [0.5, 0.5]], [[0, 1], [0.5, 0.5]]) == approx(1.0)
    with pytest.raises(ValueError):
        manhattan_distance([[1, 0]], [[1, 0, 0]])


def test_perspectivist_f1_flattens_item_annotator_pairs():
    y_true = [{"a1": 1, "a2": 0}, {"a1": 1, "a3": 1}]
    y_pred = [{"a1": 1, "a2": 1}, {"a1": 1, "a3": 0, "a9": 0}]
    # flat true [1, 0, 1, 1], pred [1, 1, 1, 0]: class 1 F1 2/3, class 0 F1 0
    assert perspectivist_f1(y_true, y_pred) == approx(1 / 3)
    assert perspectivist_f1(y_true, y_pred, average="micro") == approx(0.5)
    with pytest.raises(ValueError, match="a2"):
        perspectivist_f1(y_true, [{"a1": 1}, {"a1": 1, "a3": 1}])
