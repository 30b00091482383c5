"""The plot of a grid: one metric's mean ± std as grouped bars (results.png; bench/plot_quality.py's too)."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import IO, Any, Mapping, Optional, Sequence, Union

import yaml

from kold_span.config.yaml12 import yaml_load
from kold_span.errors import needs_extra


def value_label(key: str, text: str) -> str:
    """A plot label of one value: `key=value`, but a list of tasks reads as its heads joined by " + ".

    Example:
        >>> value_label("tasks", "[{name: T, kind: sequence, source: T, weight: 0.5}, {name: S, kind: span, source: OFF}]")
        'T (weight=0.5) + S'
        >>> value_label("context", "none")
        'context=none'
    """
    if key == "tasks":
        try:
            tasks = yaml_load(text)
        except yaml.YAMLError:
            tasks = None
        if isinstance(tasks, list) and tasks and all(isinstance(t, dict) and "name" in t for t in tasks):
            def one(task: dict[str, Any]) -> str:
                extra = ", ".join(f"{k}={v}" for k, v in task.items() if k not in ("name", "kind", "source"))
                return f"{task['name']} ({extra})" if extra else str(task["name"])
            return " + ".join(one(t) for t in tasks)
    return f"{key}={text}"


def plot_main_metric(summary: Sequence[Mapping[str, Any]], keys: Sequence[str], metric: str,
                     target: Union[Path, IO[bytes]], reference: bool = True, title: Optional[str] = None) -> None:
    """Grouped bars of one metric: groups are the first key's values, bars the other keys' combinations.

    `reference` draws the first entry's mean as a dashed line; `title` replaces the default one.
    """
    import numpy as np
    with needs_extra("plots"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

    first, rest = keys[0], list(keys[1:])
    groups = list(dict.fromkeys(e["values"][first] for e in summary))
    series = list(dict.fromkeys(tuple(e["values"][k] for k in rest) for e in summary))
    width = 0.8 / len(series)
    fig = Figure(figsize=(max(5.0, 1.2 * len(groups) * len(series) ** 0.5 + 2), 4), dpi=90)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for j, combo in enumerate(series):
        bars = [(i, e) for i, group in enumerate(groups) for e in summary
                if e["values"][first] == group and tuple(e["values"][k] for k in rest) == combo
                and e["mean"][metric] is not None]
        label = ", ".join(f"{k}={v}" for k, v in zip(rest, combo)) or None
        ax.bar(np.array([i for i, _ in bars]) + (j - (len(series) - 1) / 2) * width,
               [e["mean"][metric] for _, e in bars], width, label=label, capsize=3,
               yerr=[e["std"][metric] or 0.0 for _, e in bars])
    if reference and summary and summary[0]["mean"][metric] is not None:
        ax.axhline(summary[0]["mean"][metric], color="#555555", linestyle="--", linewidth=0.8, label="reference")
    ax.set_xticks(range(len(groups)), [textwrap.fill(value_label(first, g), 28) for g in groups],
                  rotation=20 if len(groups) > 4 else 0, fontsize=8)
    ax.set_ylabel(f"test {metric}")
    runs = sorted({e["runs"] for e in summary})
    ax.set_title(title or f"{metric}: mean ± std over {'/'.join(map(str, runs))} seed(s)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(target, format="png")
