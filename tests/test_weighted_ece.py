"""Expected calibration error with row weights (`metrics.expected_calibration_error(weights=...)`), as the
benchmark measures a held-out side at dev's share of each gold label: hand-checked, and a weight of k is k
copies of the row."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kold_span.errors import ArgumentError
from kold_span.metrics import calibration_error_floor, expected_calibration_error, reliability_bins

SCORES, HITS = [0.8, 0.2, 0.6, 0.4], [1, 0, 1, 0]


def test_weighted_bins_by_hand():
    # sorted: 0.2 (w 1), 0.4 (w 3), 0.6 (w 1), 0.8 (w 1); total 6, two bins of weight 3 each:
    # weight before each row 0, 1, 4, 5 → bins 0, 0, 1, 1 (0.4 starts at 1 < 3, so it joins the first bin)
    # bin 0: confidence (0.2 + 3 × 0.4) / 4 = 0.35, hit 0 → 0.35 × 4; bin 1: 0.7, hit 1 → 0.3 × 2
    weights = [1, 1, 1, 3]
    assert expected_calibration_error(SCORES, HITS, bins=2, weights=weights) == pytest.approx(2 / 6)
    assert reliability_bins(SCORES, HITS, bins=2, weights=weights) == [
        {"confidence": 0.35, "hit_rate": 0.0, "count": 2}, {"confidence": 0.7, "hit_rate": 1.0, "count": 2}]


def test_equal_weights_are_no_weights():
    assert expected_calibration_error(SCORES, HITS, bins=2, weights=[2.5] * 4) == pytest.approx(
        expected_calibration_error(SCORES, HITS, bins=2))


def test_a_zero_weight_row_counts_for_nothing():
    # the 0.6 row weighs nothing: bins of weight 1.5 over 0.2, 0.4 | 0.8 → |0 - 0.3| × 2 + |1 - 0.8| × 1
    assert expected_calibration_error(SCORES, HITS, bins=2, weights=[1, 1, 0, 1]) == pytest.approx(0.8 / 3)


@pytest.mark.parametrize("weights, match", [([1, 1, 1], "length"), ([1, -1, 1, 1], "negative"),
                                            ([0, 0, 0, 0], "positive"), ([1, float("nan"), 1, 1], "finite")])
def test_bad_weights_are_refused(weights, match):
    with pytest.raises(ArgumentError, match=match):
        expected_calibration_error(SCORES, HITS, weights=weights)
    with pytest.raises(ArgumentError, match=match):
        calibration_error_floor(SCORES, samples=5, weights=weights)


rows = st.lists(st.tuples(st.sampled_from([0.1, 0.35, 0.5, 0.7, 0.9]), st.booleans(), st.integers(1, 4)),
                min_size=1, max_size=25)


@settings(max_examples=80, deadline=None)
@given(rows, st.integers(1, 15))
def test_a_weight_of_k_is_k_copies(rows, bins):
    scores, hits, weights = zip(*rows)
    copied = [(s, h) for s, h, w in rows for _ in range(w)]
    assert expected_calibration_error(scores, hits, bins=bins, weights=weights) == pytest.approx(
        expected_calibration_error(*zip(*copied), bins=bins), abs=1e-9)


def test_floor_with_equal_weights_is_the_floor():
    scores = np.linspace(0.05, 0.95, 40)
    assert calibration_error_floor(scores, samples=200, weights=[3.0] * 40) == pytest.approx(
        calibration_error_floor(scores, samples=200))


def test_floor_of_one_heavy_coin():
    # the 0.5 coin carries all the weight: it alone decides the ECE, 0.5 either way
    assert calibration_error_floor([0.5, 1.0], bins=1, samples=20, weights=[1, 0]) == {"mean": 0.5, "p95": 0.5}
