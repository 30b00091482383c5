"""Agreement report of a corpus's raw annotations: `kold-span agreement FILE --format NAME --out DIR`.

The path reads top to bottom: a corpus reader gives examples with per-annotator
`Annotation`s → `ratings_table` turns one label into a ratings table (per item,
annotator → label; the format of `kold_span.agreement`) → `build_report` computes the
coefficients with `kold_span.agreement` → `write_report` writes report.md,
report.json, kappa_heatmap.png and entropy_hist.png.

Labels may be bool, str, int or float (one kind per label). They are categories unless
`level` says otherwise: at ``"nominal"`` the report gives Fleiss' kappa, Cohen's kappa and
alpha; at ``"ordinal"`` a weighted Cohen's kappa (`weights`, linear or quadratic) and the
ordinal alpha; at ``"interval"`` and ``"ratio"`` alpha alone, since a kappa treats labels
as categories or ranks, not as amounts.

Bootstrap intervals resample items. Calling `mean_pairwise_cohen` once per resample
is far too slow on a crowd corpus with thousands of annotator pairs (timings in
docs/PERSPECTIVES.md), so each resample is scored from per-item count tables instead:
a resample is a vector of item weights (how often each item was drawn), and every
pair's contingency counts and the coincidence counts of Krippendorff's alpha are sums
over items weighted by it. The draws are those of `agreement.bootstrap_ci` (same
generator, same order), so the alpha interval equals
`bootstrap_ci(ratings, partial(krippendorff_alpha, level=level))` at every level (the
tests check this).

For Cohen's kappa a pair counts in a resample only when it shares 2+ *distinct* items
there, as it must in the data. `bootstrap_ci(ratings, mean_pairwise_cohen)` would also
count a pair whose one shared item was drawn twice (its kappa is then 0 or undefined);
on a crowd table most pairs share one item, and that pulls the interval away from the
estimate. The tests check these intervals against a plain loop over `bootstrap_ci`'s
draws with that rule written out. Point estimates always come from `kold_span.agreement`.

Example:
    >>> from kold_span import corpora
    >>> examples = corpora.read("multipico", "tests/fixtures/corpora/multipico")  # doctest: +SKIP
    >>> report = build_report(examples, group_by="lang", n_boot=200)  # doctest: +SKIP
    >>> write_report(report, "out/agreement")  # doctest: +SKIP
"""
from __future__ import annotations

import io
import json
import math
import statistics
import warnings
from collections import Counter
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import IO, Any, Hashable, Mapping, Optional, Sequence, Union

from kold_span import agreement
from kold_span.data.atomic import atomic_write, write_text_atomic
from kold_span.data.example import Example, spans_to_offsets
from kold_span.errors import ArgumentError, DataError

Ratings = list[dict[str, Hashable]]
LabelKind = str  # "bool", "number" or "text": one per label, see `label_kind`

DEFAULT_N_BOOT = 1000
CONFIDENCE = 0.95
HARD_THRESHOLD = 0.5  # bits, as `agreement.hard_cases`
MAX_HARD_LISTED = 50
TEXT_CHARS = 80
CROWD = 30  # more annotators than this: plots and tables show the busiest ones only
MAX_PAIRS_LISTED = 30
MAX_PAIR_CIS = 100  # pairs (most shared items first) that get a bootstrap interval of their own
MAX_BIASED_LISTED = 10
MIN_BIAS_ITEMS = 10
# Upper bound on the floats of one block of resamples (pair counts × resamples), ~160 MB.
_BLOCK_FLOATS = 20_000_000
FORMATS = ("kold", "multipico", "toxic_spans_raw", "jsonl")
KAPPA_LEVELS = ("nominal", "ordinal")  # the levels with a Cohen's kappa (weighted at ordinal)
DEFAULT_WEIGHTS = "quadratic"  # of the weighted kappa at level ordinal
MAX_LABELS_LISTED = 20  # labels whose counts report.md lists (all are in report.json)
FILES = ("report.md", "report.json", "kappa_heatmap.png", "entropy_hist.png")


# --------------------------------------------------------------------------- examples → ratings table


@dataclass
class RatingsTable:
    """One label's ratings (items = examples with at least one rating) and what was left out."""

    label: str
    ratings: Ratings
    examples: list[Example]  # aligned with `ratings`
    value_kind: Optional[LabelKind] = None  # of every value (None when nothing was rated)
    unrated_examples: int = 0  # examples with no rating of the label
    missing_values: int = 0  # annotations without the label, or with None
    duplicate_annotations: int = 0  # an annotator's second annotation of one example (the first is kept)


def label_kind(value: Any) -> Optional[LabelKind]:
    """"bool", "number" (int or float) or "text" (str); None for anything else (a list, a dict).

    Example:
        >>> label_kind(True), label_kind(3), label_kind(0.5), label_kind("yes"), label_kind(["a"])
        ('bool', 'number', 'number', 'text', None)
    """
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "text" if isinstance(value, str) else None


def default_label(examples: Sequence[Example]) -> str:
    """The first annotation label key (in order of appearance) whose values are single bool, str or numbers.

    None values are allowed (they mean "not labelled"); a key with any list or dict
    value (KOLD's TGT, GRP) is skipped.

    Example:
        >>> from kold_span.data import Annotation
        >>> ex = Example(id="1", text="t", annotations=[Annotation("a", {"TGT": ["group"], "OFF": True})])
        >>> default_label([ex])
        'OFF'
    """
    kinds: dict[str, set[type]] = {}
    for example in examples:
        for annotation in example.annotations:
            for key, value in annotation.labels.items():
                kinds.setdefault(key, set()).add(type(value))
    for key, types in kinds.items():
        present = types - {type(None)}
        if present and present <= {bool, str, int, float}:
            return key
    raise DataError(f"no annotation label holds single bool, str, int or float values (label keys seen: "
                    f"{sorted(kinds)}); the corpus may carry no per-annotator labels")


def default_span_type(examples: Sequence[Example]) -> Optional[str]:
    """The first span type found in the annotations, or None when no annotation has spans."""
    for example in examples:
        for annotation in example.annotations:
            for name in annotation.spans:
                return name
    return None


def ratings_table(examples: Sequence[Example], label: str) -> RatingsTable:
    """Per example, annotator → value of `label`; examples nobody labelled are left out.

    None and a float NaN (how table exports write an empty cell) mean "not labelled".

    Raises:
        DataError: a value of `label` is not a single bool, str or number, or the values
            mix kinds (``1`` and ``"1"``, or ``True`` and ``1``, would count as one label or two).
    """
    table = RatingsTable(label=label, ratings=[], examples=[])
    first: Optional[str] = None  # where the first value was seen, for the error on a mix of kinds
    for example in examples:
        item: dict[str, Hashable] = {}
        for annotation in example.annotations:
            value = annotation.labels.get(label)
            where = f"example {example.id!r} (annotator {annotation.annotator!r})"
            if value is None or (isinstance(value, float) and math.isnan(value)):
                table.missing_values += 1
                continue
            kind = label_kind(value)
            if kind is None:
                raise DataError(f"label {label!r} of {where} is a {type(value).__name__}; agreement needs one "
                                f"value per annotator, pick a bool, str or number label with --label")
            if table.value_kind is None:
                table.value_kind, first = kind, f"{where}: {value!r}"
            elif kind != table.value_kind:
                raise DataError(f"label {label!r} mixes kinds of values: {first} is {table.value_kind}, {where}: "
                                f"{value!r} is {kind}; write every value of the label as one kind")
            if annotation.annotator in item:
                table.duplicate_annotations += 1
                continue
            item[annotation.annotator] = value
        if item:
            table.ratings.append(item)
            table.examples.append(example)
        else:
            table.unrated_examples += 1
    return table


# --------------------------------------------------------------------------- bootstrap over items


class ItemResamples:
    """Bootstrap distributions of pairwise Cohen's kappa and Krippendorff's alpha at one level.

    Each resample draws len(ratings) items with replacement, exactly as
    `agreement.bootstrap_ci` does with the same seed, and scores it from per-item
    counts (see the module docstring). A pair's kappa is defined in a resample when
    the pair shares 2+ distinct items there. Kappas are computed at the levels of
    `KAPPA_LEVELS` only, weighted by `weights` (None: unweighted).
    """

    def __init__(self, ratings: Ratings, level: str = "nominal", weights: Optional[str] = None) -> None:
        import numpy as np
        from scipy import sparse

        if level not in agreement.LEVELS:
            raise ArgumentError(f"level must be one of {agreement.LEVELS}, got {level!r}")
        self.n_items = len(ratings)
        self.level = level
        if level == "nominal":
            labels = agreement.ordered_labels(lab for item in ratings for lab in item.values())
        else:
            labels = agreement.numeric_labels(ratings, f"Krippendorff's alpha at level {level!r}")
        code = {lab: i for i, lab in enumerate(labels)}
        k = self.n_labels = len(labels)
        self.values = np.array(labels if level != "nominal" else range(k), dtype=float)
        self.disagreement = _kappa_disagreement(k, weights)
        # Per pair, rows: shared items, weighted disagreements, the first annotator's label counts, the second's.
        self.width = 2 + 2 * k
        self.pairs: list[tuple[str, str]] = []
        index: dict[tuple[str, str], int] = {}
        rows: list[int] = []
        cols: list[int] = []
        data: list[float] = []
        # Per pairable item (2+ ratings): its label counts, and (ordinal) its coincidences or
        # (other levels, whose distances are fixed) its summed distances, as the package adds them up.
        counts_rows, counts_cols, counts_data = [], [], []
        coincidence_rows, coincidence_cols, coincidence_data = [], [], []
        self.item_distance = np.zeros(self.n_items)
        for i, item in enumerate(ratings):
            if level in KAPPA_LEVELS:
                for a, b in combinations(sorted(item, key=str), 2):
                    if (a, b) not in index:
                        index[(a, b)] = len(self.pairs)
                        self.pairs.append((a, b))
                    base = index[(a, b)] * self.width
                    la, lb = code[item[a]], code[item[b]]
                    rows += [base, base + 1, base + 2 + la, base + 2 + k + lb]
                    data += [1.0, float(self.disagreement[la, lb]), 1.0, 1.0]
                    cols += [i] * 4
            if len(item) < 2:
                continue
            present = Counter(code[lab] for lab in item.values())
            codes = np.array(sorted(present))
            counts = np.array([present[c] for c in codes], dtype=float)
            counts_rows += codes.tolist()
            counts_cols += [i] * len(codes)
            counts_data += counts.tolist()
            if level == "ordinal":
                pairs = (np.outer(counts, counts) - np.diag(counts)) / (len(item) - 1)
                coincidence_rows += (codes[:, None] * k + codes[None, :]).ravel().tolist()
                coincidence_cols += [i] * len(codes) ** 2
                coincidence_data += pairs.ravel().tolist()
            else:
                distances = _distances(level, self.values[codes][:, None], self.values[codes][None, :])
                self.item_distance[i] = counts @ distances @ counts / (len(item) - 1)
        self.pair_index = index
        self.pair_counts = sparse.csr_matrix((data, (rows, cols)), shape=(len(self.pairs) * self.width, self.n_items))
        # Pair × item incidence: the rows of shared-item counts.
        self.pair_items = self.pair_counts[::self.width]
        self.value_counts = sparse.csr_matrix((counts_data, (counts_rows, counts_cols)), shape=(k, self.n_items))
        self.coincidences = sparse.csr_matrix((coincidence_data, (coincidence_rows, coincidence_cols)),
                                              shape=(k * k, self.n_items))
        # Ratio distances are fixed: one k × k matrix. (Interval ones reduce to moments, nominal ones to counts.)
        self.ratio_distances = _distances("ratio", self.values[:, None], self.values[None, :]) if level == "ratio" \
            else None

    def run(self, n_boot: int, seed: int, tracked: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
        """Resample `n_boot` times; percentile intervals of the mean kappa, alpha and each tracked pair.

        Returns:
            ``{"mean_cohen": (low, high), "alpha": (low, high), "pairs": {pair: (low, high)}}``;
            ``(nan, nan)`` where no resample gave a defined value (always, for kappas at
            interval and ratio levels).
        """
        import numpy as np

        rng = np.random.default_rng(seed)
        tracked_rows = [self.pair_index[p] for p in tracked]
        per_resample = self.pair_counts.shape[0] + (4 * self.n_labels ** 2 if self.level == "ordinal" else 0)
        block = max(1, min(n_boot, _BLOCK_FLOATS // max(1, per_resample)))
        means, alphas, pair_values = [], [], []
        done = 0
        while done < n_boot and self.n_items:
            size = min(block, n_boot - done)
            weights = np.empty((self.n_items, size))
            for j in range(size):
                weights[:, j] = np.bincount(rng.integers(0, self.n_items, size=self.n_items), minlength=self.n_items)
            kappas = self._kappas(weights)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a resample without any defined pair
                means.append(np.nanmean(kappas, axis=0) if len(kappas) else np.full(size, np.nan))
            pair_values.append(kappas[tracked_rows])
            alphas.append(self.alpha(weights))
            done += size
        if not means:
            nan = (math.nan, math.nan)
            return {"mean_cohen": nan, "alpha": nan, "pairs": {p: nan for p in tracked}}
        pair_values = np.concatenate(pair_values, axis=1)
        return {"mean_cohen": _percentile_interval(np.concatenate(means)),
                "alpha": _percentile_interval(np.concatenate(alphas)),
                "pairs": {p: _percentile_interval(pair_values[r]) for r, p in enumerate(tracked)}}

    def _kappas(self, weights):
        """Cohen's kappa of every pair (rows) in every resample (columns); NaN where undefined."""
        import numpy as np

        k = self.n_labels
        counts = (self.pair_counts @ weights).reshape(len(self.pairs), self.width, weights.shape[1])
        n, observed = counts[:, 0], counts[:, 1]
        # Σ_ij a_i w_ij b_j: the disagreement expected from the two annotators' label counts, times n.
        chance = np.einsum("pib,ij,pjb->pb", counts[:, 2:2 + k], self.disagreement, counts[:, 2 + k:], optimize=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            # 1 - Σ w·O / Σ w·E, with O the pair's counts and E = outer(a, b) / n.
            kappas = 1 - n * observed / chance
        distinct = self.pair_items @ (weights > 0).astype(float)
        kappas[distinct < 2] = np.nan  # as in the data: a pair needs 2+ shared items
        return kappas

    def alpha(self, weights):
        """Krippendorff's alpha of each resample (columns of item weights), as the `krippendorff` package computes it.

        ``1 - Σ o·d / Σ e·d``, with the coincidences ``o`` and their chance
        expectation ``e = (n_v n_vᵀ - diag n_v) / (n - 1)`` summed over the drawn items.
        """
        import numpy as np

        n_v = self.value_counts @ weights  # pairable values per label and resample
        n = n_v.sum(axis=0)
        if self.level == "ordinal":
            k = self.n_labels
            distances = _ordinal_distances(n_v)
            observed = ((self.coincidences @ weights).reshape(k, k, -1) * distances).sum(axis=(0, 1))
            chance = np.einsum("ib,ijb,jb->b", n_v, distances, n_v, optimize=True)
        else:
            observed = self.item_distance @ weights
            if self.level == "nominal":
                chance = n * n - (n_v ** 2).sum(axis=0)
            elif self.level == "interval":
                # Σ_ij n_i n_j (v_i - v_j)² = 2 (n Σ n_i v_i² - (Σ n_i v_i)²); centred values keep it exact.
                centred = self.values - self.values.mean()
                chance = 2 * (n * ((centred ** 2) @ n_v) - (centred @ n_v) ** 2)
            else:
                chance = np.einsum("ib,ij,jb->b", n_v, self.ratio_distances, n_v, optimize=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1 - observed / (chance / (n - 1))


def _kappa_disagreement(k: int, weights: Optional[str]):
    """The k × k disagreement weights of Cohen's kappa over ranks: 1 off the diagonal, |i - j| or (i - j)²."""
    import numpy as np

    ranks = np.arange(k, dtype=float)
    steps = np.abs(ranks[:, None] - ranks[None, :])
    if weights is None:
        return (steps > 0).astype(float)
    if weights not in agreement.KAPPA_WEIGHTS:
        raise ArgumentError(f"kappa weights must be one of {agreement.KAPPA_WEIGHTS}, got {weights!r}")
    return steps if weights == "linear" else steps ** 2


def _distances(level: str, a, b):
    """Krippendorff's squared distance between values `a` and `b` (arrays) at a level with fixed distances."""
    import numpy as np

    if level == "nominal":
        return (a != b).astype(float)
    if level == "interval":
        return (a - b) ** 2
    total = np.broadcast_to(a + b, np.broadcast(a, b).shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total != 0, (a - b) / total, 0.0) ** 2


def _ordinal_distances(n_v):
    """Krippendorff's ordinal distances per resample, [k, k, resamples], from the pairable counts n_v [k, resamples].

    d(i, j) = (n_i + ... + n_j - (n_i + n_j) / 2)² for ranks i <= j.
    """
    import numpy as np

    k = len(n_v)
    cumulative = np.cumsum(n_v, axis=0)
    between = cumulative[None, :, :] - cumulative[:, None, :] + n_v[:, None, :]  # Σ n_i..n_j where i <= j
    upper = np.triu(np.ones((k, k), dtype=bool))[:, :, None]
    between = np.where(upper, between, between.transpose(1, 0, 2))
    return (between - (n_v[:, None, :] + n_v[None, :, :]) / 2) ** 2


def _percentile_interval(values) -> tuple[float, float]:
    """The central CONFIDENCE interval of the defined values, as `agreement.bootstrap_ci` takes it."""
    import numpy as np

    values = values[~np.isnan(values)]
    if not len(values):
        return (math.nan, math.nan)
    alpha = 1 - CONFIDENCE
    low, high = np.percentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return (float(low), float(high))


# --------------------------------------------------------------------------- statistics


def label_stats(ratings: Ratings, n_boot: int = DEFAULT_N_BOOT, seed: int = 0, pair_cis: int = 0,
                level: str = "nominal", weights: Optional[str] = None) -> dict[str, Any]:
    """Items, annotators, the coefficients of `level`, unanimity and hard cases of one table.

    Args:
        ratings: the ratings table.
        n_boot: bootstrap resamples (of items) for the intervals.
        seed: seed of the resampling.
        pair_cis: how many pairs (most shared items first) get an interval of their own.
        level: Krippendorff's level of measurement; Fleiss' kappa is computed at "nominal"
            only, Cohen's kappa at the levels of `KAPPA_LEVELS`.
        weights: the weights of Cohen's kappa (None: unweighted), see `agreement.cohen_kappa_pairwise`.

    Returns:
        A JSON-ready dict; a coefficient that is undefined on this table, or not computed
        at this level, is None.
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


def build_report(examples: Sequence[Example], label: Optional[str] = None, span_type: Optional[str] = None,
                 group_by: Optional[str] = None, n_boot: int = DEFAULT_N_BOOT, seed: int = 0,
                 level: str = "nominal", weights: Optional[str] = None) -> dict[str, Any]:
    """Agreement statistics of one label (and one span type) of examples with raw annotations.

    Args:
        examples: examples whose `annotations` hold each annotator's labels/spans.
        label: the annotation label to study (default: `default_label`).
        span_type: the span type for character-level agreement (default: the first
            one present; no span section when the annotations carry no spans).
        group_by: a `meta` key (e.g. "lang"); the label statistics are repeated per value.
        n_boot: bootstrap resamples of items for the 95% intervals.
        seed: seed of the resampling (same seed, same intervals).
        level: the level of measurement of the label (`agreement.LEVELS`): "nominal"
            (categories, the default), "ordinal", "interval" or "ratio" (numbers).
        weights: at level "ordinal", the weights of Cohen's kappa, "linear" or
            "quadratic" (default `DEFAULT_WEIGHTS`); no other level takes weights.

    Returns:
        A JSON-ready dict, the input of `write_report`.

    Raises:
        DataError: no example has annotations, the label is not a single value per
            annotator or mixes kinds, or a level other than nominal meets a label that is not a number.
        ArgumentError: `n_boot` below 1, an unknown level or weights, weights at a level other
            than ordinal, or no annotation holds `label` or `span_type`.
    """
    if not any(example.annotations for example in examples):
        raise DataError("no example carries per-annotator annotations; read the corpus with a reader "
                        "that keeps them (kold, multipico, toxic_spans_raw, or jsonl written from one)")
    if n_boot < 1:
        raise ArgumentError(f"n_boot must be at least 1, got {n_boot}")
    weights = _level_weights(level, weights)
    label = label or default_label(examples)
    table = ratings_table(examples, label)
    if not table.ratings:
        raise ArgumentError(f"no annotation carries the label {label!r}")
    if level != "nominal" and table.value_kind != "number":
        example, value = next((ex, v) for ex, item in zip(table.examples, table.ratings) for v in item.values())
        raise DataError(f"level {level!r} needs numeric labels, but label {label!r} holds {table.value_kind} values "
                        f"(example {example.id!r}: {value!r}); use --level nominal, or write the labels as numbers")
    if span_type is not None:
        known = sorted({name for ex in examples for a in ex.annotations for name in a.spans})
        if span_type not in known:
            raise ArgumentError(f"no annotation marks spans of type {span_type!r}; span types present: "
                                f"{', '.join(known) or 'none'}")
    span_type = span_type or default_span_type(examples)
    stats = label_stats(table.ratings, n_boot, seed, pair_cis=MAX_PAIR_CIS, level=level, weights=weights)
    rated = Counter(a for item in table.ratings for a in item)
    per_item = sorted(len(item) for item in table.ratings)
    report: dict[str, Any] = {
        "label": label,
        "label_kind": table.value_kind,
        "level": level,
        "kappa_weights": weights,
        "n_examples": len(examples),
        "unrated_examples": table.unrated_examples,
        "missing_values": table.missing_values,
        "duplicate_annotations": table.duplicate_annotations,
        "ratings_per_item": {"min": per_item[0], "median": statistics.median(per_item), "max": per_item[-1]},
        "annotator_items": {a: n for a, n in sorted(rated.items(), key=lambda kv: (-kv[1], str(kv[0])))},
        "bootstrap": {"n_boot": n_boot, "seed": seed, "confidence": CONFIDENCE, "unit": "items"},
        **stats,
        "bias": bias_stats(table.ratings),
        "entropy": entropy_stats(table),
        "spans": span_stats(examples, span_type) if span_type else None,
        "groups": None,
    }
    if group_by:
        report["groups"] = {"key": group_by, "rows": _group_rows(table, group_by, n_boot, seed, level, weights)}
    return report


def _level_weights(level: str, weights: Optional[str]) -> Optional[str]:
    """The kappa weights a level uses: `weights` (default `DEFAULT_WEIGHTS`) at ordinal, none elsewhere."""
    if level not in agreement.LEVELS:
        raise ArgumentError(f"level must be one of {agreement.LEVELS}, got {level!r}")
    if weights is not None and weights not in agreement.KAPPA_WEIGHTS:
        raise ArgumentError(f"kappa weights must be one of {agreement.KAPPA_WEIGHTS}, got {weights!r}")
    if level != "ordinal":
        if weights is not None:
            raise ArgumentError(f"kappa weights apply at level 'ordinal' only (a weighted kappa needs ranked "
                                f"labels), got weights {weights!r} at level {level!r}")
        return None
    return weights or DEFAULT_WEIGHTS


def _group_rows(table: RatingsTable, key: str, n_boot: int, seed: int, level: str,
                weights: Optional[str]) -> list[dict[str, Any]]:
    """`label_stats` per value of `meta[key]` (pairs left out to keep the JSON small)."""
    groups: dict[str, Ratings] = {}
    for example, item in zip(table.examples, table.ratings):
        groups.setdefault(str(example.meta.get(key)), []).append(item)
    rows = []
    for value in sorted(groups):
        stats = label_stats(groups[value], n_boot, seed, level=level, weights=weights)
        if stats["cohen"]:
            stats["cohen"] = {k: v for k, v in stats["cohen"].items() if k != "pairs"}
        rows.append({"group": value, **stats})
    return rows


# --------------------------------------------------------------------------- writing


def write_report(report: Mapping[str, Any], out_dir: Union[str, Path]) -> list[Path]:
    """Write report.md, report.json, kappa_heatmap.png and entropy_hist.png into `out_dir`.

    Every file is rendered before the first is written, and each is written whole or not at all
    (`atomic_write`): a report that fails leaves the previous files as they were.

    Returns:
        The paths written.
    """
    out = Path(out_dir)
    paths = [out / name for name in FILES]
    markdown = render_markdown(report)
    data = json.dumps(_json_ready(report), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    heatmap, histogram = io.BytesIO(), io.BytesIO()
    plot_kappa_heatmap(report, heatmap)
    plot_entropy_hist(report, histogram)
    write_text_atomic(paths[0], markdown)
    write_text_atomic(paths[1], data)
    for path, image in zip(paths[2:], (heatmap, histogram)):
        with atomic_write(path, "wb") as f:
            f.write(image.getvalue())
    return paths


def heatmap_annotators(report: Mapping[str, Any]) -> list[str]:
    """The annotators the heatmap shows: all, or the CROWD busiest (most items; ties by id)."""
    return list(report["annotator_items"])[:CROWD]


def plot_kappa_heatmap(report: Mapping[str, Any], target: Union[Path, IO[bytes]]) -> None:
    """The pairwise Cohen's kappa matrix (grey: fewer than 2 shared items, or undefined), as a PNG."""
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    shown = heatmap_annotators(report)
    position = {a: i for i, a in enumerate(shown)}
    matrix = np.full((len(shown), len(shown)), np.nan)
    for pair in (report["cohen"] or {}).get("pairs", []):
        if pair["a"] in position and pair["b"] in position and pair["kappa"] is not None:
            i, j = position[pair["a"]], position[pair["b"]]
            matrix[i, j] = matrix[j, i] = pair["kappa"]
    fig = Figure(figsize=(7.5, 6.5), dpi=90)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    cmap = colormaps["RdBu"].with_extremes(bad="#d9d9d9")
    image = ax.imshow(np.ma.masked_invalid(matrix), cmap=cmap, vmin=-1, vmax=1)
    fig.colorbar(image, ax=ax, label=_kappa_name(report))
    ax.set_xticks(range(len(shown)), [str(a) for a in shown], rotation=90, fontsize=6)
    ax.set_yticks(range(len(shown)), [str(a) for a in shown], fontsize=6)
    if len(shown) <= 12:
        for (i, j), value in np.ndenumerate(matrix):
            if not np.isnan(value):
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8)
    total = report["n_annotators"]
    subtitle = (f"top {len(shown)} of {total} annotators by items labelled" if total > len(shown)
                else f"all {total} annotators")
    if report["level"] not in KAPPA_LEVELS:
        ax.text(0.5, 0.5, f"no kappa at level {report['level']}:\nonly Krippendorff's alpha", ha="center",
                va="center", transform=ax.transAxes, fontsize=10)
    ax.set_title(f"{_kappa_name(report)}, label {report['label']!r}\n{subtitle}; grey: undefined or < 2 shared items",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(target, format="png")


def plot_entropy_hist(report: Mapping[str, Any], target: Union[Path, IO[bytes]]) -> None:
    """Histogram of per-item label entropy with the hard-case threshold, as a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    entropy = report["entropy"]
    values = entropy["values"]
    top = max([1.0] + values)
    fig = Figure(figsize=(6, 3.6), dpi=90)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.hist(values, bins=20, range=(0, top), color="#4878a8", edgecolor="white")
    ax.axvline(entropy["threshold"], color="#c44e52", linestyle="--",
               label=f"hard case: entropy > {entropy['threshold']} ({entropy['hard_cases']['count']} items)")
    ax.set_xlabel("label entropy of an item (bits)")
    ax.set_ylabel("items")
    ax.set_title(f"Item entropy, label {report['label']!r} ({len(values)} items with 2+ ratings)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(target, format="png")


def render_markdown(report: Mapping[str, Any]) -> str:
    """The human-readable report."""
    source = report.get("source", {})
    lines = [f"# Agreement report: label `{report['label']}`", ""]
    if source:
        options = ", ".join(f"{k}={v!r}" for k, v in source.get("reader_options", {}).items()) or "none"
        lines += [f"- Source: `{source['path']}` (reader `{source['format']}`, options: {options})"]
        if source.get("skipped_records"):
            lines += [f"- Bad records skipped by the reader: {source['skipped_records']}"]
    boot = report["bootstrap"]
    lines += [f"- Level of measurement: **{report['level']}** ({_level_note(report)})",
              f"- Bootstrap: {boot['n_boot']} resamples of items, seed {boot['seed']}, "
              f"percentile {boot['confidence']:.0%} intervals", ""]
    lines += _data_section(report) + _coefficient_section(report) + _pairs_section(report)
    lines += _unanimity_section(report) + _bias_section(report) + _hard_case_section(report)
    lines += _span_section(report) + _group_section(report)
    return "\n".join(lines).rstrip() + "\n"


def _level_note(report: Mapping[str, Any]) -> str:
    """What the level means for the coefficients of the report, in a few words."""
    level = report["level"]
    if level == "nominal":
        return "labels are categories: Fleiss' and Cohen's kappa, Krippendorff's alpha"
    if level == "ordinal":
        return (f"labels are ranks: Cohen's kappa with {report['kappa_weights']} weights, "
                f"Krippendorff's ordinal alpha")
    return f"labels are amounts: Krippendorff's {level} alpha; kappas (categories or ranks) are not computed"


def _kappa_name(report: Mapping[str, Any]) -> str:
    """"Cohen's kappa", or "weighted Cohen's kappa (quadratic)" at level ordinal."""
    weights = report.get("kappa_weights")
    return f"weighted Cohen's kappa ({weights})" if weights else "Cohen's kappa"


def _data_section(report: Mapping[str, Any]) -> list[str]:
    per_item = report["ratings_per_item"]
    counts = list(report["label_counts"].items())
    labels = ", ".join(f"`{lab}`: {n}" for lab, n in counts[:MAX_LABELS_LISTED])
    if len(counts) > MAX_LABELS_LISTED:
        labels += f", … (the first {MAX_LABELS_LISTED} in label order; all in report.json)"
    lines = ["## Data", "", "| | |", "|---|---|",
             f"| examples | {report['n_examples']} |",
             f"| items (examples with 1+ rating of `{report['label']}`) | {report['n_items']} |",
             f"| items with 2+ ratings | {report['n_items_multi']} |",
             f"| annotators | {report['n_annotators']} |",
             f"| ratings | {report['n_ratings']} |",
             f"| ratings per item (min / median / max) | "
             f"{per_item['min']} / {per_item['median']:g} / {per_item['max']} |",
             f"| labels ({len(report['label_counts'])}; ratings per label) | {labels} |", ""]
    left_out = [(report["unrated_examples"], "examples without any rating of the label (left out)"),
                (report["missing_values"], "annotations without a value of the label (None counts as not labelled)"),
                (report["duplicate_annotations"], "repeated annotations by one annotator of one example "
                                                  "(the first is kept)")]
    lines += [f"- {n} {what}" for n, what in left_out if n]
    return lines + ([""] if any(n for n, _ in left_out) else [])


def _coefficient_section(report: Mapping[str, Any]) -> list[str]:
    lines = ["## Chance-corrected agreement", "",
             "| coefficient | value | 95% CI | band | items used |", "|---|---|---|---|---|"]
    fleiss, cohen, alpha = report["fleiss"], report["cohen"], report["krippendorff"]
    if fleiss:
        lines.append(f"| Fleiss' kappa | {_fmt(fleiss['value'])} | not computed | {fleiss['band'] or 'n/a'} | "
                     f"the {fleiss['n_items_used']} items with exactly {fleiss['raters_per_item']} ratings "
                     f"(the modal number of raters among the {report['n_items_multi']} items with 2+) |")
    kappa = f"mean pairwise {_kappa_name(report)}"
    if cohen and not cohen["n_pairs"]:
        lines.append(f"| {kappa} | n/a | n/a | n/a | no annotator pair shares 2+ items |")
    elif cohen:
        lines.append(f"| {kappa} | {_fmt(cohen['mean'])} | {_fmt_ci(cohen['ci'])} | "
                     f"{cohen['band'] or 'n/a'} | each pair's shared items; mean over the {cohen['n_pairs_defined']} "
                     f"defined of {cohen['n_pairs']} pairs sharing 2+ items |")
    if alpha:
        lines.append(f"| Krippendorff's alpha ({report['level']}) | {_fmt(alpha['value'])} | {_fmt_ci(alpha['ci'])} | "
                     f"{alpha['band'] or 'n/a'} | all {report['n_items_multi']} items with 2+ ratings "
                     f"(missing ratings allowed) |")
    if not (fleiss or cohen or alpha):
        lines.append("| (none: no item has 2 or more ratings) | | | | |")
    return lines + ["", "Bands: Landis & Koch, simplified (`agreement.interpret_kappa`).", ""]


def _pairs_section(report: Mapping[str, Any]) -> list[str]:
    if report["level"] not in KAPPA_LEVELS:
        return ["## Pairwise Cohen's kappa", "", f"Not computed at level {report['level']}: Cohen's kappa treats "
                f"labels as categories (or, weighted, as ranks). Use --level nominal or ordinal for it.", ""]
    name = _kappa_name(report)
    lines = [f"## Pairwise {name}", "", f"![pairwise {name}](kappa_heatmap.png)", ""]
    shown = heatmap_annotators(report)
    if report["n_annotators"] > len(shown):
        lines += [f"The heatmap shows the {len(shown)} annotators with the most items, of "
                  f"{report['n_annotators']}.", ""]
    cohen = report["cohen"]
    if not cohen or not cohen["pairs"]:
        return lines + ["No annotator pair shares 2 or more items.", ""]
    pairs = cohen["pairs"][:MAX_PAIRS_LISTED]
    if len(cohen["pairs"]) > len(pairs):
        lines += [f"The {len(pairs)} pairs sharing the most items, of {len(cohen['pairs'])} "
                  f"(all pairs are in report.json):", ""]
    lines += ["| annotator A | annotator B | shared items | kappa | 95% CI |", "|---|---|---|---|---|"]
    lines += [f"| {p['a']} | {p['b']} | {p['n_items']} | {_fmt(p['kappa'])} | {_fmt_ci(p['ci'])} |" for p in pairs]
    return lines + [""]


def _unanimity_section(report: Mapping[str, Any]) -> list[str]:
    unanimity = report["unanimity"]
    if not unanimity:
        return []
    lines = ["## Unanimity", "", f"Items with 2+ ratings whose annotators all agree: "
             f"**{unanimity['overall']:.1%}** of {report['n_items_multi']}.", "",
             "| majority class | unanimous |", "|---|---|"]
    lines += [f"| `{c}` | {rate:.1%} |" for c, rate in unanimity["per_class"].items()]
    return lines + ["", "Per class: among items whose majority label is that class "
                        "(tied items only count overall).", ""]


def _bias_section(report: Mapping[str, Any]) -> list[str]:
    lines = ["## Annotator bias", ""]
    bias = report["bias"]
    if bias is None:
        return lines + ["Not computed: the labels are not bool or numbers.", ""]
    rows = bias["annotators"]
    if report["n_annotators"] > CROWD:
        rows = [r for r in rows if r["n_items"] >= MIN_BIAS_ITEMS][:MAX_BIASED_LISTED]
        lines += [f"The {len(rows)} most biased annotators among those with {MIN_BIAS_ITEMS}+ items "
                  f"(all {len(bias['annotators'])} are in report.json)." if rows else
                  f"No annotator has {MIN_BIAS_ITEMS}+ items; all {len(bias['annotators'])} are in report.json.", ""]
    leaning = ("marks `True` more often than the majority" if report.get("label_kind") == "bool"
               else "gives higher values than the majority")
    lines += [f"Bias = mean of (label − item majority) over the annotator's items with a clear majority; "
              f"positive: {leaning}. Mean |bias|: {_fmt(bias['mean_abs'])}.", ""]
    if rows:
        lines += ["| annotator | bias | items |", "|---|---|---|"]
    if rows:
        lines += [f"| {r['annotator']} | {r['bias']:+.3f} | {r['n_items']} |" for r in rows]
    return lines + [""]


def _hard_case_section(report: Mapping[str, Any]) -> list[str]:
    entropy = report["entropy"]
    hard = entropy["hard_cases"]
    lines = ["## Item entropy and hard cases", "", "![item entropy](entropy_hist.png)", "",
             f"Hard cases (label entropy > {entropy['threshold']} bits): **{hard['count']}** of "
             f"{report['n_items']} items."]
    if hard["listed"]:
        more = f" (the {len(hard['listed'])} with the highest entropy)" if hard["count"] > len(hard["listed"]) else ""
        lines += [f"Listed{more}:", "", "| id | entropy | labels | text |", "|---|---|---|---|"]
        lines += [f"| {h['id']} | {h['entropy']:.3f} | "
                  f"{', '.join(f'{lab}: {n}' for lab, n in h['labels'].items())} | {_md_cell(h['text'])} |"
                  for h in hard["listed"]]
    return lines + [""]


def _span_section(report: Mapping[str, Any]) -> list[str]:
    spans = report["spans"]
    if spans is None:
        return []
    return ["## Span agreement", "",
            f"Span type `{spans['span_type']}`, character level, over the {spans['n_texts']} texts with 2+ span "
            f"annotators ({spans['n_annotations']} annotations; a text an annotator left unmarked counts as empty).",
            "", "| measure | value | band |", "|---|---|---|",
            f"| mean pairwise char F1 (SemEval policy) | {_fmt(spans['mean_pairwise_f1'])} | |",
            f"| mean pairwise char kappa (each character an item) | {_fmt(spans['char_kappa'])} | "
            f"{spans['band'] or 'n/a'} |", ""]


def _group_section(report: Mapping[str, Any]) -> list[str]:
    groups = report["groups"]
    if not groups:
        return []
    lines = [f"## By {groups['key']}", "",
             f"The label statistics per value of `meta[{groups['key']!r}]` (each group bootstrapped on its own items).",
             "", f"| {groups['key']} | items | annotators | Fleiss | mean {_kappa_name(report)} [95% CI] | "
             f"Krippendorff alpha ({report['level']}) [95% CI] | unanimity | hard cases |",
             "|---|---|---|---|---|---|---|---|"]
    for row in groups["rows"]:
        fleiss, cohen, alpha, unanimity = row["fleiss"], row["cohen"], row["krippendorff"], row["unanimity"]
        lines.append(f"| {row['group']} | {row['n_items']} | {row['n_annotators']} | "
                     f"{_fmt(fleiss['value']) if fleiss else 'n/a'} | "
                     f"{_fmt_with_ci(cohen['mean'], cohen['ci']) if cohen else 'n/a'} | "
                     f"{_fmt_with_ci(alpha['value'], alpha['ci']) if alpha else 'n/a'} | "
                     f"{format(unanimity['overall'], '.1%') if unanimity else 'n/a'} | {row['hard_cases']} |")
    return lines + [""]


# --------------------------------------------------------------------------- small helpers


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


def _fmt(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _fmt_ci(ci: Optional[Sequence[float]]) -> str:
    return "n/a" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _fmt_with_ci(value: Optional[float], ci: Optional[Sequence[float]]) -> str:
    return _fmt(value) if value is None or ci is None else f"{_fmt(value)} {_fmt_ci(ci)}"


def _truncate(text: str, limit: int = TEXT_CHARS) -> str:
    """The text on one line, cut to `limit` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _label_counts(labels) -> dict[str, int]:
    """How often each label occurs, keyed by its text, in label order (numbers as numbers)."""
    counts = Counter(labels)
    return {str(lab): counts[lab] for lab in agreement.ordered_labels(counts)}


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def _json_ready(value: Any) -> Any:
    """NaN → None and tuples → lists, recursively."""
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


# --------------------------------------------------------------------------- reading, building, writing


def run(path: Union[str, Path], fmt: str, out_dir: Union[str, Path], *,
        reader_options: Optional[Mapping[str, Any]] = None, **options) -> dict[str, Any]:
    """Read a corpus, build its report (`options` go to `build_report`) and write it to `out_dir`."""
    from kold_span import corpora

    reader_options = dict(reader_options or {})
    examples = corpora.read(fmt, path, **reader_options)
    skipped = getattr(corpora.get_reader(fmt), "last_report", None)
    report = {"source": {"path": str(path), "format": fmt, "reader_options": reader_options,
                         "skipped_records": skipped.count if skipped is not None else 0}}
    report.update(build_report(examples, **options))
    write_report(report, out_dir)
    return report


def summary(report: Mapping[str, Any]) -> str:
    """Two lines: the data and the main coefficients."""
    fleiss, cohen, alpha = report["fleiss"], report["cohen"], report["krippendorff"]
    level, weights = report["level"], report["kappa_weights"]
    parts = [f"alpha ({level}) {_fmt_with_ci(alpha['value'], alpha['ci'])}" if alpha else f"alpha ({level}) n/a"]
    if level == "nominal":
        parts.insert(0, f"Fleiss {_fmt(fleiss['value'])}" if fleiss else "Fleiss n/a")
    if level in KAPPA_LEVELS:
        name = f"mean Cohen ({weights})" if weights else "mean Cohen"
        parts.insert(-1, f"{name} {_fmt_with_ci(cohen['mean'], cohen['ci'])}" if cohen else f"{name} n/a")
    unanimity = report["unanimity"]
    return (f"label {report['label']!r}: {report['n_items']} items, {report['n_annotators']} annotators, "
            f"{len(report['label_counts'])} labels, level {level}\n" + "; ".join(parts)
            + (f"; unanimity {unanimity['overall']:.1%}" if unanimity else "")
            + f"; hard cases {report['entropy']['hard_cases']['count']}")
