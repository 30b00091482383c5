"""Agreement: hand-computed coefficients, cross-checked against reference implementations."""
import math

import numpy as np
import pytest

from kold_span.agreement.coefficients import (annotator_bias, bootstrap_ci, cohen_kappa_pairwise, fleiss_kappa,
                                              hard_cases, interpret_kappa, item_entropy, krippendorff_alpha,
                                              majority_label, mean_pairwise_cohen, ordered_labels, span_agreement,
                                              unanimity)

approx = pytest.approx


def _table(columns: dict, missing=None) -> list[dict]:
    """Annotator → list of labels (one per item, `missing` = not labelled) → ratings table."""
    n = len(next(iter(columns.values())))
    return [{a: labels[i] for a, labels in columns.items() if labels[i] is not missing} for i in range(n)]


# --------------------------------------------------------------------------- Cohen


def test_cohen_kappa_hand_computed_2x2():
    # both yes 5, x yes/y no 1, x no/y yes 1, both no 3 (10 items)
    # p_o = 8/10; p(x=yes) = p(y=yes) = 6/10; p_e = .6*.6 + .4*.4 = .52; kappa = (.8-.52)/.48 = 7/12
    x = [1] * 5 + [1] + [0] + [0] * 3
    y = [1] * 5 + [0] + [1] + [0] * 3
    kappas = cohen_kappa_pairwise(_table({"x": x, "y": y}))
    assert kappas == approx({("x", "y"): 7 / 12})


def test_cohen_pairwise_skips_pairs_with_fewer_than_two_shared_items():
    ratings = _table({"x": [1, 0, 1, 0], "y": [1, 0, 0, None], "z": [None, None, None, 1]})
    kappas = cohen_kappa_pairwise(ratings)
    assert set(kappas) == {("x", "y")}  # x–z and y–z share one item, zero items
    # x [1,0,1] vs y [1,0,0]: p_o 2/3, p_e 2/3*1/3 + 1/3*2/3 = 4/9 → kappa (2/9)/(5/9) = 0.4
    assert kappas[("x", "y")] == approx(0.4)


def test_mean_pairwise_cohen_skips_undefined_pairs():
    # x–y: items 0-2, kappa 0.4 as above; x–w: items 2, 3 where both say 1 → undefined (NaN);
    # y–w: one shared item → left out
    ratings = _table({"x": [1, 0, 1, 1], "y": [1, 0, 0, None], "w": [None, None, 1, 1]})
    kappas = cohen_kappa_pairwise(ratings)
    assert set(kappas) == {("w", "x"), ("x", "y")}
    assert math.isnan(kappas[("w", "x")])
    assert mean_pairwise_cohen(ratings) == approx(0.4)
    with pytest.raises(ValueError):
        mean_pairwise_cohen([{"x": 1, "y": 1}])


def test_weighted_kappa_hand_computed():
    # x 1 3 5, y 2 3 4 on the scale 1..5 (ranks 0..4): disagreements 1, 0, 1 steps.
    # Quadratic: observed Σ w = 1 + 0 + 1 = 2; expected Σ a_i b_j (i - j)² / n over x ranks {0, 2, 4}
    # and y ranks {1, 2, 3} = 30 / 3 = 10 → kappa 1 - 2/10 = 0.8.
    # Linear: observed 2; expected Σ |i - j| = (1+2+3) + (1+0+1) + (3+2+1) = 14 → 14/3 → 1 - 6/14 = 4/7.
    likert = _table({"x": [1, 3, 5], "y": [2, 3, 4]})
    assert cohen_kappa_pairwise(likert, "quadratic") == approx({("x", "y"): 0.8})
    assert cohen_kappa_pairwise(likert, "linear") == approx({("x", "y"): 4 / 7})
    assert mean_pairwise_cohen(likert, "quadratic") == approx(0.8)
    # Unweighted: p_o 1/3, p_e 1/9 (only 3 in common) → (2/9) / (8/9) = 0.25.
    assert cohen_kappa_pairwise(likert) == approx({("x", "y"): 0.25})


def test_weighted_kappa_uses_the_whole_table_scale():
    # x–y only use 1 and 3; z uses 2. On the table's scale 1 < 2 < 3, 1 and 3 are two steps
    # apart; scikit-learn alone would index x–y's labels {1, 3} as adjacent.
    from sklearn.metrics import cohen_kappa_score

    ratings = _table({"x": [1, 3, 1, 3], "y": [1, 3, 3, 3], "z": [2, 2, 1, 3]})
    kappas = cohen_kappa_pairwise(ratings, "linear")
    assert kappas[("x", "y")] == approx(cohen_kappa_score([1, 3, 1, 3], [1, 3, 3, 3], labels=[1, 2, 3],
                                                          weights="linear"))
    # Labels {1, 3} as ranks 0, 2: observed Σ w = 2 (item 2), expected Σ a_i b_j |i-j| / 4 with
    # a = {1: 2, 3: 2}, b = {1: 1, 3: 3}: (2·3·2 + 2·1·2) / 4 = 4 → kappa 1 - 2/4 = 0.5
    assert kappas[("x", "y")] == approx(0.5)


def test_weighted_kappa_needs_numbers_and_known_weights():
    with pytest.raises(ValueError, match="numeric labels .* got 'a'"):
        cohen_kappa_pairwise([{"x": "a", "y": "b"}, {"x": "a", "y": "a"}], "linear")
    with pytest.raises(ValueError, match="numeric labels .* got False"):
        cohen_kappa_pairwise([{"x": True, "y": False}, {"x": True, "y": True}], "linear")
    with pytest.raises(ValueError, match="kappa weights must be one of"):
        cohen_kappa_pairwise([{"x": 1, "y": 2}, {"x": 1, "y": 1}], "cubic")


def test_ordered_labels_sorts_numbers_as_numbers():
    assert ordered_labels([10, 2, 1.5, 2]) == [1.5, 2, 10]
    assert ordered_labels(["10", "2"]) == ["10", "2"]
    assert ordered_labels([True, False]) == [False, True]


# --------------------------------------------------------------------------- Fleiss


# 4 items × 3 raters, categories (a, b): counts [3,0], [2,1], [0,3], [1,2]
# P_i = (Σ n_ij² - 3) / 6 → 1, 1/3, 1, 1/3; P̄ = 2/3
# p_a = 6/12, p_b = 6/12 → P_e = 1/2; kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3
FLEISS_ITEMS = [["a", "a", "a"], ["a", "a", "b"], ["b", "b", "b"], ["a", "b", "b"]]


def _crowd(items: list[list], start: int = 0) -> list[dict]:
    """Each item rated by its own fresh raters (Fleiss does not need them to repeat)."""
    out, k = [], start
    for labels in items:
        out.append({f"r{k + j}": lab for j, lab in enumerate(labels)})
        k += len(labels)
    return out


def test_fleiss_kappa_hand_computed_and_statsmodels():
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    assert fleiss_kappa(_crowd(FLEISS_ITEMS)) == approx(1 / 3)
    assert sm_fleiss(np.array([[3, 0], [2, 1], [0, 3], [1, 2]]), method="fleiss") == approx(1 / 3)


def test_fleiss_kappa_uses_only_items_with_the_modal_rater_count():
    # an item with 2 raters and one with 1 rater would change the table; they are dropped
    ratings = _crowd(FLEISS_ITEMS) + _crowd([["a", "b"], ["b"]], start=100)
    assert fleiss_kappa(ratings) == approx(1 / 3)


def test_fleiss_kappa_modal_tie_prefers_more_raters():
    # 3-rater items [2,1], [1,2]: P̄ = 1/3, P_e = 1/2 → kappa -1/3 (the 2-rater items alone would give 1)
    ratings = _crowd([["a", "a", "b"], ["b", "b", "a"], ["a", "a"], ["b", "b"]])
    assert fleiss_kappa(ratings) == approx(-1 / 3)


def test_fleiss_kappa_categories():
    # an unused category has p_j = 0 and changes nothing
    assert fleiss_kappa(_crowd(FLEISS_ITEMS), categories=["a", "b", "c"]) == approx(1 / 3)
    with pytest.raises(ValueError, match="'b'"):
        fleiss_kappa(_crowd(FLEISS_ITEMS), categories=["a"])
    with pytest.raises(ValueError):
        fleiss_kappa([{"x": "a"}])


# --------------------------------------------------------------------------- Krippendorff


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4-observer × 12-unit
# example with missing values: nominal alpha = 0.743.
K2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def test_krippendorff_alpha_reproduces_krippendorff_2011_nominal():
    assert krippendorff_alpha(_table(K2011)) == approx(0.743, abs=5e-4)


def test_krippendorff_alpha_nominal_ignores_label_names():
    names = {1: "e", 2: "d", 3: "c", 4: "b", 5: "a"}
    renamed = {a: [names.get(v) for v in col] for a, col in K2011.items()}
    assert krippendorff_alpha(_table(renamed)) == approx(krippendorff_alpha(_table(K2011)))


def test_krippendorff_alpha_interval_differs_and_needs_numbers():
    interval = krippendorff_alpha(_table(K2011), level="interval")
    assert interval == approx(0.849, abs=5e-4)
    with pytest.raises(ValueError, match="numeric"):
        krippendorff_alpha([{"x": "a", "y": "b"}, {"x": "a", "y": "a"}], level="interval")
    with pytest.raises(ValueError, match="numeric labels .* got False"):
        krippendorff_alpha([{"x": True, "y": False}, {"x": True, "y": True}], level="ordinal")
    with pytest.raises(ValueError, match="level must be one of"):
        krippendorff_alpha(_table(K2011), level="interval scale")


def test_krippendorff_alpha_reproduces_krippendorff_2011_ordinal_and_ratio():
    # The same data's ordinal and ratio values as published with it (0.815 and 0.797).
    assert krippendorff_alpha(_table(K2011), level="ordinal") == approx(0.815, abs=5e-4)
    assert krippendorff_alpha(_table(K2011), level="ratio") == approx(0.797, abs=5e-4)


def test_krippendorff_alpha_ordinal_orders_numbers_as_numbers():
    # Labels 2 and 10: as text "10" < "2"; an ordinal alpha must see 2 < 10 (here: a rescaling of 1..5).
    scaled = {a: [None if v is None else {1: 1, 2: 2, 3: 3, 4: 4, 5: 10}[v] for v in col] for a, col in K2011.items()}
    assert krippendorff_alpha(_table(scaled), level="ordinal") == approx(
        krippendorff_alpha(_table(K2011), level="ordinal"), abs=1e-12)


# --------------------------------------------------------------------------- bootstrap


def test_bootstrap_ci_contains_estimate_and_is_deterministic():
    ratings = _table(K2011)
    point = krippendorff_alpha(ratings)
    low, high = bootstrap_ci(ratings, krippendorff_alpha, n_boot=300, seed=7)
    assert low < point < high
    assert bootstrap_ci(ratings, krippendorff_alpha, n_boot=300, seed=7) == (low, high)
    assert bootstrap_ci(ratings, krippendorff_alpha, n_boot=300, seed=8) != (low, high)
    narrow = bootstrap_ci(ratings, krippendorff_alpha, n_boot=300, seed=7, alpha=0.5)
    assert low <= narrow[0] <= narrow[1] <= high


def test_bootstrap_ci_skips_undefined_resamples():
    def fails(sample):
        raise ValueError("undefined")

    assert all(math.isnan(v) for v in bootstrap_ci([{"x": 1}], fails, n_boot=5))


# --------------------------------------------------------------------------- per-item views


def test_majority_label():
    assert majority_label([1, 1, 0]) == 1
    assert majority_label(["a", "b", "b", "c"]) == "b"
    assert majority_label([1, 0]) is None
    assert majority_label([0, 0, 1, 1, 2]) is None
    assert majority_label([]) is None


def test_unanimity_overall_and_per_majority_class():
    ratings = [{"x": 1, "y": 1}, {"x": 1, "y": 0, "z": 1}, {"x": 0, "y": 0}, {"x": 1, "y": 0}, {"x": 1}]
    # items with ≥2 ratings: 4, unanimous: 2 → 0.5; majority 1: items 0 (yes), 1 (no) → 0.5;
    # majority 0: item 2 (yes) → 1.0; item 3 is tied (overall only), item 4 has one rating (ignored)
    out = unanimity(ratings)
    assert out["overall"] == approx(0.5)
    assert out["per_class"] == approx({0: 1.0, 1: 0.5})


def test_annotator_bias():
    ratings = [
        {"x": 1, "y": 0, "z": 0},  # majority 0: x +1, y 0, z 0
        {"x": 1, "y": 1, "z": 0},  # majority 1: x 0, y 0, z -1
        {"x": 1, "y": 0},  # tie: skipped
        {"x": 0, "y": 0, "w": 1},  # majority 0: x 0, y 0, w +1
    ]
    assert annotator_bias(ratings) == approx({"w": 1.0, "x": 1 / 3, "y": 0.0, "z": -0.5})


def test_item_entropy_in_bits():
    assert item_entropy([1, 1, 0]) == approx(math.log2(3) - 2 / 3)  # 0.9183
    assert item_entropy([1, 0]) == approx(1.0)
    assert item_entropy(["a", "b", "c", "d"]) == approx(2.0)
    assert item_entropy([1, 1]) == 0.0
    with pytest.raises(ValueError):
        item_entropy([])


def test_hard_cases_by_entropy_threshold():
    ratings = [{"x": 1, "y": 1, "z": 1}, {"x": 1, "y": 0, "z": 1}, {"x": 1, "y": 0}, {"x": 0}]
    # entropies 0, 0.918, 1.0, 0
    assert hard_cases(ratings) == [1, 2]
    assert hard_cases(ratings, threshold=0.95) == [2]


@pytest.mark.parametrize("value, band", [
    (-0.3, "poor"), (0.0, "poor"), (0.20, "poor"), (0.2001, "fair"), (0.40, "fair"),
    (0.41, "moderate"), (0.60, "moderate"), (0.61, "substantial"), (0.80, "substantial"),
    (0.81, "almost perfect"), (1.0, "almost perfect"),
])
def test_interpret_kappa_bands(value, band):
    assert interpret_kappa(value) == band


def test_interpret_kappa_rejects_nan():
    with pytest.raises(ValueError):
        interpret_kappa(math.nan)


# --------------------------------------------------------------------------- spans


def test_span_agreement_hand_computed():
    spans = [{"x": {0, 1}, "y": {1, 2}}, {"x": set(), "y": set(), "z": {0}}]
    out = span_agreement(spans, text_lengths=[4, 3])
    # F1: text 0 x–y 0.5; text 1 x–y 1 (both empty), x–z 0, y–z 0 → 1.5/4
    assert out["mean_pairwise_f1"] == approx(0.375)
    # kappa x–y over 7 chars: x 1100 000, y 0110 000 → p_o 5/7, p_e (2/7)²+(5/7)² = 29/49 → 0.3
    # x–z and y–z over text 1: 000 vs 100 → p_o 2/3, p_e 2/3 → 0; mean (0.3 + 0 + 0)/3 = 0.1
    assert out["char_kappa"] == approx(0.1)


def test_span_agreement_rejects_offsets_outside_text():
    with pytest.raises(ValueError, match="outside"):
        span_agreement([{"x": {5}, "y": set()}], text_lengths=[3])
