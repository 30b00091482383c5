"""results.md of a grid: the command, a mean ± std table and a table of differences to the reference cell.

Example:
    >>> summary = [{"values": {"context": "auto"}, "runs": 2, "mean": {"T/f1": 0.5}, "std": {"T/f1": 0.1}},
    ...            {"values": {"context": "none"}, "runs": 2, "mean": {"T/f1": 0.4}, "std": {"T/f1": None},
    ...             "diff": {"T/f1": -0.1}}]
    >>> render_markdown(summary, ["context"], ["T/f1"], "kold-span ablate ...").splitlines()[19:21]
    ['| auto | 2 | ref |', '| none | 2 | -0.100 |']
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Sequence


def render_markdown(summary: Sequence[Mapping[str, Any]], keys: Sequence[str], metrics: Sequence[str],
                    command: str) -> str:
    """results.md: the command, a mean ± std table and a table of differences to the reference cell."""
    reference = ", ".join(f"`{k}={v}`" for k, v in summary[0]["values"].items()) if summary else "n/a"
    head = [*keys, "runs"]
    lines = ["# Ablation results", "", "```", command, "```", "",
             f"Test metrics over seeds: mean ± sample std (n − 1). Reference cell: {reference}.", "",
             "## Mean ± std", "", _md_row([*head, *metrics]), _md_row(["---"] * (len(head) + len(metrics)))]
    for entry in summary:
        lines.append(_md_row([*entry["values"].values(), str(entry["runs"]),
                              *(_fmt_mean_std(entry["mean"][m], entry["std"][m]) for m in metrics)]))
    lines += ["", "## Difference to the reference cell", "", _md_row([*head, *(f"Δ {m}" for m in metrics)]),
              _md_row(["---"] * (len(head) + len(metrics)))]
    for i, entry in enumerate(summary):
        diffs = ["ref" if i == 0 else "n/a" if entry["diff"][m] is None else f"{entry['diff'][m]:+.3f}"
                 for m in metrics]
        lines.append(_md_row([*entry["values"].values(), str(entry["runs"]), *diffs]))
    lines += ["", "Per-run scores of every test metric: `results.csv`; runs: `runs/`.", ""]
    return "\n".join(lines)


def _md_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _fmt_mean_std(mean: Optional[float], std: Optional[float]) -> str:
    return "n/a" if mean is None else (f"{mean:.3f}" if std is None else f"{mean:.3f} ± {std:.3f}")
