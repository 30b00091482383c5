"""Robustness to evasion of a trained model on a corpus's dev or test side, written into docs/benchmarks/robustness.md.

    python bench/robustness.py --model checkpoints/quality/toxic_spans/13/model \\
        --config configs/experiment/quality/toxic_spans_minilm.yaml --side dev --seeds 3 --name toxic-spans-minilm

The dev side is the one the experiment carves out of its training file (the same split seed as
the training run, so the model never saw it); `--side test` takes the experiment's test side, and
`--test PATH` a held-out file in the corpus's own format (read with the experiment's reader). The
gold examples are written as canonical JSONL beside the report, `kold-span robustness` scores the
model on them (the command is printed in the section), and the section `robustness-NAME` of
docs/benchmarks/robustness.md is rewritten with its table, the command and the machine.

`--twins-option KEY=VALUE ...` (with `--test`) reads the same file again with these reader options
as the twins of the gold examples, for the row that scores the same texts in another variety:

    python bench/robustness.py --model checkpoints/quality/runs/quality-kold_gs/kold_gs-seed13/model \
        --config configs/experiment/quality/kold_gs_e5.yaml --test ../shared/data/kold_gs/gs_kold_valid.json \
        --perturb none --twins-option side=dialect skip_bad=true --twins-name dialect --name kold-gs-dialect-13
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import DOCS, machine_line, write_section  # noqa: E402

from kold_span import corpora  # noqa: E402
from kold_span.cli.options import add_key_values  # noqa: E402
from kold_span.cli.main import main as kold_span  # noqa: E402
from kold_span.config.loading import load_config  # noqa: E402
from kold_span.config.overrides import parse_key_value  # noqa: E402
from kold_span.corpora.experiment import load_splits  # noqa: E402
from kold_span.data.jsonl import write_jsonl  # noqa: E402
from kold_span.evaluation.robustness import render_markdown  # noqa: E402

PAGE = DOCS / "robustness.md"


def local(path: Path) -> str:
    """A path relative to the checkout when it lies inside it (as the docs show it), else as it is."""
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def gold_examples(args: argparse.Namespace) -> list:
    """The examples to score: the experiment's dev or test side, or --test read with its reader."""
    config = load_config(args.config, args.set)
    examples = (corpora.read(config.data.reader, args.test, **config.data.reader_options) if args.test
                else load_splits(config)[args.side])
    if not examples:
        raise SystemExit(f"{args.config}: its {args.side} side is empty (dev_fraction/test_fraction 0?)")
    return examples[:args.limit] if args.limit else examples


def twin_examples(args: argparse.Namespace) -> list:
    """The twins: --test read again with the experiment's reader options and --twins-option over them."""
    config = load_config(args.config, args.set)
    options = {**config.data.reader_options, **dict(parse_key_value(o, "--twins-option") for o in args.twins_option)}
    return corpora.read(config.data.reader, args.test, **options)


def section(name: str, report: dict, bench_command: str, command: str, note: str = "") -> str:
    """The docs section: what was scored (and `note`: which model this is), both commands, the machine, the table."""
    table = render_markdown(report).split("\n", 2)[2].strip()
    return "\n".join([
        f"## {name}", "",
        *([note, ""] if note else []),
        f"Model `{report['model']}`, gold {report['examples']} examples ({report['input']}).", "",
        "```", bench_command, "# which ran:", command, "```", "",
        f"Machine: {machine_line()}.", "", table, ""])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a trained model directory")
    parser.add_argument("--config", required=True, help="the experiment the model was trained by (its data keys)")
    add_key_values(parser, "--set", "config overrides (data paths)")
    parser.add_argument("--side", choices=("dev", "test"), default="dev")
    parser.add_argument("--test", help="a held-out file in the corpus's own format instead of --side")
    parser.add_argument("--perturb", default="all")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--targets", choices=("all", "spans"), default="all")
    parser.add_argument("--word-probability", default="0.5")
    parser.add_argument("--negative", nargs="+", default=["false"])
    parser.add_argument("--limit", type=int, help="score the first N examples only (smoke runs)")
    parser.add_argument("--twins-option", nargs="*", default=[], metavar="KEY=VALUE",
                        help="with --test: read it again with these reader options as the gold texts' twins "
                             "(kold_gs: side=dialect skip_bad=true)")
    parser.add_argument("--twins-name", default="twins", help="what the twins are called in the table")
    parser.add_argument("--name", help="the section's name (default: the config's file name, side and targets)")
    parser.add_argument("--out", default=str(ROOT / "checkpoints" / "robustness"))
    parser.add_argument("--note", default="", help="a sentence under the section's title: which model this is")
    parser.add_argument("--no-docs", action="store_true")
    parser.set_defaults(set=[])
    args = parser.parse_args()
    if args.twins_option and not args.test:
        parser.error("--twins-option reads the --test file again: pass --test")
    # Paths given are read from here; then the run works from the checkout (the configs' relative
    # data paths are read from there) and names every path relative to it.
    for key in ("model", "config", "test", "out"):
        if getattr(args, key):
            setattr(args, key, local(Path(getattr(args, key)).resolve()))
    os.chdir(ROOT)

    name = args.name or f"{Path(args.config).stem}-{'test-file' if args.test else args.side}-{args.targets}"
    out = Path(args.out) / name
    out.mkdir(parents=True, exist_ok=True)
    gold = out / "gold.jsonl"
    write_jsonl(gold_examples(args), gold)
    argv = ["robustness", "--model", args.model, "--input", str(gold), "--perturb", args.perturb,
            "--seeds", str(args.seeds), "--targets", args.targets, "--word-probability", args.word_probability,
            "--negative", *args.negative, "--out", str(out)]
    if args.twins_option:
        write_jsonl(twin_examples(args), out / "twins.jsonl")
        argv += ["--twins", str(out / "twins.jsonl"), "--twins-name", args.twins_name]
    status = kold_span(argv)
    if status:
        return status
    report = json.loads((out / "robustness.json").read_text(encoding="utf-8"))
    bench_command = "python bench/robustness.py " + shlex.join(sys.argv[1:])
    if not args.no_docs:
        write_section(f"robustness-{name}", section(name, report, bench_command, shlex.join(["kold-span", *argv]), args.note),
                      PAGE)
        print(f"wrote section robustness-{name} of {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
