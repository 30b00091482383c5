"""A bar chart of chosen rows of the quality benchmark's results, next to their baselines.

The ablations that are tagged configurations of `bench/quality.py` (topic on/off on IroSvA, the
span tagger alone on Toxic Spans) get their plot from the recorded results, without training:

    python bench/plot_quality.py irosva_es irosva_es:topic-off irosva_mx irosva_mx:topic-off \\
        irosva_cu irosva_cu:topic-off --baselines ngram_context ngram --out docs/img/ablate_irosva_topic.png

One group of bars per corpus; one bar per row (mean ± sample std over its seeds, the corpus's
headline metric) and one per named baseline (deterministic, no error bar).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from quality import CORPORA, row_label  # noqa: E402

from kold_span.experiments.plot import plot_main_metric  # noqa: E402
from kold_span.experiments.summary import mean_std  # noqa: E402

BASELINE_LABELS = {"ngram": "n-gram", "ngram_context": "n-gram + context", "majority": "majority",
                   "lexicon": "lexicon"}


def summary_of(results: dict[str, Any], rows: Sequence[str], baselines: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Entries for `plot_main_metric`: values {corpus, model}, runs, mean and std of the headline metric.

    The metric's key is its short name (`macro_f1`, `char_f1`), which every row must share. A row
    is a key of the results (`corpus` or `corpus:tag`); each corpus also gets one bar per baseline
    in `baselines` that its results have (its baseline metric, or `char_f1` of the lexicon).
    """
    entries: list[dict[str, Any]] = []
    metric = metric_name(rows)
    first_row: dict[str, str] = {}  # corpus → its first row, whose results hold the corpus's baselines
    for key in rows:
        if key not in results:
            raise SystemExit(f"plot_quality: no row {key!r} in the results (rows: {', '.join(sorted(results))})")
        name, _, tag = key.partition(":")
        first_row.setdefault(name, key)
        mean, std, runs = mean_std(run["test"].get(CORPORA[name].metric) for run in results[key]["runs"])
        entries.append(_entry(metric, name, f"toolkit [{tag}]" if tag else "toolkit", mean, std, runs))
    for name, key in first_row.items():
        recorded = results[key]["baselines"]
        for kind in baselines:
            if kind in recorded:
                field = "char_f1" if kind == "lexicon" else CORPORA[name].baseline_metric
                entries.append(_entry(metric, name, BASELINE_LABELS[kind], recorded[kind][field], None, 1))
    order = list(dict.fromkeys(e["values"]["corpus"] for e in entries))
    return sorted(entries, key=lambda e: order.index(e["values"]["corpus"]))


def metric_name(rows: Sequence[str]) -> str:
    """The short name of the rows' common headline metric."""
    names = {CORPORA[key.partition(":")[0]].metric.split("/")[-1] for key in rows}
    if len(names) != 1:
        raise SystemExit(f"plot_quality: the rows have different metrics ({', '.join(sorted(names))}); plot them apart")
    return names.pop()


def _entry(metric: str, corpus: str, model: str, mean, std, runs: int) -> dict[str, Any]:
    return {"values": {"corpus": corpus, "model": model}, "runs": runs,
            "mean": {metric: mean}, "std": {metric: std}}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rows", nargs="+", help="result keys: corpus or corpus:tag")
    parser.add_argument("--baselines", nargs="*", default=[], choices=list(BASELINE_LABELS))
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "quality.json")
    parser.add_argument("--out", type=Path, required=True, help="the PNG to write")
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text(encoding="utf-8"))
    summary = summary_of(results, args.rows, args.baselines)
    metric = metric_name(args.rows)
    runs = sorted({e["runs"] for e in summary if e["values"]["model"].startswith("toolkit")})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    plot_main_metric(summary, ["corpus", "model"], metric, args.out, reference=False,
                     title=f"{metric}, toolkit: mean ± std over {'/'.join(map(str, runs))} seed(s)")
    print(f"wrote {args.out} ({', '.join(row_label(k) for k in args.rows)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
