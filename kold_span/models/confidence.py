"""A confidence map: the top label's probability of a single-label task mapped to its dev hit rate, argmax kept.

A temperature (`models.temperature`) moves every probability of a task by one number; it cannot
fix a head that is over-confident at one score and under-confident at another. The confidence map
comes after it: a non-decreasing, piecewise-linear function g of the top label's probability,
fitted on dev by isotonic regression of "the top label was right" on that probability, so that
g(p) is the dev hit rate of rows scored near p. The top label gets g(p); the other labels share
the rest in their proportions, so their order among themselves stays.

Isotonic regression gives a step function, which would tie every score of a step, and a tied
score cannot be cut by a threshold. The map therefore joins the steps' centres (each step's mean
score and its hit rate, "centred isotonic regression", Oron and Flournoy 2017) by straight lines,
and goes on level from the first centre down to 1/K and from the last up to 1 (what dev saw there,
not a guess that a score of 1/K or of 1 is right that often). A tenth of the score itself is
kept (`KEPT`): y = 0.9 × hit rate + 0.1 × score, so that the map rises everywhere and ties no two
scores the model told apart (where the hit rate is level it narrows their gap tenfold). The hit
rate is kept at least 1/K, the least a top label of K can have, and the top label is kept above
the second: no argmax, and so no predicted label, changes. A map is fitted on at least
`MIN_ROWS` dev rows (`training.calibration`).

Knots are kept as ((x, y), ...), x and y increasing; no knots leaves the probabilities as they are.

A multi-label task's labels are independent sigmoids with no top label: each gets a map of its own
(`remap_labels`), fitted the same way on its probability and whether the gold has the label.

Example:
    >>> knots = ((0.5, 0.5), (0.75, 0.6), (1.0, 1.0))  # 75%-sure rows were right 60% of the time
    >>> remap(np.array([[0.25, 0.75]]), knots).round(4)
    array([[0.4, 0.6]])
    >>> remap(np.array([[0.75, 0.125, 0.125]]), ((1 / 3, 1 / 3), (0.75, 0.5), (1.0, 1.0))).round(4)
    array([[0.5 , 0.25, 0.25]])
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

Knots = tuple[tuple[float, float], ...]

# How far the top label is kept above the second when the map would bring it level: the 6 decimals
# predictions show the probabilities with still tell them apart.
MARGIN = 1e-6
# The share of the score itself the map keeps beside the dev hit rate: its least slope, so that it ties nothing.
# At 0.1 the 6 decimals predictions show keep 98-100% of the distinct top scores of the ten held-out sequence
# sides of docs/benchmarks/operating-points.md (at 0.01: 95-100%); their mean ECE was 0.0380 (at 0.01: 0.0387).
KEPT = 0.1
# The fewest labelled dev rows a map is fitted on (`training.calibration`): with fewer, its steps follow the noise
# of a few texts. Isotonic calibration is known to need many rows (Niculescu-Mizil and Caruana, 2005: it overfits
# below about a thousand, where a sigmoid does better). Measured (docs/benchmarks/operating-points.md), maps fitted
# on the four dev sides of 106 to 240 texts raised three of their held-out ECEs (IroSvA with e5 from 0.052 to
# 0.119) and lowered two a little; on the sides of 632 texts and more they lowered eight of ten. Below 500 rows the
# temperature alone is kept.
MIN_ROWS = 500


def fit_confidence_map(confidences: Sequence[float], hits: Sequence[float], lowest: float) -> Knots:
    """The knots of the map fitted on dev: each row's probability and whether it was right.

    The probability is a top label's (`lowest` = 1/K, the least a top label of K can have) or one
    label's of a multi-label task (`lowest` = 0: its sigmoid, the hit whether the gold has it).
    scikit-learn's `IsotonicRegression` finds the steps (pool-adjacent-violators); each step gives a
    knot at its rows' mean confidence and its hit rate, raised to at least `lowest`; steps raised
    to the same value become one. The first and the last step's hit rates are carried level to
    `lowest` and to 1, and each y keeps `KEPT` of its x. No rows, no knots.

    Example:
        >>> def fitted(*args):
        ...     return [(round(x, 4), round(y, 4)) for x, y in fit_confidence_map(*args, lowest=0.5)]
        >>> # scored 0.6 and 0.7, right 1 time in 2 and 2 in 2: steps (0.6, 0.5), (0.7, 1.0); y = 0.9 y + 0.1 x
        >>> fitted([0.6, 0.6, 0.7, 0.7], [1, 0, 1, 1])
        [(0.5, 0.5), (0.6, 0.51), (0.7, 0.97), (1.0, 1.0)]
        >>> # right more often at 0.625 than at 0.875: the violators pool into one step at (0.75, 0.75)
        >>> fitted([0.625, 0.625, 0.875, 0.875], [1, 1, 1, 0])
        [(0.5, 0.725), (0.75, 0.75), (1.0, 0.775)]
    """
    from sklearn.isotonic import IsotonicRegression

    x = np.asarray(confidences, dtype=np.float64)
    if not len(x):
        return ()
    if len(x) != len(hits):
        raise ValueError(f"{len(x)} confidences but {len(hits)} hits")
    order = np.argsort(x, kind="stable")
    x = x[order]
    fitted = IsotonicRegression(increasing=True).fit_transform(x, np.asarray(hits, dtype=np.float64)[order])
    fitted = np.maximum(fitted, lowest)
    # a new step wherever the fitted value rises: steps are runs of one value, in order of score
    starts = np.flatnonzero(np.r_[True, np.diff(fitted) > 0])
    centres = np.add.reduceat(x, starts) / np.diff(np.r_[starts, len(x)])
    steps = [(float(c), float(fitted[s])) for c, s in zip(centres, starts)]
    # the ends carry the first and the last hit rate level (a step whose rows sit at the lowest or at 1 is its own)
    if steps[0][0] > lowest:
        steps.insert(0, (lowest, steps[0][1]))
    if steps[-1][0] < 1.0:
        steps.append((1.0, steps[-1][1]))
    return tuple((x, (1.0 - KEPT) * y + KEPT * x) for x, y in steps)


def remap_labels(probs: np.ndarray, maps: Sequence[Knots]) -> np.ndarray:
    """`probs` of a multi-label task ([..., labels], independent sigmoids) with each label's mapped by its knots.

    Example:
        >>> remap_labels(np.array([0.2, 0.9]), [((0.0, 0.1), (1.0, 0.5)), ()]).round(4)  # the second: no map
        array([0.18, 0.9 ])
    """
    probs = np.array(probs, dtype=np.float64)
    for j, knots in enumerate(maps):
        if knots:
            xs, ys = zip(*knots)
            probs[..., j] = np.interp(probs[..., j], xs, ys)
    return probs


def remap(probs: np.ndarray, knots: Knots) -> np.ndarray:
    """Rows of softmax `probs` ([..., K]) with each top label's probability mapped by the knots.

    The other labels are scaled to share what the top label no longer holds (equally, if the top
    label held it all). The top label stays above every other by at least `MARGIN` (or as far as it
    was, if less).
    """
    probs = np.asarray(probs, dtype=np.float64)
    if not knots:
        return probs
    flat = probs.reshape(-1, probs.shape[-1])
    rows, classes = flat.shape
    if classes < 2:
        return probs
    top = flat.argmax(axis=-1)
    p_top = flat[np.arange(rows), top]
    xs, ys = zip(*knots)
    mapped = np.interp(p_top, xs, ys)
    rest = 1.0 - p_top
    second = np.where(np.eye(classes, dtype=bool)[top], -np.inf, flat).max(axis=-1)
    # the top stays ahead: g >= second' = second (1 - g) / rest, i.e. g >= second / (rest + second)
    with np.errstate(invalid="ignore", divide="ignore"):
        level = np.where(rest + second > 0, second / (rest + second), 0.0)
    mapped = np.maximum(mapped, np.minimum(level + MARGIN, p_top))
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(rest > 0, (1.0 - mapped) / rest, 0.0)
    out = flat * scale[:, None]
    held_all = rest <= 0
    out[held_all] = ((1.0 - mapped[held_all]) / (classes - 1))[:, None]
    out[np.arange(rows), top] = mapped
    return out.reshape(probs.shape)


def label_maps_problem(value: Any, labels: int) -> Optional[str]:
    """What is wrong with a multi-label task's saved maps (one map, maybe empty, per label), or None.

    Example:
        >>> label_maps_problem([[[0.0, 0.1], [1.0, 0.9]], []], labels=2) is None
        True
        >>> label_maps_problem([[]], labels=2)
        'one map per label: 1 for 2 labels'
    """
    if not isinstance(value, (list, tuple)) or len(value) not in (0, labels):
        return f"one map per label: {len(value) if isinstance(value, (list, tuple)) else repr(value)[:20]} for " \
               f"{labels} labels"
    for j, knots in enumerate(value):
        problem = knots_problem(knots)
        if problem:
            return f"label {j}: {problem}"
    return None


def knots_problem(value: Any) -> Optional[str]:
    """What is wrong with a saved confidence map, or None when it is a valid one (or none).

    A map is a list of [x, y] pairs of numbers in [0, 1], x increasing and y never decreasing.

    Example:
        >>> knots_problem([[0.5, 0.5], [1.0, 1.0]]) is None
        True
        >>> knots_problem([[0.5, 0.6], [0.9, 0.55]])
        'y must never decrease: 0.55 after 0.6 (knot 1)'
    """
    if not isinstance(value, (list, tuple)):
        return "a list of [x, y] pairs"
    for i, knot in enumerate(value):
        if not (isinstance(knot, (list, tuple)) and len(knot) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 for v in knot)):
            return f"a list of [x, y] pairs of numbers in [0, 1] (knot {i}: {repr(knot)[:40]})"
        if i and knot[0] <= value[i - 1][0]:
            return f"x must increase: {knot[0]} after {value[i - 1][0]} (knot {i})"
        if i and knot[1] < value[i - 1][1]:
            return f"y must never decrease: {knot[1]} after {value[i - 1][1]} (knot {i})"
    return None
