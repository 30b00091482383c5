"""Leave-kinds-out: is a kind's robustness learnt from having trained on it? Written into docs/benchmarks/robustness.md.

    python bench/leave_kinds_out.py plan --config configs/experiment/quality/toxic_spans_minilm.yaml --folds 3
    python bench/leave_kinds_out.py measure --config configs/experiment/quality/toxic_spans_minilm.yaml \\
        --full checkpoints/quality/all-kinds/model --fold checkpoints/quality/leave-out-1/model ... --name ts-1ep

`plan` deals the evasion kinds (`EvasionKind`) into folds with a seed and prints the training
commands: one model trained on every kind, and one per fold trained on every kind but the fold's.
`measure` scores the full model on every kind and each fold model on the kinds its training left
out (read from its run's config.json, `data.augment.evasion.kinds`), on the experiment's dev side,
with `kold-span robustness`; the table (`evaluation.robustness.leave_out_rows`) puts each kind's
drop when trained on it beside its drop when left out. It rewrites the section
`leave-kinds-out-NAME` of docs/benchmarks/robustness.md with the commands and the machine.
"""
from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import DOCS, machine_line, write_section  # noqa: E402

from kold_span.cli.main import main as kold_span  # noqa: E402
from kold_span.config.choices import EvasionKind  # noqa: E402
from kold_span.config.loading import load_config  # noqa: E402
from kold_span.corpora.experiment import load_splits  # noqa: E402
from kold_span.data.jsonl import write_jsonl  # noqa: E402
from kold_span.evaluation.robustness import leave_out_rows, render_leave_out  # noqa: E402

PAGE = DOCS / "robustness.md"


def folds_of(kinds: list[str], folds: int, seed: int) -> list[list[str]]:
    """The kinds dealt into `folds` groups after a seeded shuffle (each kind in one group, in `kinds`' order).

    Example:
        >>> folds_of(["a", "b", "c", "d", "e"], 2, 0)
        [['a', 'c', 'd'], ['b', 'e']]
    """
    order = kinds[:]
    random.Random(seed).shuffle(order)
    groups = [sorted(order[i::folds], key=kinds.index) for i in range(folds)]
    return [g for g in groups if g]


def train_commands(config: str, folds: list[list[str]], extra: list[str]) -> list[str]:
    """The training commands: every kind, then each fold left out."""
    every = [k.value for k in EvasionKind]
    sets = [f"--set {shlex.quote(s)}" for s in extra]
    lines = [" ".join(["kold-span train", config, *sets, "--set run=all-kinds"])]
    for i, fold in enumerate(folds, 1):
        kept = "[" + ", ".join(k for k in every if k not in fold) + "]"
        lines.append(" ".join(["kold-span train", config, *sets, f"--set run=leave-out-{i}",
                               "--set", shlex.quote(f"data.augment.evasion.kinds={kept}")]))
    return lines


def trained_kinds(model: Path) -> list[str]:
    """The evasion kinds a model's run trained on (its run's config.json), [] without evasion training."""
    run_config = json.loads((model.parent / "config.json").read_text(encoding="utf-8"))
    evasion = (run_config.get("data", {}).get("augment") or {}).get("evasion")
    return [str(k) for k in evasion["kinds"]] if evasion else []


def robustness(model: Path, gold: Path, kinds: list[str], out: Path, args: argparse.Namespace) -> dict:
    """`kold-span robustness` of one model on `kinds`; its report."""
    argv = ["robustness", "--model", str(model), "--input", str(gold), "--perturb", ",".join(kinds) or "none",
            "--seeds", str(args.seeds), "--targets", args.targets, "--out", str(out)]
    if kold_span(argv):
        raise SystemExit(f"kold-span {shlex.join(argv)} failed")
    return json.loads((out / "robustness.json").read_text(encoding="utf-8"))


def measure(args: argparse.Namespace) -> None:
    out = Path(args.out) / args.name
    out.mkdir(parents=True, exist_ok=True)
    gold = out / "gold.jsonl"
    examples = load_splits(load_config(args.config, args.set))[args.side]
    write_jsonl(examples[:args.limit] if args.limit else examples, gold)
    every = [k.value for k in EvasionKind]
    full = robustness(Path(args.full), gold, every, out / "full", args)
    folds = []
    for i, fold_model in enumerate(args.fold, 1):
        trained = trained_kinds(Path(fold_model))
        left_out = [k for k in every if k not in trained]
        folds.append((trained, robustness(Path(fold_model), gold, left_out, out / f"fold-{i}", args)))
    table = render_leave_out(full, leave_out_rows(full, folds))
    body = "\n".join([f"## Leave kinds out: {args.name}", "",
                      f"Dev side of `{args.config}` ({full['examples']} examples), {args.targets} words, "
                      f"{args.seeds} perturbation seed(s); full model `{args.full}`, fold models "
                      f"{', '.join(f'`{m}`' for m in args.fold)}.", "",
                      "```", "python bench/leave_kinds_out.py " + shlex.join(sys.argv[2:]), "```", "",
                      f"Machine: {machine_line()}.", "", table, ""])
    if not args.no_docs:
        write_section(f"leave-kinds-out-{args.name}", body, PAGE)
    print(body)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    plan = sub.add_parser("plan", help="print the training commands")
    plan.add_argument("--config", required=True)
    plan.add_argument("--folds", type=int, default=3)
    plan.add_argument("--seed", type=int, default=13)
    plan.add_argument("--set", nargs="*", default=[], help="more config overrides for every run")
    run = sub.add_parser("measure", help="score the full and fold models and write the table")
    run.add_argument("--config", required=True)
    run.add_argument("--set", nargs="*", default=[])
    run.add_argument("--full", required=True, help="the model trained on every kind")
    run.add_argument("--fold", nargs="+", required=True, help="the models trained with a fold left out")
    run.add_argument("--side", choices=("dev", "test"), default="dev")
    run.add_argument("--seeds", type=int, default=1)
    run.add_argument("--targets", choices=("all", "spans"), default="all")
    run.add_argument("--limit", type=int, help="the first N examples only (smoke runs)")
    run.add_argument("--name", required=True)
    run.add_argument("--out", default=str(ROOT / "checkpoints" / "leave-kinds-out"))
    run.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    if args.command == "plan":
        folds = folds_of([k.value for k in EvasionKind], args.folds, args.seed)
        for i, fold in enumerate(folds, 1):
            print(f"# fold {i} left out: {', '.join(fold)}")
        print("\n".join(train_commands(args.config, folds, args.set)))
    else:
        measure(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
