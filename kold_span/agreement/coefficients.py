"""Inter-annotator agreement over ratings tables.

A ratings table is a list of items, each a dict ``{annotator_id: label}``.
Annotators may skip items (as in crowdsourcing): a missing key means "not
labelled", never a label.

Labels are categories unless a coefficient is told otherwise: Krippendorff's alpha
takes a level of measurement (`LEVELS`), and Cohen's kappa can weigh disagreements by
their distance on an ordinal scale (`KAPPA_WEIGHTS`). Both then need numeric labels
(bool is not a number here), ordered as numbers.
"""
from __future__ import annotations

import math
import warnings
from collections import Counter
from itertools import combinations
from typing import Callable, Hashable, Iterable, Mapping, Optional, Sequence

from kold_span.errors import ArgumentError, needs_extra
from kold_span.metrics import char_f1

Ratings = Sequence[Mapping[Hashable, Hashable]]

KAPPA_BANDS = ((0.20, "poor"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial"))
LEVELS = ("nominal", "ordinal", "interval", "ratio")  # Krippendorff's levels of measurement
KAPPA_LEVELS = ("nominal", "ordinal")  # the levels with a Cohen's kappa (weighted at ordinal)
KAPPA_WEIGHTS = ("linear", "quadratic")  # of a weighted Cohen's kappa, as scikit-learn names them


def is_number(label: Hashable) -> bool:
    """Whether a label is an int or float (bool is a category, not a number).

    Example:
        >>> is_number(3), is_number(2.5), is_number(True), is_number("3")
        (True, True, False, False)
    """
    return isinstance(label, (int, float)) and not isinstance(label, bool)


def ordered_labels(labels: Iterable[Hashable]) -> list:
    """The distinct labels: numbers in numeric order, any other mix in `str` order.

    Example:
        >>> ordered_labels([10, 2, 2, 1.5]), ordered_labels(["b", "a", "b"])
        ([1.5, 2, 10], ['a', 'b'])
    """
    distinct = set(labels)
    return sorted(distinct) if all(is_number(label) for label in distinct) else sorted(distinct, key=str)


def numeric_labels(ratings: Ratings, what: str) -> list[float]:
    """The distinct labels of a table in numeric order; an `ArgumentError` naming `what` if one is not a number."""
    labels = ordered_labels(lab for item in ratings for lab in item.values())
    for label in labels:
        if not is_number(label):
            raise ArgumentError(f"{what} needs numeric labels (int or float), got {label!r}")
    return labels


# --------------------------------------------------------------------------- chance-corrected coefficients


def cohen_kappa_pairwise(ratings: Ratings, weights: Optional[str] = None) -> dict[tuple[Hashable, Hashable], float]:
    """Cohen's kappa for every annotator pair, over the items both labelled: ``{(a, b): kappa}``, ``a`` before ``b``
    in `str` order.

    Pairs sharing fewer than 2 items are left out; a pair whose kappa is undefined (both gave one and the same label
    throughout) maps to NaN. `weights` None treats labels as categories; ``"linear"`` / ``"quadratic"`` is a weighted
    kappa for ordinal labels, where a disagreement weighs ``|i - j|`` or ``(i - j)²`` with ``i``, ``j`` the ranks of
    the two labels among all labels of the table (one scale for every pair). Unknown `weights`, or weights with a
    label that is not a number, are an `ArgumentError`.

    Example:
        >>> table = [{"x": 1, "y": 1}, {"x": 0, "y": 0}, {"x": 1, "y": 0}]
        >>> {pair: round(k, 4) for pair, k in cohen_kappa_pairwise(table).items()}
        {('x', 'y'): 0.4}
        >>> likert = [{"x": 1, "y": 2}, {"x": 3, "y": 3}, {"x": 5, "y": 4}]
        >>> {pair: round(k, 4) for pair, k in cohen_kappa_pairwise(likert, "quadratic").items()}
        {('x', 'y'): 0.8}
    """
    from sklearn.metrics import cohen_kappa_score

    scale = None
    if weights is not None:
        if weights not in KAPPA_WEIGHTS:
            raise ArgumentError(f"kappa weights must be one of {KAPPA_WEIGHTS}, got {weights!r}")
        scale = numeric_labels(ratings, f"a {weights}-weighted kappa")

    # One pass over items, not one per pair: crowd tables have thousands of annotators.
    shared: dict[tuple[Hashable, Hashable], tuple[list, list]] = {}
    for item in ratings:
        for a, b in combinations(sorted(item, key=str), 2):
            labels_a, labels_b = shared.setdefault((a, b), ([], []))
            labels_a.append(item[a])
            labels_b.append(item[b])
    kappas = {}
    for pair in sorted(shared, key=lambda ab: (str(ab[0]), str(ab[1]))):
        labels_a, labels_b = shared[pair]
        if len(labels_a) >= 2:
            with warnings.catch_warnings():
                # An undefined kappa is reported as NaN, as documented; sklearn's warning adds nothing.
                warnings.simplefilter("ignore")
                kappas[pair] = float(cohen_kappa_score(labels_a, labels_b, labels=scale, weights=weights))
    return kappas


def mean_pairwise_cohen(ratings: Ratings, weights: Optional[str] = None) -> float:
    """The mean of the defined pairwise Cohen's kappas (NaN if none is); `weights` as in `cohen_kappa_pairwise`.

    No annotator pair sharing at least 2 items is an `ArgumentError`.

    Example:
        >>> round(mean_pairwise_cohen([{"x": 1, "y": 1}, {"x": 0, "y": 0}, {"x": 1, "y": 0}]), 4)
        0.4
    """
    kappas = cohen_kappa_pairwise(ratings, weights)
    if not kappas:
        raise ArgumentError("no annotator pair shares at least 2 items")
    defined = [k for k in kappas.values() if not math.isnan(k)]
    return sum(defined) / len(defined) if defined else math.nan


def fleiss_kappa(ratings: Ratings, categories: Optional[Sequence[Hashable]] = None) -> float:
    """Fleiss' kappa (statsmodels) over the items labelled by the modal number of raters.

    Fleiss' kappa assumes every item has the same number of ratings. Items with
    fewer than 2 ratings are dropped; of the rest, only items with the most
    common number of ratings are kept (on a tie, the larger number). Use
    `krippendorff_alpha` to use every item. `categories` is the label set (default: every label seen); no item
    with 2 or more ratings, or a label outside `categories`, is an `ArgumentError`.

    Example:
        >>> round(fleiss_kappa([{"x": 1, "y": 1}, {"x": 0, "y": 0}, {"x": 1, "y": 0}]), 4)
        0.3333
    """
    with needs_extra("agreement"):
        from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

    items = [item for item in ratings if len(item) >= 2]
    if not items:
        raise ArgumentError("fleiss_kappa needs at least one item with 2 or more ratings")
    sizes = Counter(len(item) for item in items)
    modal = max(sizes, key=lambda n: (sizes[n], n))
    items = [item for item in items if len(item) == modal]
    categories = _categories(items, categories)
    table = [[list(item.values()).count(c) for c in categories] for item in items]
    return float(sm_fleiss_kappa(table, method="fleiss"))


def krippendorff_alpha(ratings: Ratings, level: str = "nominal") -> float:
    """Krippendorff's alpha (``krippendorff`` package) over every item, missing ratings allowed; items with a single
    rating do not count.

    `level` is ``"nominal"`` (any hashable labels), or ``"ordinal"``, ``"interval"``, ``"ratio"`` (labels must be
    numbers, whose values give the distances); an unknown level, or a label that is not a number at another level
    than nominal, is an `ArgumentError`.

    Example:
        >>> krippendorff_alpha([{"x": "a", "y": "a"}, {"x": "b", "y": "b"}])
        1.0
        >>> likert = [{"x": 1, "y": 2}, {"x": 3, "y": 3}, {"x": 5, "y": 4}]
        >>> round(krippendorff_alpha(likert, "nominal"), 4), round(krippendorff_alpha(likert, "interval"), 4)
        (0.2857, 0.8333)
    """
    with needs_extra("agreement"):
        import krippendorff
    import numpy as np

    if level not in LEVELS:
        raise ArgumentError(f"level must be one of {LEVELS}, got {level!r}")
    annotators = sorted({a for item in ratings for a in item}, key=str)
    if level == "nominal":
        code = {lab: i for i, lab in enumerate(ordered_labels(lab for item in ratings for lab in item.values()))}
    else:
        code = {lab: float(lab) for lab in numeric_labels(ratings, f"Krippendorff's alpha at level {level!r}")}
    matrix = np.array([[code[item[a]] if a in item else np.nan for item in ratings] for a in annotators], dtype=float)
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))


def bootstrap_ci(ratings: Ratings, statistic: Callable[[Ratings], float], n_boot: int = 1000,
                 seed: int = 0, alpha: float = 0.05) -> tuple[float, float]:
    """Percentile bootstrap interval of an agreement statistic, resampling items.

    `statistic` is e.g. `krippendorff_alpha` or `fleiss_kappa`; `alpha` is 1 - the confidence level; the same `seed`
    gives the same interval. Resamples where the statistic is undefined (NaN or a ValueError, e.g. `ArgumentError`)
    are skipped: ``(nan, nan)`` when none was defined.

    Example:
        >>> table = [{"x": i % 2, "y": i % 2} for i in range(10)]
        >>> bootstrap_ci(table, krippendorff_alpha, n_boot=50)
        (1.0, 1.0)
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_boot):
        sample = [ratings[i] for i in rng.integers(0, len(ratings), size=len(ratings))]
        try:
            value = statistic(sample)
        except ValueError:
            continue
        values.append(value)
    return percentile_interval(np.array(values, dtype=float), alpha)


def percentile_interval(values, alpha: float = 0.05) -> tuple[float, float]:
    """The central 1 - `alpha` interval of the defined (not NaN) values of an array; (nan, nan) if none is."""
    import numpy as np

    values = values[~np.isnan(values)]
    if not len(values):
        return (math.nan, math.nan)
    low, high = np.percentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return (float(low), float(high))


def interpret_kappa(value: float) -> str:
    """A verbal band for a kappa-like coefficient (Landis & Koch, simplified).

    Bands (upper bounds inclusive): value <= 0.20 "poor" (negatives included);
    0.20 < value <= 0.40 "fair"; 0.40 < value <= 0.60 "moderate";
    0.60 < value <= 0.80 "substantial"; value > 0.80 "almost perfect".

    Example:
        >>> interpret_kappa(0.61), interpret_kappa(0.60)
        ('substantial', 'moderate')
    """
    if math.isnan(value):
        raise ArgumentError("cannot interpret an undefined (NaN) coefficient")
    return next((name for upper, name in KAPPA_BANDS if value <= upper), "almost perfect")


# --------------------------------------------------------------------------- per-item views


def majority_label(labels: Iterable[Hashable]) -> Optional[Hashable]:
    """The most frequent label, or None on a tie or when there is no label.

    Example:
        >>> majority_label([1, 1, 0]), majority_label([1, 0])
        (1, None)
    """
    top = Counter(labels).most_common(2)
    return None if not top or (len(top) == 2 and top[0][1] == top[1][1]) else top[0][0]


def unanimity(ratings: Ratings) -> dict:
    """How often items with 2+ ratings were labelled unanimously: ``{"overall": rate, "per_class": {label: rate}}``,
    per class among the items whose majority label is that class (tied items count in ``overall`` only).

    Example:
        >>> unanimity([{"x": 1, "y": 1}, {"x": 1, "y": 0, "z": 1}, {"x": 0, "y": 0}])
        {'overall': 0.6666666666666666, 'per_class': {0: 1.0, 1: 0.5}}
    """
    items = [list(item.values()) for item in ratings if len(item) >= 2]
    if not items:
        raise ArgumentError("unanimity needs at least one item with 2 or more ratings")
    unanimous = [len(set(labels)) == 1 for labels in items]
    by_class: dict[Hashable, list[bool]] = {}
    for labels, is_unanimous in zip(items, unanimous):
        majority = majority_label(labels)
        if majority is not None:
            by_class.setdefault(majority, []).append(is_unanimous)
    per_class = {c: sum(by_class[c]) / len(by_class[c]) for c in ordered_labels(by_class)}
    return {"overall": sum(unanimous) / len(unanimous), "per_class": per_class}


def annotator_bias(ratings: Ratings) -> dict[Hashable, float]:
    """Each annotator's mean signed deviation from the item majority (numeric or bool labels):
    ``{annotator: mean(label - majority)}``.

    Items whose majority is tied are skipped; annotators with no counted item
    are left out. For binary labels, a positive bias means the annotator marks
    the positive class more often than the majority does.

    Example:
        >>> annotator_bias([{"x": 1, "y": 0, "z": 0}, {"x": 1, "y": 1, "z": 1}])
        {'x': 0.5, 'y': 0.0, 'z': 0.0}
    """
    deviations: dict[Hashable, list[float]] = {}
    for item in ratings:
        majority = majority_label(item.values())
        if majority is None:
            continue
        for annotator, label in item.items():
            deviations.setdefault(annotator, []).append(float(label) - float(majority))
    return {a: sum(d) / len(d) for a, d in sorted(deviations.items(), key=lambda kv: str(kv[0]))}


def item_entropy(labels: Iterable[Hashable]) -> float:
    """Shannon entropy, in bits, of the label distribution of one item.

    Example:
        >>> round(item_entropy([1, 1, 0]), 4), item_entropy([1, 1])
        (0.9183, 0.0)
    """
    counts = Counter(labels)
    total = sum(counts.values())
    if total == 0:
        raise ArgumentError("item_entropy needs at least one label")
    return sum(n / total * math.log2(total / n) for n in counts.values())


def hard_cases(ratings: Ratings, threshold: float = 0.5) -> list[int]:
    """Indices of items whose label entropy exceeds `threshold` bits (Yor-Sarc's protocol).

    Example:
        >>> hard_cases([{"x": 1, "y": 1, "z": 1}, {"x": 1, "y": 0, "z": 1}])
        [1]
    """
    return [i for i, item in enumerate(ratings) if item and item_entropy(item.values()) > threshold]


# --------------------------------------------------------------------------- spans


def span_agreement(annotator_spans: Sequence[Mapping[Hashable, Iterable[int]]],
                   text_lengths: Sequence[int]) -> dict[str, float]:
    """Character-level agreement between span annotators, given per text ``{annotator: offsets they marked}`` (an
    empty set: "marked nothing") and each text's length.

    ``{"mean_pairwise_f1": ..., "char_kappa": ...}``: the mean `char_f1`
        (SemEval policy, symmetric) over every (text, annotator pair), and the
        mean pairwise Cohen's kappa where each character of a text is one item
        labelled in (1) / out (0) by each of its annotators. Either is NaN when
        no text has two annotators / no pair has a defined kappa.

    Example:
        >>> span_agreement([{"x": {0, 1}, "y": {1, 2}}], [4])
        {'mean_pairwise_f1': 0.5, 'char_kappa': 0.0}
    """
    if len(annotator_spans) != len(text_lengths):
        raise ValueError(f"annotator_spans and text_lengths differ in length: "
                         f"{len(annotator_spans)} != {len(text_lengths)}")
    f1s, char_ratings = [], []
    for t, (marks, length) in enumerate(zip(annotator_spans, text_lengths)):
        marks = {a: set(offsets) for a, offsets in marks.items()}
        for a, offsets in marks.items():
            if any(not 0 <= i < length for i in offsets):
                raise ArgumentError(f"text {t}: annotator {a!r} marks an offset outside [0, {length})")
        f1s += [char_f1(marks[a], marks[b]) for a, b in combinations(marks, 2)]
        char_ratings += [{a: int(i in offsets) for a, offsets in marks.items()} for i in range(length)]
    kappas = [k for k in cohen_kappa_pairwise(char_ratings).values() if not math.isnan(k)]
    return {"mean_pairwise_f1": sum(f1s) / len(f1s) if f1s else math.nan,
            "char_kappa": sum(kappas) / len(kappas) if kappas else math.nan}


def _categories(items: Ratings, categories: Optional[Sequence[Hashable]]) -> list:
    seen = {lab for item in items for lab in item.values()}
    if categories is None:
        return ordered_labels(seen)
    unknown = seen - set(categories)
    if unknown:
        raise ArgumentError(f"label(s) {sorted(unknown, key=str)} not in categories {list(categories)}")
    return list(categories)
