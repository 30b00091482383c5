"""`kold-span functional --model DIR --lang en --out DIR`: the functional suite's flagged shares and identity bias.

The suite's held-out templates by default (`--part train` or `all` for the others); `--suite FILE` reads
another suite file of the same format (docs/FUNCTIONAL.md).
"""
from __future__ import annotations

import argparse
import shlex
import sys

from kold_span.cli.options import add_scoring_options, non_empty_path


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `functional` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['--model', 'm', '--lang', 'ko', '--out', 'report'])
        >>> args.model, args.lang, args.part, args.suite is None
        (['m'], 'ko', 'held_out', True)
    """
    from kold_span.corpora.functional import PARTS

    parser = subparsers.add_parser("functional", help="flagged shares per functionality of the functional test suite "
                                                      "(benign texts about groups, counter-speech, ...) and "
                                                      "identity-term bias AUCs")
    parser.add_argument("--model", required=True, nargs="+", metavar="DIR",
                        help="a model directory (several: their ensemble)")
    parser.add_argument("--lang", required=True, help="the suite's language: en, ko, or all")
    parser.add_argument("--part", choices=PARTS, default="held_out",
                        help="which templates: held_out (default: never trained on), train, all")
    parser.add_argument("--suite", metavar="FILE", help="a suite file (default: the packaged one)")
    parser.add_argument("--out", required=True, metavar="DIR", type=non_empty_path,
                        help="where functional.md, functional.json and cases.jsonl are written")
    add_scoring_options(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    """Predict the suite's cases, print the table, write the three files."""
    from kold_span import corpora
    from kold_span.cli.options import check_outputs
    from kold_span.corpora.functional import SUITE
    from kold_span.data.jsonl import require_path
    from kold_span.errors import DataError
    from kold_span.evaluation.functional import measure, predict_cases, render_markdown, write_report
    from kold_span.inference.ensemble import load_predictor
    from kold_span.inference.pipeline import RunOptions

    check_outputs({}, models=args.model, folders={"--out": args.out})
    suite = args.suite or SUITE
    require_path(suite, "--suite")
    cases = corpora.read("functional", suite, lang=args.lang, part=args.part)
    if not cases:
        raise DataError(f"{suite}: no {args.part} case in language {args.lang!r}")
    model = load_predictor(args.model, RunOptions(device=args.device, precision=args.precision))
    outcomes = predict_cases(model, cases, args.batch_size)
    report = {"model": " ".join(map(str, args.model)), "part": args.part, **measure(cases, outcomes)}
    # The command as typed, when this process is `kold-span ... functional ...` (not a caller's main()).
    command = shlex.join(["kold-span", *sys.argv[1:]]) if "functional" in sys.argv[1:3] else ""
    paths = write_report(report, cases, outcomes, args.out, command)
    print(render_markdown(report).split("\n", 2)[2].strip())
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0
