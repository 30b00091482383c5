"""IroSvA cross-variant transfer: train on one Spanish variant, test on each (3 × 3 matrix).

Uses the models and splits `bench/quality.py` leaves behind (run it for irosva_es, irosva_mx and
irosva_cu first): each variant's model is scored on every variant's held-out test part, and the
TF-IDF n-gram baseline fitted on the same training part fills a second matrix for comparison.

    python bench/quality.py --corpora irosva_es irosva_mx irosva_cu --seeds 13
    python bench/cross_variant.py --seeds 13
    python bench/cross_variant.py --render-only   # docs and plot again from the results file

Results: bench/results/cross_variant.json, a section of docs/ABLATIONS.md and
docs/img/irosva_cross_variant.png.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from quality import mean_std  # noqa: E402
from report import machine_line, write_section  # noqa: E402

from kold_span.data.example import label_str  # noqa: E402
from kold_span.data.jsonl import read_jsonl  # noqa: E402
from kold_span.evaluation.baselines import label_scores  # noqa: E402
from kold_span.inference.predictor import Predictor  # noqa: E402
from kold_span.models.ngram import NgramBaseline  # noqa: E402
from kold_span.training import evaluate_predictor  # noqa: E402

VARIANTS = ("es", "mx", "cu")
ABLATIONS = ROOT / "docs" / "ABLATIONS.md"
PLOT = ROOT / "docs" / "img" / "irosva_cross_variant.png"


def model_dir(runs: Path, variant: str, seed: int, tag: str = "") -> Path:
    return runs / "quality-irosva" / f"irosva_{variant}{'-' + tag if tag else ''}-seed{seed}" / "model"


def recorded_scores(previous: dict[str, Any], tag: str = "") -> dict[int, dict[str, dict[str, float]]]:
    """{seed: {train: {test: macro-F1}}} from an earlier results file made with the same tag.

    Example:
        >>> recorded_scores({"seeds": [13, 14], "tag": "", "encoder": {"es": {"mx": [0.5, 0.6]}}})
        {13: {'es': {'mx': 0.5}}, 14: {'es': {'mx': 0.6}}}
    """
    if previous.get("tag", "") != tag:
        return {}
    return {seed: {train: {test: scores[i] for test, scores in row.items()}
                   for train, row in previous.get("encoder", {}).items()}
            for i, seed in enumerate(previous.get("seeds", []))}


def matrices(work: Path, seeds: list[int], tag: str = "",
             recorded: dict[int, dict[str, dict[str, float]]] | None = None) -> dict[str, Any]:
    """Encoder macro-F1 per (train, test, seed) and the n-gram's per (train, test).

    A seed whose model directory is gone (another machine, a cleaned checkpoints/) is taken from
    `recorded` (see `recorded_scores`) when it is there; otherwise the model must exist.
    """
    recorded = recorded or {}
    tests = {v: list(read_jsonl(work / f"irosva_{v}" / "test.jsonl")) for v in VARIANTS}
    encoder: dict[str, dict[str, list[float]]] = {}
    ngram: dict[str, dict[str, float]] = {}
    reused = set()
    for train in VARIANTS:
        missing = [model_dir(work / "runs", train, s, tag) for s in seeds
                   if not model_dir(work / "runs", train, s, tag).exists() and train not in recorded.get(s, {})]
        if missing:
            raise SystemExit(f"no trained model at {missing[0]}: run bench/quality.py for irosva_{train} first")
        fitted = NgramBaseline("irony").fit(list(read_jsonl(work / f"irosva_{train}" / "train.jsonl")))
        encoder[train], ngram[train] = {}, {}
        for seed in seeds:
            directory = model_dir(work / "runs", train, seed, tag)
            if not directory.exists():
                reused.add(seed)
                for test in VARIANTS:
                    encoder[train].setdefault(test, []).append(recorded[seed][train][test])
                continue
            predictor = Predictor.from_pretrained(directory)
            for test, examples in tests.items():
                score = evaluate_predictor(predictor, examples)["irony/macro_f1"]
                encoder[train].setdefault(test, []).append(score)
        for test, examples in tests.items():
            gold = [label_str(e.labels["irony"]) for e in examples]
            ngram[train][test] = label_scores(gold, fitted.predict(examples), "single")["macro_f1"]
    return {"seeds": seeds, "tag": tag, "encoder": encoder, "ngram": ngram, "reused_seeds": sorted(reused)}


def render(result: dict[str, Any], command: str) -> str:
    lines = ["## IroSvA: cross-variant transfer (IroSvA overview, cross-variant analysis)", "",
             f"```\npython bench/quality.py --corpora irosva_es irosva_mx irosva_cu --seeds "
             f"{' '.join(map(str, result['seeds']))} --set trainer.threads=1\n{command}\n```", "",
             f"Machine: {machine_line()}. Rows: the variant trained on (its 80% training part, the "
             "scratch encoder of `configs/experiment/quality/irosva.yaml`, topic as context); columns: "
             "the variant tested on (its 20% held-out part, the same split as the quality benchmark). "
             f"Macro-F1, {len(result['seeds'])} seed(s) per model (mean ± std); the n-gram matrix is the TF-IDF "
             "baseline fitted on the same training part."
             + (f" Seed(s) {', '.join(map(str, result['reused_seeds']))}: scores recorded in "
                "bench/results/cross_variant.json by an earlier session (the models were not on this machine)."
                if result.get("reused_seeds") else ""), ""]
    for kind, title in (("encoder", "toolkit encoder"), ("ngram", "n-gram baseline")):
        lines += [f"| {title}: train ↓ / test → | " + " | ".join(VARIANTS) + " |", "|---" * (len(VARIANTS) + 1) + "|"]
        for train in VARIANTS:
            row = result[kind][train]
            cells = [mean_std(row[t], digits=3) if kind == "encoder" else f"{row[t]:.3f}" for t in VARIANTS]
            lines.append(f"| {train} | " + " | ".join(f"**{c}**" if t == train else c
                                                     for c, t in zip(cells, VARIANTS)) + " |")
        lines.append("")
    lines.append("![cross-variant macro-F1](img/irosva_cross_variant.png)")
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3.6))
    FigureCanvasAgg(fig)
    for i, (kind, title) in enumerate((("encoder", "encoder"), ("ngram", "n-gram baseline"))):
        ax = fig.add_subplot(1, 2, i + 1)
        grid = [[statistics.mean(result[kind][tr][te]) if kind == "encoder" else result[kind][tr][te]
                 for te in VARIANTS] for tr in VARIANTS]
        image = ax.imshow(grid, vmin=0.4, vmax=0.8, cmap="viridis")
        for r, row in enumerate(grid):
            for c, value in enumerate(row):
                ax.text(c, r, f"{value:.2f}", ha="center", va="center", color="white" if value < 0.65 else "black")
        ax.set_xticks(range(3), VARIANTS)
        ax.set_yticks(range(3), VARIANTS)
        ax.set_xlabel("test variant")
        if i == 0:
            ax.set_ylabel("train variant")
        ax.set_title(f"{title}: macro-F1")
    fig.colorbar(image, ax=fig.axes, shrink=0.8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=ROOT / "checkpoints" / "quality",
                        help="bench/quality.py's --out (splits and runs)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[13])
    parser.add_argument("--tag", default="", help="the --tag the quality runs were made with")
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "cross_variant.json")
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite the docs section and plot from --results without scoring anything")
    args = parser.parse_args()
    if args.render_only:
        result = json.loads(args.results.read_text())
        command = result.get("command", "python bench/cross_variant.py")
    else:
        previous = json.loads(args.results.read_text()) if args.results.exists() else {}
        result = matrices(args.work, args.seeds, args.tag, recorded_scores(previous, args.tag))
        command = "python bench/cross_variant.py " + " ".join(sys.argv[1:])
        result["command"] = command
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(result, indent=1))
    if not args.no_docs:
        write_section("irosva-cross-variant", render(result, command), ABLATIONS)
        plot(result, PLOT)
    print(render(result, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
