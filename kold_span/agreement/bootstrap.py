"""The report's bootstrap engine: intervals of the kappas and alpha from resampled items, scored fast.

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
"""
from __future__ import annotations

import math
import warnings
from collections import Counter
from itertools import combinations
from typing import Any, Optional, Sequence

from kold_span import agreement
from kold_span.agreement.coefficients import KAPPA_LEVELS, Ratings, percentile_interval
from kold_span.errors import ArgumentError

DEFAULT_N_BOOT = 1000
# Resamples a report may ask for: a hundred times the default; its time and its distributions grow with the count.
MAX_N_BOOT = 100_000
CONFIDENCE = 0.95
# Upper bound on the floats of one block of resamples (pair counts × resamples), ~160 MB.
_BLOCK_FLOATS = 20_000_000


class ItemResamples:
    """Bootstrap distributions of pairwise Cohen's kappa and Krippendorff's alpha at one level.

    Each resample draws len(ratings) items with replacement, exactly as
    `agreement.bootstrap_ci` does with the same seed, and scores it from per-item
    counts (see the module docstring). A pair's kappa is defined in a resample when
    the pair shares 2+ distinct items there. Kappas are computed at the levels of
    `KAPPA_LEVELS` only, weighted by `weights` (None: unweighted).

    Example:
        >>> resamples = ItemResamples([{"a": 1, "b": 1}, {"a": 0, "b": 0}, {"a": 0, "b": 0}])
        >>> resamples.pairs, resamples.run(50, seed=0)["mean_cohen"]  # full agreement wherever kappa is defined
        ([('a', 'b')], (1.0, 1.0))
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
        """Resample `n_boot` times; percentile intervals of the mean kappa, alpha and each tracked pair:
        ``{"mean_cohen": (low, high), "alpha": (low, high), "pairs": {pair: (low, high)}}``, ``(nan, nan)`` where no
        resample gave a defined value (always, for kappas at interval and ratio levels)."""
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
        return {"mean_cohen": percentile_interval(np.concatenate(means), 1 - CONFIDENCE),
                "alpha": percentile_interval(np.concatenate(alphas), 1 - CONFIDENCE),
                "pairs": {p: percentile_interval(pair_values[r], 1 - CONFIDENCE) for r, p in enumerate(tracked)}}

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
