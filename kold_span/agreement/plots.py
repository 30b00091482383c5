"""The report's two figures as PNG: the pairwise kappa heatmap and the item-entropy histogram."""
from __future__ import annotations

from pathlib import Path
from typing import IO, Any, Mapping, Union

from kold_span.agreement.coefficients import KAPPA_LEVELS
from kold_span.errors import needs_extra

CROWD = 30  # more annotators than this: plots and tables show the busiest ones only


def heatmap_annotators(report: Mapping[str, Any]) -> list[str]:
    """The annotators the heatmap shows: all, or the CROWD busiest (most items; ties by id).

    Example:
        >>> heatmap_annotators({"annotator_items": {f"r{i}": 100 - i for i in range(40)}})[-2:]
        ['r28', 'r29']
    """
    return list(report["annotator_items"])[:CROWD]


def plot_kappa_heatmap(report: Mapping[str, Any], target: Union[Path, IO[bytes]]) -> None:
    """The pairwise Cohen's kappa matrix (grey: fewer than 2 shared items, or undefined), as a PNG."""
    import numpy as np
    with needs_extra("agreement"):
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
    fig.colorbar(image, ax=ax, label=kappa_name(report))
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
    ax.set_title(f"{kappa_name(report)}, label {report['label']!r}\n{subtitle}; grey: undefined or < 2 shared items",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(target, format="png")


def plot_entropy_hist(report: Mapping[str, Any], target: Union[Path, IO[bytes]]) -> None:
    """Histogram of per-item label entropy with the hard-case threshold, as a PNG."""
    with needs_extra("agreement"):
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


def kappa_name(report: Mapping[str, Any]) -> str:
    """"Cohen's kappa", or "weighted Cohen's kappa (quadratic)" at level ordinal."""
    weights = report.get("kappa_weights")
    return f"weighted Cohen's kappa ({weights})" if weights else "Cohen's kappa"
