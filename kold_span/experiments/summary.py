"""A grid's rows summarized: which metrics to show, mean ± sample std per cell, the difference to the reference.

Example:
    >>> mean_std([2, 4, 6, None, float("nan")])
    (4.0, 2.0, 3)
    >>> choose_metrics(["T/accuracy", "T/macro_f1", "S/char_f1"])
    ['T/macro_f1', 'S/char_f1', 'T/accuracy']
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Iterable, Mapping, Optional, Sequence

from kold_span.errors import ArgumentError

# Metrics shown by default, in this order of preference (headline scores first).
DEFAULT_METRIC_KINDS = ("macro_f1", "char_f1", "f1", "balanced_accuracy", "accuracy")
MAX_METRIC_COLUMNS = 6


def metric_names(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every `task/metric` column of the rows, in order of first appearance."""
    return list(dict.fromkeys(key for row in rows for key in row if "/" in key))


def choose_metrics(names: Sequence[str], requested: Optional[Sequence[str]] = None) -> list[str]:
    """The metrics of the table and plot: the requested ones, or the headline ones (at most MAX_METRIC_COLUMNS).

    The default keeps names ending in one of DEFAULT_METRIC_KINDS, ordered by that
    preference and then by task order, so the first (the plotted one) is a macro F1 or a
    span char F1 when the tasks have one.
    """
    if requested:
        missing = [m for m in requested if m not in names]
        if missing:
            raise ArgumentError(f"--metric {', '.join(missing)}: not among the test metrics {', '.join(names)}")
        return list(dict.fromkeys(requested))
    kinds = {kind: rank for rank, kind in enumerate(DEFAULT_METRIC_KINDS)}
    chosen = [n for n in names if n.rsplit("/", 1)[-1] in kinds]
    chosen.sort(key=lambda n: kinds[n.rsplit("/", 1)[-1]])  # stable: task order within a kind
    return chosen[:MAX_METRIC_COLUMNS]


def mean_std(values: Iterable[Any]) -> tuple[Optional[float], Optional[float], int]:
    """Mean, sample standard deviation (n − 1; None below 2 values) and count of the numbers among `values`."""
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not math.isnan(v)]
    if not numbers:
        return None, None, 0
    return statistics.mean(numbers), statistics.stdev(numbers) if len(numbers) > 1 else None, len(numbers)


def summarize(rows: Sequence[Mapping[str, Any]], keys: Sequence[str],
              metrics: Sequence[str]) -> list[dict[str, Any]]:
    """One entry per cell (in row order): values, runs, and per metric mean, std and mean − reference mean.

    The reference is the first cell of the rows (run_grid puts the first value of every
    `--vary` first).
    """
    cells: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        cells.setdefault(row["cell"], []).append(row)
    summary = []
    for name, group in cells.items():
        stats = {m: mean_std(row.get(m) for row in group) for m in metrics}
        summary.append({"cell": name, "values": {k: group[0][k] for k in keys}, "runs": len(group),
                        "mean": {m: s[0] for m, s in stats.items()}, "std": {m: s[1] for m, s in stats.items()}})
    reference = summary[0]["mean"] if summary else {}
    for entry in summary:
        entry["diff"] = {m: None if entry["mean"][m] is None or reference[m] is None
                         else entry["mean"][m] - reference[m] for m in metrics}
    return summary
