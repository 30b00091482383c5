"""One ratings table's statistics, JSON-ready: coefficients with bootstrap intervals, bias, entropy, spans.

Point estimates come from `kold_span.agreement.coefficients`, intervals from `bootstrap.ItemResamples`.
"""
from __future__ import annotations

import math
from collections import Counter
from itertools import combinations
from typing import Any, Optional, Sequence

from kold_span import agreement
from kold_span.agreement.bootstrap import DEFAULT_N_BOOT, ItemResamples
from kold_span.agreement.coefficients import KAPPA_LEVELS, Ratings
from kold_span.agreement.ratings import RatingsTable
from kold_span.data.example import Example, spans_to_offsets

HARD_THRESHOLD = 0.5  # bits, as `agreement.hard_cases`
MAX_HARD_LISTED = 50
TEXT_CHARS = 80


def label_stats(ratings: Ratings, n_boot: int = DEFAULT_N_BOOT, seed: int = 0, pair_cis: int = 0,
                level: str = "nominal", weights: Optional[str] = None) -> dict[str, Any]:
    """Items, annotators, the coefficients of `level`, unanimity and hard cases of one table, JSON-ready; a coefficient
    undefined on this table, or not computed at this level, is None.

    `pair_cis` pairs (most shared items first) get an interval of their own. `level` is Krippendorff's level of
    measurement; Fleiss' kappa is computed at "nominal" only, Cohen's kappa (with `weights`, see
    `agreement.cohen_kappa_pairwise`) at the levels of `KAPPA_LEVELS`.

    Example:
        >>> # a rates 1 0 1, b rates 1 0 0: agreement 2/3, chance (2/3)(1/3) + (1/3)(2/3) = 4/9, kappa 0.4
        >>> stats = label_stats([{"a": 1, "b": 1}, {"a": 0, "b": 0}, {"a": 1, "b": 0}], n_boot=20)
        >>> stats["n_items"], stats["hard_cases"], round(stats["cohen"]["mean"], 6), stats["unanimity"]["overall"]
        (3, 1, 0.4, 0.6666666666666666)
    """
    rated = Counter(a for item in ratings for a in item)
    multi = [item for item in ratings if len(item) >= 2]
    label_counts = Counter(v for item in ratings for v in item.values())
    stats: dict[str, Any] = {
        "n_items": len(ratings), "n_items_multi": len(multi), "n_annotators": len(rated),
        "n_ratings": sum(rated.values()),
        "label_counts": {str(lab): label_counts[lab] for lab in agreement.ordered_labels(label_counts)},
        "fleiss": None, "cohen": None, "krippendorff": None, "unanimity": None,
        "hard_cases": len(agreement.hard_cases(ratings, HARD_THRESHOLD)),
    }
    if not multi:
        return stats
    if level == "nominal":
        sizes = Counter(len(item) for item in multi)
        modal = max(sizes, key=lambda n: (sizes[n], n))  # the items `agreement.fleiss_kappa` keeps
        fleiss = agreement.fleiss_kappa(ratings)
        stats["fleiss"] = {"value": _number(fleiss), "band": _band(fleiss), "raters_per_item": modal,
                           "n_items_used": sizes[modal]}
    kappas = agreement.cohen_kappa_pairwise(ratings, weights) if level in KAPPA_LEVELS else {}
    shared = Counter(pair for item in ratings for pair in combinations(sorted(item, key=str), 2))
    by_shared = sorted(kappas, key=lambda p: (-shared[p], str(p[0]), str(p[1])))
    intervals = ItemResamples(ratings, level, weights).run(n_boot, seed, by_shared[:pair_cis])
    if level in KAPPA_LEVELS:
        defined = [k for k in kappas.values() if not math.isnan(k)]
        mean = sum(defined) / len(defined) if defined else math.nan  # as `agreement.mean_pairwise_cohen`
        pair_intervals = intervals["pairs"]
        stats["cohen"] = {
            "weights": weights, "mean": _number(mean), "ci": _interval(intervals["mean_cohen"], mean),
            "band": _band(mean), "n_pairs": len(kappas), "n_pairs_defined": len(defined),
            "pairs": [{"a": a, "b": b, "n_items": shared[(a, b)], "kappa": _number(kappas[(a, b)]),
                       "ci": _interval(pair_intervals[(a, b)], kappas[(a, b)]) if (a, b) in pair_intervals else None}
                      for a, b in by_shared],
        }
    alpha = agreement.krippendorff_alpha(ratings, level) if len(label_counts) > 1 else math.nan
    stats["krippendorff"] = {"level": level, "value": _number(alpha), "ci": _interval(intervals["alpha"], alpha),
                             "band": _band(alpha)}
    unanimity = agreement.unanimity(ratings)
    stats["unanimity"] = {"overall": unanimity["overall"],
                          "per_class": {str(c): rate for c, rate in unanimity["per_class"].items()}}
    return stats


def bias_stats(ratings: Ratings) -> Optional[dict[str, Any]]:
    """Each annotator's mean (label − majority) with their item count; None unless labels are bool or numbers."""
    values = {lab for item in ratings for lab in item.values()}
    if not values or not all(isinstance(v, bool) for v in values) and not all(agreement.is_number(v) for v in values):
        return None
    bias = agreement.annotator_bias(ratings)
    rated = Counter(a for item in ratings for a in item)
    ranked = sorted(bias, key=lambda a: (-abs(bias[a]), -rated[a], str(a)))
    return {"annotators": [{"annotator": a, "bias": bias[a], "n_items": rated[a]} for a in ranked],
            "mean_abs": sum(abs(b) for b in bias.values()) / len(bias) if bias else None}


def entropy_stats(table: RatingsTable) -> dict[str, Any]:
    """Per-item label entropy (items with 2+ ratings) and the hard cases (entropy > HARD_THRESHOLD)."""
    entropies = [agreement.item_entropy(item.values()) for item in table.ratings]
    hard = sorted(agreement.hard_cases(table.ratings, HARD_THRESHOLD), key=lambda i: -entropies[i])
    listed = [{"id": table.examples[i].id, "text": _truncate(table.examples[i].text),
               "entropy": entropies[i],
               "labels": _label_counts(table.ratings[i].values())}
              for i in hard[:MAX_HARD_LISTED]]
    return {"threshold": HARD_THRESHOLD,
            "values": [e for e, item in zip(entropies, table.ratings) if len(item) >= 2],
            "hard_cases": {"count": len(hard), "listed": listed}}


def span_stats(examples: Sequence[Example], span_type: str) -> Optional[dict[str, Any]]:
    """Character-level agreement (`agreement.span_agreement`) on texts with 2+ span annotators."""
    marks, lengths = [], []
    for example in examples:
        by_annotator: dict[str, set[int]] = {}
        for annotation in example.annotations:
            if span_type in annotation.spans and annotation.annotator not in by_annotator:
                by_annotator[annotation.annotator] = spans_to_offsets(annotation.spans[span_type])
        if len(by_annotator) >= 2:
            marks.append(by_annotator)
            lengths.append(len(example.text))
    if not marks:
        return None
    result = agreement.span_agreement(marks, lengths)
    return {"span_type": span_type, "n_texts": len(marks), "n_annotations": sum(len(m) for m in marks),
            "mean_pairwise_f1": _number(result["mean_pairwise_f1"]),
            "char_kappa": _number(result["char_kappa"]), "band": _band(result["char_kappa"])}


def _number(value: float) -> Optional[float]:
    """None for NaN (JSON has no NaN), else the float."""
    return None if value is None or math.isnan(value) else float(value)


def _interval(ci: tuple[float, float], estimate: float) -> Optional[list[float]]:
    """The interval as a list; None when it, or the point estimate it belongs to, is undefined."""
    # A resample can define what the data leave undefined (an item drawn twice makes a pair
    # "share 2 items"); an interval around an undefined estimate would mislead.
    return None if math.isnan(estimate) or any(math.isnan(x) for x in ci) else [ci[0], ci[1]]


def _band(value: float) -> Optional[str]:
    return None if value is None or math.isnan(value) else agreement.interpret_kappa(value)


def _truncate(text: str, limit: int = TEXT_CHARS) -> str:
    """The text on one line, cut to `limit` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _label_counts(labels) -> dict[str, int]:
    """How often each label occurs, keyed by its text, in label order (numbers as numbers)."""
    counts = Counter(labels)
    return {str(lab): counts[lab] for lab in agreement.ordered_labels(counts)}
