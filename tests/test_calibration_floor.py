"""The ECE a perfectly calibrated model would score (`metrics.calibration_error_floor`): hand-checked and enumerated."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kold_span.errors import ArgumentError
from kold_span.metrics import calibration_error_floor, expected_calibration_error


def test_certain_scores_have_no_floor():
    # a score of 1.0 is always right and 0.0 always wrong under its own calibration: every draw scores 0
    assert calibration_error_floor([1.0] * 7 + [0.0] * 3, bins=3, samples=50) == {"mean": 0.0, "p95": 0.0}


def test_one_coin_is_always_half_off():
    # one score of 0.5 in one bin: it hits (|1 − 0.5|) or misses (|0 − 0.5|), 0.5 either way
    assert calibration_error_floor([0.5], bins=1, samples=20) == {"mean": 0.5, "p95": 0.5}


def test_no_scores():
    assert calibration_error_floor([], samples=10) == {"mean": 0.0, "p95": 0.0}


def test_samples_must_be_positive():
    with pytest.raises(ArgumentError, match="samples"):
        calibration_error_floor([0.5], samples=0)


SCORES = [0.9, 0.2, 0.9, 0.6]  # bins of 2: {0.2, 0.6} (expected hits 0.8) and {0.9, 0.9} (expected hits 1.8)


def exact_distribution(scores, bins):
    """Every hit pattern with its probability, scored by `expected_calibration_error` (2^n patterns)."""
    out = {}
    for hits in itertools.product((0, 1), repeat=len(scores)):
        p = float(np.prod([c if h else 1 - c for c, h in zip(scores, hits)]))
        ece = round(expected_calibration_error(scores, hits, bins=bins), 9)
        out[ece] = out.get(ece, 0.0) + p
    return out


def test_enumerated_by_hand():
    # low bin: 0, 1, 2 hits with 0.32, 0.56, 0.12 → E|k − 0.8| = 0.256 + 0.112 + 0.144 = 0.512
    # high bin: 0, 1, 2 hits with 0.01, 0.18, 0.81 → E|k − 1.8| = 0.018 + 0.144 + 0.162 = 0.324
    # expected ECE = (0.512 + 0.324) / 4 = 0.209
    exact = exact_distribution(SCORES, bins=2)
    assert sum(ece * p for ece, p in exact.items()) == pytest.approx(0.209)
    # the 95th percentile: P(ECE ≤ 0.35) = 0.9108 < 0.95 ≤ P(ECE ≤ 0.4) = 0.9684
    assert sum(p for ece, p in exact.items() if ece <= 0.35) == pytest.approx(0.9108)
    assert sum(p for ece, p in exact.items() if ece <= 0.4) == pytest.approx(0.9684)
    floor = calibration_error_floor(SCORES, bins=2, samples=20000, seed=3)
    # 20,000 draws: the mean's standard error is under 0.001
    assert floor["mean"] == pytest.approx(0.209, abs=0.005)
    assert floor["p95"] == pytest.approx(0.4)


def test_order_of_the_scores_does_not_matter():
    assert calibration_error_floor(SCORES, bins=2, samples=300) == calibration_error_floor(
        sorted(SCORES), bins=2, samples=300)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40), st.integers(1, 15), st.integers(0, 2 ** 32 - 1))
def test_floor_is_a_share_and_repeats_for_a_seed(scores, bins, seed):
    floor = calibration_error_floor(scores, bins=bins, samples=25, seed=seed)
    assert 0.0 <= floor["mean"] <= 1.0 and 0.0 <= floor["p95"] <= 1.0
    assert floor == calibration_error_floor(scores, bins=bins, samples=25, seed=seed)
