"""`kold-span ablate CONFIG --vary KEY=v1,v2 --out DIR`: a grid of training runs; prints its results table."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from kold_span.cli.options import add_key_values, non_empty_path, positive_int


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `ablate` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['configs/experiment/demo.yaml', '--vary', 'context=title,none', '--seeds', '3', '--out', 'ablation'])
        >>> args.vary, args.seeds
        (['context=title,none'], 3)
    """
    parser = subparsers.add_parser("ablate", help="train a grid of config variants × seeds and compare their "
                                                  "test metrics")
    parser.add_argument("config", help="e.g. configs/experiment/demo.yaml")
    parser.add_argument("--vary", action="append", required=True, metavar="KEY=v1,v2",
                        help="a config key and its values (commas inside brackets or quotes do not split), "
                             "e.g. context=auto,none or context.max_turns=0,1,null; repeat for a grid")
    parser.add_argument("--seeds", type=positive_int, default=3, help="runs per cell, seeds config.seed + 0, 1, … (default 3)")
    parser.add_argument("--out", required=True, type=non_empty_path,
                        help="output directory (results.csv, results.md, results.png, runs/)")
    add_key_values(parser, "--set", "override config keys of every run, e.g. trainer.max_epochs=3")
    parser.add_argument("--metric", action="append", metavar="TASK/METRIC",
                        help="test metric of the table and plot (repeatable; the first is plotted; "
                             "default: macro_f1, char_f1, f1, balanced_accuracy, accuracy ones, at most 6)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def run(args: argparse.Namespace) -> int:
    """Train (or reuse) every run of the grid; print results.md and the files written."""
    from kold_span.cli.options import check_outputs
    from kold_span.errors import needs_extra
    from kold_span.experiments.grid import run_grid
    from kold_span.experiments.plan import parse_vary
    from kold_span.experiments.results import FILES

    with needs_extra("plots"):  # the plot is drawn after every run has trained: refused before them
        import matplotlib  # noqa: F401
    started = time.time()
    check_outputs({}, folders={"--out": args.out})
    vary = parse_vary(args.vary)
    run_grid(args.config, vary, args.seeds, args.out, args.set or [], args.metric)
    out = Path(args.out)
    print((out / "results.md").read_text(encoding="utf-8"))
    print(f"wrote {', '.join(str(out / name) for name in FILES)} in {time.time() - started:.1f} s")
    return 0
