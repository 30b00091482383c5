"""Snapping on KOLD's real spans: where gold span edges fall, and what each `align.snap` mode costs and buys.

(a) On the training side of `kold_gs` (the three training files): the share of gold span edges
(starts and ends) on an eojeol (whitespace) boundary, inside an eojeol but on a Kiwi morpheme
boundary, or inside a morpheme. An edge is on a unit's boundary when no unit holds it strictly
inside, which is exactly when `text.align.snap_spans` leaves it where it is: how well the KOLD
guideline's morpheme rule holds in the gold.

(b) For finished runs of bench/quality.py (run folders with `model/`): each snap mode (none,
morpheme, eojeol, word) with the span threshold re-tuned on the run's own dev split under that
mode (`span_threshold`, as a run trained with that mode calibrates it: snapping is decode-time
only, so the weights are the same), then the test side scored: mean ± std over the runs
(`decoding_probes.snap_modes`: dev and test as the run's training read and normalized them).

    python bench/kold_snapping.py                                   # (a) only
    python bench/kold_snapping.py checkpoints/quality/runs/quality-kold_gs/kold_gs-seed{13,14,15}

Results: bench/results/kold_snapping.json and the `quality-kold-snapping` section of
docs/benchmarks/quality.md (the command and the machine's CPU flags with it).
"""
from __future__ import annotations

import argparse
import shlex
import statistics
import sys
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from decoding_probes import snap_modes  # noqa: E402
from report import DATA, isa_flags, machine_line, save_results, write_section  # noqa: E402

from kold_span import corpora  # noqa: E402
from kold_span.config.choices import SnapMode  # noqa: E402
from kold_span.data.example import Example, Span  # noqa: E402
from kold_span.text.align import eojeol_offsets  # noqa: E402
from kold_span.text.morphemes import morpheme_offsets, prefetch  # noqa: E402

EDGE_KINDS = ("eojeol", "morpheme", "neither")
SNAPS = tuple(mode.value for mode in SnapMode)


def inside(position: int, units: Sequence[Span]) -> bool:
    """Whether a unit holds `position` strictly inside (s < position < e): a span edge there would be snapped.

    Example:
        >>> inside(2, [(0, 2), (2, 3)]), inside(1, [(0, 2)])
        (False, True)
    """
    return any(start < position < end for start, end in units)


def edge_kind(position: int, morphemes: Sequence[Span], eojeols: Sequence[Span]) -> str:
    """An edge's boundary: "eojeol" (whitespace), "morpheme" (inside an eojeol, between morphemes) or "neither"."""
    return "eojeol" if not inside(position, eojeols) else ("neither" if inside(position, morphemes) else "morpheme")


def edge_counts(examples: Sequence[Example], span_type: str = "OFF") -> dict[str, dict[str, int]]:
    """How many gold span starts and ends fall on each kind of boundary (`edge_kind`), and both together.

    Example:
        >>> text = "기자는 바보다"  # Kiwi: 기자 · 는 | 바보 · 이 · 다
        >>> counts = edge_counts([Example("1", text, spans={"OFF": [(0, 2), (4, 5)]})])
        >>> counts["start"], counts["end"]  # 기자|는: a morpheme boundary; 바|보: inside the morpheme
        ({'eojeol': 2, 'morpheme': 0, 'neither': 0}, {'eojeol': 0, 'morpheme': 1, 'neither': 1})
    """
    prefetch(ex.text for ex in examples)
    counts = {side: dict.fromkeys(EDGE_KINDS, 0) for side in ("start", "end", "all")}
    for ex in examples:
        morphemes, eojeols = morpheme_offsets(ex.text), eojeol_offsets(ex.text)
        for start, end in ex.spans.get(span_type, []):
            for side, position in (("start", start), ("end", end)):
                kind = edge_kind(position, morphemes, eojeols)
                counts[side][kind] += 1
                counts["all"][kind] += 1
    return counts


def mean_std(values: Sequence[float]) -> str:
    """Mean ± sample std (the value alone for one run)."""
    return f"{values[0]:.4f}" if len(values) == 1 else f"{statistics.mean(values):.4f} ± {statistics.stdev(values):.4f}"


def snap_table(runs: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown rows: each snap mode's dev and test char-F1 over the runs, its change against none, its thresholds.

    Example:
        >>> runs = [{"none": {"threshold": 0.4, "dev": 0.70, "test": 0.68},
        ...          "morpheme": {"threshold": 0.45, "dev": 0.72, "test": 0.69}},
        ...         {"none": {"threshold": 0.5, "dev": 0.72, "test": 0.70},
        ...          "morpheme": {"threshold": 0.5, "dev": 0.73, "test": 0.70}}]
        >>> print("\\n".join(snap_table(runs)[2:]))
        | none | 0.7100 ± 0.0141 | 0.6900 ± 0.0141 | — | 0.40 / 0.50 |
        | morpheme | 0.7250 ± 0.0071 | 0.6950 ± 0.0071 | +0.0050 | 0.45 / 0.50 |
    """
    lines = ["| snap | dev char-F1 | test char-F1 | test change against none | dev thresholds |",
             "|---|---|---|---|---|"]
    snaps = [snap for snap in SNAPS if all(snap in run for run in runs)]
    for snap in snaps:
        dev, test = ([run[snap][split] for run in runs] for split in ("dev", "test"))
        change = "—" if snap == "none" or "none" not in snaps else \
            f"{statistics.mean(test) - statistics.mean(run['none']['test'] for run in runs):+.4f}"
        thresholds = " / ".join(f"{run[snap]['threshold']:.2f}" for run in runs)
        lines.append(f"| {snap} | {mean_std(dev)} | {mean_std(test)} | {change} | {thresholds} |")
    return lines


def edge_table(counts: dict[str, dict[str, int]]) -> list[str]:
    """Markdown rows: each side's edges and the share on each kind of boundary.

    Example:
        >>> print(edge_table({"all": {"eojeol": 3, "morpheme": 1, "neither": 0}})[-1])
        | all | 4 | 75.0% | 25.0% | 0.0% |
    """
    lines = ["| edges | count | on an eojeol (whitespace) boundary | inside an eojeol, on a Kiwi morpheme boundary "
             "| inside a morpheme |", "|---|---|---|---|---|"]
    for side, by_kind in counts.items():
        total = sum(by_kind.values())
        lines.append(f"| {side} | {total} | "
                     + " | ".join(f"{100 * by_kind[kind] / max(total, 1):.1f}%" for kind in EDGE_KINDS) + " |")
    return lines


def render(result: dict[str, Any]) -> str:
    """The docs section: the edge shares, then the snap table of the runs measured (if any)."""
    edges = result["edges"]
    lines = ["## KOLD: gold span edges and snapping", "",
             f"Command: `{result['command']}`; machine: {result['machine']} (CPU flags: {result['cpu_flags']}).", "",
             f"Where the {edges['spans']} gold offensive spans of KOLD's training side ({edges['examples']} comments, "
             "`kold_gs`, spans as the reader locates them) start and end. An edge counts as on a boundary when no "
             "unit holds it strictly inside, i.e. when snapping to that unit leaves it in place:", "",
             *edge_table(edges["counts"]), ""]
    runs = result.get("runs") or []
    if not runs:
        lines.append("No run measured yet: pass finished bench/quality.py run folders to measure each snap mode.")
        return "\n".join(lines) + "\n"
    sizes = runs[0]["sizes"]
    lines += [f"Each snap mode on {len(runs)} finished run(s) ({', '.join(run['run'] for run in runs)}; trained "
              f"with `align.snap: {runs[0]['saved_snap']}`), the span threshold re-tuned on the run's dev split "
              f"({sizes['dev']} comments) under each mode, the test side ({sizes['test']} comments, the valid side) "
              "scored at it: mean per-comment character F1, mean ± std over the runs. A run is trained once and "
              "decoded under every mode (snapping is decode-time only).", "", *snap_table(runs)]
    best = max((snap for snap in SNAPS if all(snap in run for run in runs)),
               key=lambda snap: statistics.mean(run[snap]["dev"] for run in runs))
    lines += ["", f"Dev prefers `{best}` (the best mean dev char-F1)."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", type=Path, help="finished bench/quality.py run folders (with model/)")
    parser.add_argument("--data", type=Path, default=DATA / "kold_gs", help="the kold_gs training side")
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args(argv)
    train = corpora.read("kold_gs", args.data)
    counts = edge_counts(train)
    result: dict[str, Any] = {
        "command": shlex.join(["python", "bench/kold_snapping.py", *(argv if argv is not None else sys.argv[1:])]),
        "machine": machine_line(), "cpu_flags": isa_flags(),
        "edges": {"examples": len(train), "spans": sum(counts["start"].values()), "counts": counts},
        "runs": [],
    }
    for run in args.runs:
        result["runs"].append(snap_modes(run, SNAPS))
        print(result["runs"][-1], flush=True)
    save_results("kold_snapping", result)
    text = render(result)
    if not args.no_docs:
        write_section("quality-kold-snapping", text)
    print(text)
    return result


if __name__ == "__main__":
    main()
