"""Evaluators as plain functions over plain data.

Span scores work on sets of character offsets (use `span_char_f1` for
end-exclusive (start, end) spans); tag scores on IOB2 tag lists; label scores
on plain label lists; soft-label scores on per-item distributions. `best_on_grid`
is the one tuner of thresholds and weights on dev.
"""
from __future__ import annotations

import math
from typing import Callable, Hashable, Iterable, Mapping, Optional, Sequence, Union

from kold_span.data.example import Span, spans_to_offsets
from kold_span.errors import ArgumentError

Distribution = Union[Mapping[Hashable, float], Sequence[float]]

CHAR_F1_POLICIES = ("semeval", "kold")


# --------------------------------------------------------------------------- spans


def char_f1(pred: Iterable[int], gold: Iterable[int], policy: str = "semeval") -> float:
    """Character-offset F1 of one text, with an explicit rule for empty sets.

    The two policies differ only when gold is empty:

    ============  ============  ====================  ==================
    gold          pred          ``policy="semeval"``  ``policy="kold"``
    ============  ============  ====================  ==================
    empty         empty         1.0                   1.0
    empty         non-empty     0.0                   1.0
    non-empty     empty         0.0                   0.0
    non-empty     non-empty     2|P∩G| / (|P|+|G|)    2|P∩G| / (|P|+|G|)
    ============  ============  ====================  ==================

    ``"semeval"`` is the official SemEval-2021 Task 5 (Toxic Spans) rule.
    ``"kold"`` follows the KOLD paper's wording, where a text without a gold
    span scores 1 whatever is predicted. Duplicate offsets are ignored.

    Example:
        >>> char_f1({1, 2, 3}, {2, 3, 4, 5})
        0.5714285714285714
        >>> char_f1({7}, set()), char_f1({7}, set(), policy="kold")
        (0.0, 1.0)
    """
    if policy not in CHAR_F1_POLICIES:
        raise ArgumentError(f"unknown char_f1 policy {policy!r}; expected one of {CHAR_F1_POLICIES}")
    pred, gold = set(pred), set(gold)
    if not gold:
        return 1.0 if policy == "kold" or not pred else 0.0
    return 0.0 if not pred else 2 * len(pred & gold) / (len(pred) + len(gold))


def span_char_f1(pred_spans: Iterable[Span], gold_spans: Iterable[Span], policy: str = "semeval") -> float:
    """`char_f1` over end-exclusive (start, end) spans instead of offsets.

    Example:
        >>> span_char_f1([(1, 4)], [(2, 6)])
        0.5714285714285714
    """
    return char_f1(spans_to_offsets(pred_spans), spans_to_offsets(gold_spans), policy)


def mean_char_f1(preds: Sequence[Iterable[int]], golds: Sequence[Iterable[int]], policy: str = "semeval") -> float:
    """Mean of per-text `char_f1` (the official Toxic Spans system score); `golds` aligned with `preds`.

    Raises:
        ValueError: lengths differ.
        ArgumentError: there are no texts.

    Example:
        >>> mean_char_f1([{1, 2, 3}, set()], [{2, 3, 4, 5}, set()])
        0.7857142857142857
    """
    _check_aligned(preds, golds)
    return sum(char_f1(p, g, policy) for p, g in zip(preds, golds)) / len(golds)


def micro_char_prf(preds: Sequence[Iterable[int]], golds: Sequence[Iterable[int]]) -> dict[str, float]:
    """Precision, recall and F1 over the offsets of all texts pooled together.

    Offsets are matched within their own text only. Zero denominators: when
    nothing is predicted and nothing is gold anywhere, all three are 1.0 (there
    was nothing to find and nothing was claimed); otherwise a 0/0 precision or
    recall is 0.0, and F1 is 0.0 when precision + recall is 0.

    Example:
        >>> micro_char_prf([{1, 2, 3}, {9}], [{2, 3, 4, 5}, set()])
        {'precision': 0.5, 'recall': 0.5, 'f1': 0.5}
    """
    _check_aligned(preds, golds)
    hits = n_pred = n_gold = 0
    for p, g in zip(preds, golds):
        p, g = set(p), set(g)
        hits += len(p & g)
        n_pred += len(p)
        n_gold += len(g)
    if n_pred == 0 and n_gold == 0:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    precision = hits / n_pred if n_pred else 0.0
    recall = hits / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def _check_aligned(preds: Sequence, golds: Sequence) -> None:
    if len(preds) != len(golds):
        raise ValueError(f"preds and golds differ in length: {len(preds)} != {len(golds)}")
    if not golds:
        raise ArgumentError("no texts to score: preds and golds are empty")


# --------------------------------------------------------------------------- tags


def seqeval_prf(true_tags: list[list[str]], pred_tags: list[list[str]]) -> dict[str, float]:
    """Entity-level micro precision, recall and F1 in strict IOB2 mode.

    Strict mode counts an entity only when it starts with ``B-`` and has the
    exact boundaries and type of a gold one; a dangling ``I-`` is not an entity.
    0/0 counts as 0.

    Example:
        >>> seqeval_prf([["B-OFF", "I-OFF", "O"]], [["B-OFF", "I-OFF", "O"]])
        {'precision': 1.0, 'recall': 1.0, 'f1': 1.0}
    """
    from seqeval.metrics import f1_score, precision_score, recall_score
    from seqeval.scheme import IOB2

    kwargs = dict(mode="strict", scheme=IOB2, zero_division=0)
    return {"precision": float(precision_score(true_tags, pred_tags, **kwargs)),
            "recall": float(recall_score(true_tags, pred_tags, **kwargs)),
            "f1": float(f1_score(true_tags, pred_tags, **kwargs))}


# --------------------------------------------------------------------------- labels


def binary_prf(y_true: Sequence[Hashable], y_pred: Sequence[Hashable], positive: Hashable = 1) -> dict[str, float]:
    """Precision, recall and F1 of the `positive` class (other labels are negatives).

    Returns:
        ``{"precision", "recall", "f1", "support"}``; 0/0 counts as 0.

    Example:
        >>> binary_prf([1, 1, 0, 0], [1, 0, 1, 0])
        {'precision': 0.5, 'recall': 0.5, 'f1': 0.5, 'support': 2}
    """
    from sklearn.metrics import precision_recall_fscore_support

    p, r, f, s = precision_recall_fscore_support(y_true, y_pred, labels=[positive], average=None, zero_division=0)
    return {"precision": float(p[0]), "recall": float(r[0]), "f1": float(f[0]), "support": int(s[0])}


def classification_report_dict(y_true: Sequence[Hashable], y_pred: Sequence[Hashable],
                               labels: Optional[Sequence[Hashable]] = None) -> dict:
    """Accuracy, macro/weighted F1, balanced accuracy and per-class scores.

    Args:
        labels: classes for the per-class and macro/weighted scores (default:
            every label seen in either list, sorted). Balanced accuracy is the
            mean recall over the classes present in `y_true`.

    Returns:
        ``{"accuracy", "macro_f1", "weighted_f1", "balanced_accuracy",
        "per_class": {label: {"precision", "recall", "f1", "support"}}}``;
        0/0 counts as 0.

    Example:
        >>> r = classification_report_dict(["a", "a", "b"], ["a", "b", "b"])
        >>> r["accuracy"], r["per_class"]["b"]["precision"]
        (0.6666666666666666, 0.5)
    """
    from sklearn.metrics import (accuracy_score, balanced_accuracy_score, f1_score, precision_recall_fscore_support)

    if labels is None:
        labels = sorted(set(y_true) | set(y_pred), key=str)
    labels = list(labels)
    p, r, f, s = precision_recall_fscore_support(y_true, y_pred, labels=labels, average=None, zero_division=0)
    per_class = {lab: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]), "support": int(s[i])}
                 for i, lab in enumerate(labels)}
    return {"accuracy": float(accuracy_score(y_true, y_pred)),
            "macro_f1": float(f1_score(y_true, y_pred, labels=labels, average="macro", zero_division=0)),
            "weighted_f1": float(f1_score(y_true, y_pred, labels=labels, average="weighted", zero_division=0)),
            "balanced_accuracy": float(balanced_accuracy_score(y_true, y_pred)),
            "per_class": per_class}


def multilabel_scores(y_true: Sequence[Iterable[Hashable]], y_pred: Sequence[Iterable[Hashable]],
                      labels: Sequence[Hashable],
                      scores: Optional[Sequence[Mapping[Hashable, float]]] = None) -> dict[str, float]:
    """Micro/macro F1 of label sets and, given scores, label-ranking average precision.

    Args:
        labels: the label inventory (order fixes the columns); a label outside
            it is an error.
        scores: optional per-example ``{label: probability}``; a missing label
            scores 0. An example with no gold label gets LRAP 1 (sklearn).

    Returns:
        ``{"micro_f1", "macro_f1"}`` plus ``"lrap"`` when `scores` is given;
        0/0 counts as 0.

    Example:
        >>> multilabel_scores([["a"], ["a", "b"]], [["a"], ["a"]], labels=["a", "b"])
        {'micro_f1': 0.8, 'macro_f1': 0.5}
    """
    import numpy as np
    from sklearn.metrics import f1_score, label_ranking_average_precision_score

    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true and y_pred differ in length: {len(y_true)} != {len(y_pred)}")
    labels = list(labels)
    true_m, pred_m = _label_matrix(y_true, labels, "y_true"), _label_matrix(y_pred, labels, "y_pred")
    out = {"micro_f1": float(f1_score(true_m, pred_m, average="micro", zero_division=0)),
           "macro_f1": float(f1_score(true_m, pred_m, average="macro", zero_division=0))}
    if scores is not None:
        if len(scores) != len(y_true):
            raise ValueError(f"scores and y_true differ in length: {len(scores)} != {len(y_true)}")
        score_m = np.array([[float(s.get(lab, 0.0)) for lab in labels] for s in scores])
        out["lrap"] = float(label_ranking_average_precision_score(true_m, score_m))
    return out


def _label_matrix(label_sets: Sequence[Iterable[Hashable]], labels: list, what: str):
    import numpy as np

    index = {lab: j for j, lab in enumerate(labels)}
    m = np.zeros((len(label_sets), len(labels)), dtype=int)
    for i, labs in enumerate(label_sets):
        for lab in labs:
            if lab not in index:
                raise ArgumentError(f"{what}[{i}]: label {lab!r} is not in labels {labels}")
            m[i, index[lab]] = 1
    return m


# --------------------------------------------------------------------------- soft labels


def vote_distribution(labels: Iterable[Hashable], classes: Sequence[Hashable]) -> dict[Hashable, float]:
    """The share of one item's votes (`labels`) each class received, in `classes` order (a soft label).

    Example:
        >>> vote_distribution([1, 1, 0], classes=[0, 1])
        {0: 0.3333333333333333, 1: 0.6666666666666666}
    """
    labels = list(labels)
    if not labels:
        raise ArgumentError("vote_distribution needs at least one label")
    unknown = set(labels) - set(classes)
    if unknown:
        raise ArgumentError(f"label(s) {sorted(unknown, key=str)} not in classes {list(classes)}")
    return {c: labels.count(c) / len(labels) for c in classes}


def soft_cross_entropy(pred_dist: Sequence[Distribution], target_dist: Sequence[Distribution],
                       eps: float = 1e-12) -> float:
    """Mean over items of the cross-entropy -Σ q·ln p, in nats, of predicted p against target q.

    Args:
        pred_dist: predicted distributions, each a ``{label: prob}`` dict or a
            list in a fixed class order.
        target_dist: target (soft-label) distributions, aligned with
            `pred_dist` and of the same form; a label missing from a dict has
            probability 0.
        eps: predicted probabilities are clamped to [eps, 1] before the log.

    Example:
        >>> round(soft_cross_entropy([[0.5, 0.5]], [[1.0, 0.0]]), 6)
        0.693147
    """
    pairs = _aligned_distributions(pred_dist, target_dist)
    return sum(-sum(q * math.log(min(max(p, eps), 1.0)) for p, q in zip(ps, qs)) for ps, qs in pairs) / len(pairs)


def manhattan_distance(pred_dist: Sequence[Distribution], target_dist: Sequence[Distribution]) -> float:
    """Mean over items of Σ|p - q|, in [0, 2], between distributions given as in `soft_cross_entropy`.

    Example:
        >>> manhattan_distance([{"a": 0.75, "b": 0.25}], [{"a": 0.5, "b": 0.5}])
        0.5
    """
    pairs = _aligned_distributions(pred_dist, target_dist)
    return sum(sum(abs(p - q) for p, q in zip(ps, qs)) for ps, qs in pairs) / len(pairs)


def _aligned_distributions(pred_dist: Sequence[Distribution],
                           target_dist: Sequence[Distribution]) -> list[tuple[list[float], list[float]]]:
    """Each (pred, target) pair as two equal-length probability lists."""
    _check_aligned(pred_dist, target_dist)
    pairs = []
    for i, (p, q) in enumerate(zip(pred_dist, target_dist)):
        if isinstance(p, Mapping) and isinstance(q, Mapping):
            keys = list(dict.fromkeys([*q, *p]))
            pairs.append(([float(p.get(k, 0.0)) for k in keys], [float(q.get(k, 0.0)) for k in keys]))
        elif not isinstance(p, Mapping) and not isinstance(q, Mapping) and len(p) == len(q):
            pairs.append(([float(x) for x in p], [float(x) for x in q]))
        else:
            raise ArgumentError(f"item {i}: pred and target must both be dicts, or lists of equal length")
    return pairs


def perspectivist_f1(y_true: Sequence[Mapping[Hashable, Hashable]], y_pred: Sequence[Mapping[Hashable, Hashable]],
                     average: str = "macro") -> float:
    """F1 over every (item, annotator) label, flattened into one list.

    Args:
        y_true: per item, ``{annotator: label}`` as each annotator labelled it.
        y_pred: per item, ``{annotator: predicted label}``; it must cover every
            (item, annotator) pair of `y_true` (extra predictions are ignored).
        average: sklearn's `average` (``"macro"``, ``"micro"``, ``"weighted"``).

    Returns:
        F1 over the flattened labels; 0/0 counts as 0.

    Example:
        >>> perspectivist_f1([{"a1": 1, "a2": 0}], [{"a1": 1, "a2": 1}])
        0.3333333333333333
    """
    from sklearn.metrics import f1_score

    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true and y_pred differ in length: {len(y_true)} != {len(y_pred)}")
    flat_true, flat_pred = [], []
    for i, (gold, pred) in enumerate(zip(y_true, y_pred)):
        for annotator, label in gold.items():
            if annotator not in pred:
                raise ArgumentError(f"item {i}: no prediction for annotator {annotator!r}")
            flat_true.append(label)
            flat_pred.append(pred[annotator])
    if not flat_true:
        raise ArgumentError("no (item, annotator) labels to score")
    return float(f1_score(flat_true, flat_pred, average=average, zero_division=0))


# --------------------------------------------------------------------------- calibration

ECE_BINS = 15  # equal-mass bins of expected calibration error, as most reports of temperature scaling use


def expected_calibration_error(confidences: Sequence[float], hits: Sequence[float], bins: int = ECE_BINS,
                               weights: Optional[Sequence[float]] = None) -> float:
    """Expected calibration error with equal-mass bins: sum over bins of |hit rate - mean confidence| × bin share.

    The scores are sorted and cut into `bins` bins of (as nearly as possible) equal counts, score
    i of n (from 0) in bin floor(i × bins / n); equal scores share the bin of the first of them, so
    a tie is never split by the order of its examples. 0.0 without scores.

    `weights` (one per row, none negative) count a row as that many rows: bins of equal weight
    (row i in bin floor(weight before it × bins / total weight)), weighted means and shares, so a
    weight of k scores as k copies of the row. The benchmark weighs a held-out side to dev's share of
    each gold label this way (`bench/operating_points.py`).

    Example:
        >>> # bins of 2: {0.2, 0.4} hit 0 of 2 (|0 - 0.3|), {0.6, 0.8} hit 2 of 2 (|1 - 0.7|): (0.3 + 0.3) / 2
        >>> round(expected_calibration_error([0.8, 0.2, 0.6, 0.4], [1, 0, 1, 0], bins=2), 6)
        0.3
        >>> expected_calibration_error([0.9] * 10, [1] * 7 + [0] * 3)  # one bin of ties: |0.7 - 0.9|
        0.2
    """
    bins_found = _weighted_bins(confidences, hits, bins, weights)
    total = sum(b["weight"] * abs(b["hit_rate"] - b["confidence"]) for b in bins_found)
    mass = sum(b["weight"] for b in bins_found)
    return round(total / mass, 12) if mass else 0.0


def reliability_bins(confidences: Sequence[float], hits: Sequence[float], bins: int = ECE_BINS,
                     weights: Optional[Sequence[float]] = None) -> list[dict]:
    """The equal-mass bins of `expected_calibration_error`: each one's mean confidence, hit rate and count, in
    order of confidence (a reliability diagram's points); with `weights`, weighted means (a bin whose rows all
    weigh nothing is left out).

    Example:
        >>> reliability_bins([0.8, 0.2, 0.6, 0.4], [1, 0, 1, 0], bins=2)
        [{'confidence': 0.3, 'hit_rate': 0.0, 'count': 2}, {'confidence': 0.7, 'hit_rate': 1.0, 'count': 2}]
    """
    return [{key: value for key, value in b.items() if key != "weight"}
            for b in _weighted_bins(confidences, hits, bins, weights)]


def _weighted_bins(confidences: Sequence[float], hits: Sequence[float], bins: int,
                   weights: Optional[Sequence[float]]) -> list[dict]:
    """`reliability_bins` with each bin's total weight ("weight")."""
    import numpy as np

    if len(confidences) != len(hits):
        raise ArgumentError(f"confidences and hits differ in length: {len(confidences)} != {len(hits)}")
    if not len(confidences):
        return []
    order, bin_of = _equal_mass_bins(confidences, bins, weights)
    conf = np.asarray(confidences, dtype=np.float64)[order]
    hit = np.asarray(hits, dtype=np.float64)[order]
    weight = np.ones(len(conf)) if weights is None else np.asarray(weights, dtype=np.float64)[order]
    out = []
    for b in np.unique(bin_of):
        members = bin_of == b
        mass = float(weight[members].sum())
        if mass > 0:
            out.append({"confidence": round(float(weight[members] @ conf[members]) / mass, 12),
                        "hit_rate": round(float(weight[members] @ hit[members]) / mass, 12),
                        "count": int(members.sum()), "weight": mass})
    return out


def _checked_weights(weights: Sequence[float], rows: int):
    """`weights` as an array, refused unless one finite, non-negative weight per row and some above 0."""
    import numpy as np

    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (rows,):
        raise ArgumentError(f"weights and confidences differ in length: {w.size} != {rows}")
    if not np.isfinite(w).all():
        raise ArgumentError("weights must be finite")
    if (w < 0).any():
        raise ArgumentError("weights must not be negative")
    if rows and not (w > 0).any():
        raise ArgumentError("weights: at least one must be positive")
    return w


def _equal_mass_bins(confidences: Sequence[float], bins: int, weights: Optional[Sequence[float]] = None):
    """The order that sorts `confidences` (stable) and, in that order, each score's bin: never decreasing, ties
    in the bin of the first of them; with `weights`, bins of equal weight."""
    import numpy as np

    conf = np.asarray(confidences, dtype=np.float64)
    order = np.argsort(conf, kind="stable")
    n = len(conf)
    if weights is None:
        positions = (np.arange(n) * bins) // n
    else:
        w = _checked_weights(weights, n)[order]
        before = np.cumsum(w) - w  # the weight of the rows sorted before each
        positions = np.floor(before * bins / w.sum() + 1e-9).astype(np.int64)
    _, first, inverse = np.unique(conf[order], return_index=True, return_inverse=True)
    return order, positions[first][inverse.reshape(-1)]


def calibration_error_floor(confidences: Sequence[float], bins: int = ECE_BINS, samples: int = 1000,
                            seed: int = 0, weights: Optional[Sequence[float]] = None) -> dict[str, float]:
    """The ECE a perfectly calibrated model with these confidences would score: its mean and 95th percentile.

    The binned ECE of finite data is above 0 even when every score is exactly the chance of a hit,
    because a bin's hit rate wanders around its mean score. Consistency resampling (Bröcker and
    Smith, 2007) measures how far: keep the scores (so the bins stay the same), draw each hit anew
    as true with the probability its score states, score the draw as `expected_calibration_error` does,
    `samples` times from a numpy Generator seeded with `seed`. A measured ECE above the 95th
    percentile is miscalibration these data can tell from noise; one below it is not. With `weights`,
    the floor of `expected_calibration_error` with those weights (each draw weighted as its row).

    Example:
        >>> calibration_error_floor([0.5], bins=1, samples=10)  # one coin, hit or miss: |1 - 0.5| = |0 - 0.5|
        {'mean': 0.5, 'p95': 0.5}
        >>> calibration_error_floor([1.0, 1.0, 0.0])  # certain scores are always right about themselves
        {'mean': 0.0, 'p95': 0.0}
    """
    import numpy as np

    if samples < 1:
        raise ArgumentError(f"samples must be at least 1, not {samples}")
    n = len(confidences)
    if not n:
        return {"mean": 0.0, "p95": 0.0}
    order, bin_of = _equal_mass_bins(confidences, bins, weights)
    conf = np.asarray(confidences, dtype=np.float64)[order]
    weight = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)[order]
    starts = np.flatnonzero(np.r_[True, bin_of[1:] != bin_of[:-1]])  # each bin is a run of the sorted scores
    expected = np.add.reduceat(weight * conf, starts)
    rng = np.random.default_rng(seed)
    eces = np.empty(samples)
    chunk = max(1, 2 ** 22 // n)  # draws held at once; the Generator's stream is the same whatever the chunk
    for low in range(0, samples, chunk):
        high = min(samples, low + chunk)
        drawn = rng.random((high - low, n)) < conf  # a uniform below c: a hit with probability c
        eces[low:high] = np.abs(np.add.reduceat(drawn * weight, starts, axis=1) - expected).sum(axis=1) / weight.sum()
    return {"mean": round(float(eces.mean()), 12), "p95": round(float(np.quantile(eces, 0.95)), 12)}


# --------------------------------------------------------------------------- identity-term bias (Jigsaw)
# The Jigsaw Unintended Bias in Toxicity Classification benchmark (Borkan et al., 2019): for each identity
# term, three ROC AUCs that compare the texts mentioning it (the subgroup) with the rest (the background).


def roc_auc(labels: Sequence[bool], scores: Sequence[float]) -> Optional[float]:
    """ROC AUC: the chance that a positive scores above a negative, ties counting half; None without both classes.

    Example:
        >>> roc_auc([True, False, True, False], [0.9, 0.1, 0.4, 0.4])  # pairs (0.9>0.1, 0.9>0.4, 0.4>0.1, tie): 3.5/4
        0.875
        >>> roc_auc([True, True], [0.2, 0.3]) is None
        True
    """
    from sklearn.metrics import roc_auc_score

    if len(labels) != len(scores):
        raise ArgumentError(f"labels and scores differ in length: {len(labels)} != {len(scores)}")
    if len(set(map(bool, labels))) < 2:
        return None
    return float(roc_auc_score([bool(v) for v in labels], [float(s) for s in scores]))


def subgroup_auc(labels: Sequence[bool], scores: Sequence[float], in_subgroup: Sequence[bool]) -> Optional[float]:
    """AUC on the subgroup alone: does the model tell its toxic texts from its non-toxic ones?"""
    return roc_auc(*_subset(labels, scores, list(in_subgroup)))


def bpsn_auc(labels: Sequence[bool], scores: Sequence[float], in_subgroup: Sequence[bool]) -> Optional[float]:
    """Background Positive, Subgroup Negative AUC: the subgroup's non-toxic texts against the background's toxic ones.

    Low when non-toxic texts that mention the identity score above toxic texts that do not (false positives
    driven by the identity term).
    """
    keep = [(s and not y) or (not s and bool(y)) for y, s in zip(labels, in_subgroup)]
    return roc_auc(*_subset(labels, scores, keep))


def bnsp_auc(labels: Sequence[bool], scores: Sequence[float], in_subgroup: Sequence[bool]) -> Optional[float]:
    """Background Negative, Subgroup Positive AUC: the subgroup's toxic texts against the background's non-toxic ones.

    Low when toxic texts that mention the identity score below non-toxic texts that do not.
    """
    keep = [(s and bool(y)) or (not s and not y) for y, s in zip(labels, in_subgroup)]
    return roc_auc(*_subset(labels, scores, keep))


def _subset(labels: Sequence[bool], scores: Sequence[float],
            keep: Sequence[bool]) -> tuple[list[bool], list[float]]:
    if not len(labels) == len(scores) == len(keep):
        raise ArgumentError(f"labels, scores and subgroup flags differ in length: {len(labels)}, {len(scores)}, "
                            f"{len(keep)}")
    kept = [(bool(y), float(s)) for y, s, k in zip(labels, scores, keep) if k]
    return [y for y, _ in kept], [s for _, s in kept]


def generalized_mean(values: Iterable[Optional[float]], power: float = -5) -> Optional[float]:
    """(mean of v^p)^(1/p) over the values present: with p = -5, as the benchmark uses, the worst terms weigh most.

    Example:
        >>> round(generalized_mean([0.5, 1.0], power=-1), 4)  # harmonic mean: 2 / (2 + 1)
        0.6667
        >>> generalized_mean([None]) is None
        True
    """
    present = [float(v) for v in values if v is not None]
    if not present:
        return None
    if any(v <= 0 for v in present):  # a zero AUC makes v^p infinite: the mean is 0
        return 0.0
    return (sum(v ** power for v in present) / len(present)) ** (1 / power)


def bias_aucs(labels: Sequence[bool], scores: Sequence[float],
              identities: Sequence[Optional[str]]) -> dict[str, dict[str, Optional[float]]]:
    """Per identity term (the texts whose identity it is are its subgroup; the rest, its background): its count and
    its subgroup, BPSN and BNSP AUCs.

    Example:
        >>> labels = [True, False, True, False]
        >>> out = bias_aucs(labels, [0.9, 0.8, 0.7, 0.1], ["a", "a", None, None])
        >>> out["a"]  # subgroup 0.9 > 0.8; BPSN: 0.7 < 0.8; BNSP: 0.9 > 0.1
        {'texts': 2, 'subgroup_auc': 1.0, 'bpsn_auc': 0.0, 'bnsp_auc': 1.0}
    """
    terms = sorted({t for t in identities if t is not None})
    out = {}
    for term in terms:
        inside = [t == term for t in identities]
        out[term] = {"texts": sum(inside), "subgroup_auc": subgroup_auc(labels, scores, inside),
                     "bpsn_auc": bpsn_auc(labels, scores, inside), "bnsp_auc": bnsp_auc(labels, scores, inside)}
    return out


def bias_summary(labels: Sequence[bool], scores: Sequence[float], per_term: Mapping[str, Mapping[str, Optional[float]]],
                 power: float = -5) -> dict[str, Optional[float]]:
    """The benchmark's summary: the overall AUC, each bias AUC's generalized mean over the terms, and the final
    score 0.25 · overall + 0.25 · each of the three means (None when a part is missing).

    Example:
        >>> per_term = {"a": {"subgroup_auc": 1.0, "bpsn_auc": 0.5, "bnsp_auc": 1.0}}
        >>> bias_summary([True, False], [0.9, 0.1], per_term)["final"]  # (1 + 1 + 0.5 + 1) / 4
        0.875
    """
    out: dict[str, Optional[float]] = {"overall_auc": roc_auc(labels, scores)}
    out |= {f"mean_{key}": generalized_mean([m.get(key) for m in per_term.values()], power)
            for key in ("subgroup_auc", "bpsn_auc", "bnsp_auc")}
    parts = list(out.values())
    out["final"] = None if any(p is None for p in parts) else sum(parts) / 4  # type: ignore[arg-type]
    return out


# --------------------------------------------------------------------------- tuning


def best_on_grid(grid: Iterable[float], score: Callable[[float], float], prefer: float = 0.5) -> float:
    """The value of `grid` whose `score` is highest; ties go to the value nearest `prefer`.

    Example:
        >>> best_on_grid((0.2, 0.4, 0.6, 0.8), lambda t: min(t, 0.6))  # 0.6 and 0.8 tie: 0.6 is nearer 0.5
        0.6
        >>> best_on_grid((0.0, 0.5, 1.0), lambda w: 1.0, prefer=0.0)
        0.0
    """
    return max(grid, key=lambda value: (score(value), -abs(value - prefer)))
