"""Temperature scaling: a model's probabilities made sharper or softer by one number per task, order kept.

A temperature T divides the logits before the softmax (or each label's sigmoid): T > 1 softens
overconfident probabilities, T < 1 sharpens them, T = 1 leaves them. It is fitted on dev after
training (`training.calibration`) and applied to the merged outputs (`kinds.apply_calibration`), so
every probability that leaves the package is calibrated. The logits are recovered from the
probabilities (log p for a softmax, up to a constant that the softmax cancels; logit p for a
sigmoid), so tempering works after windows are merged and n-grams fused. Dividing by T > 0 keeps
the order of every row's scores: no argmax, and no label at 0.5 of a sigmoid, changes.

Example:
    >>> temper(np.array([0.2, 0.8]), 2.0, exclusive=True).round(4)  # 0.2:0.8 is 1:4, at T=2 it is 1:2
    array([0.3333, 0.6667])
    >>> temper(np.array([0.8]), 2.0, exclusive=False).round(4)  # odds 4 → 2
    array([0.6667])
"""
from __future__ import annotations

import numpy as np

# Probabilities are clipped this far from 0 and 1 before their logs: a saved 0.0 would be an infinite logit.
EPSILON = 1e-7
# The range a fitted temperature may take: beyond it, dev data is too small or too odd to say anything.
TEMPERATURE_RANGE = (0.05, 20.0)


def temper(probs: np.ndarray, temperature: float, exclusive: bool) -> np.ndarray:
    """`probs` at `temperature`: rows of a softmax over the last axis (`exclusive`), else independent sigmoids."""
    probs = np.asarray(probs, dtype=np.float64)
    if temperature == 1.0:
        return probs
    clipped = np.clip(probs, EPSILON, 1.0 - EPSILON)
    if exclusive:
        z = np.log(clipped) / temperature
        z -= z.max(axis=-1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=-1, keepdims=True)
    z = np.log(clipped) - np.log1p(-clipped)
    return 1.0 / (1.0 + np.exp(-z / temperature))


def negative_log_likelihood(probs: np.ndarray, targets: np.ndarray, exclusive: bool) -> float:
    """Mean NLL of `targets` (one-hot, multi-hot or a distribution per row) under `probs`.

    Example:
        >>> round(negative_log_likelihood(np.array([[0.5, 0.5]]), np.array([[1.0, 0.0]]), True), 4)  # -log 0.5
        0.6931
    """
    p = np.clip(np.asarray(probs, dtype=np.float64), EPSILON, 1.0 - EPSILON)
    t = np.asarray(targets, dtype=np.float64)
    if exclusive:
        return float(-(t * np.log(p)).sum(axis=-1).mean())
    return float(-(t * np.log(p) + (1 - t) * np.log1p(-p)).mean())


def fit_temperature(probs: np.ndarray, targets: np.ndarray, exclusive: bool) -> float:
    """The temperature that minimises the NLL of `targets` under tempered `probs` ([rows, columns]); 1.0 without rows.

    A bounded 1-D search on log T within `TEMPERATURE_RANGE` (scipy's `minimize_scalar`).

    Example:
        >>> p = np.array([[0.99, 0.01]] * 3 + [[0.01, 0.99]])  # sure of class 0, right 3 times in 4
        >>> t = fit_temperature(p, np.array([[1, 0]] * 4), exclusive=True)
        >>> round(float(temper(p[0], t, True)[0]), 3)  # the tempered confidence is the hit rate
        0.75
    """
    from scipy.optimize import minimize_scalar

    probs, targets = np.asarray(probs, dtype=np.float64), np.asarray(targets, dtype=np.float64)
    if not len(probs):
        return 1.0
    low, high = np.log(TEMPERATURE_RANGE[0]), np.log(TEMPERATURE_RANGE[1])
    found = minimize_scalar(lambda log_t: negative_log_likelihood(temper(probs, float(np.exp(log_t)), exclusive),
                                                                  targets, exclusive),
                            bounds=(low, high), method="bounded", options={"xatol": 1e-5})
    return round(float(np.exp(found.x)), 6)
