"""`kold-span robustness --model DIR --input GOLD --perturb all --out DIR`: scores clean and under each evasion kind.

`--twins GOLD2` adds a row for the same texts in another variety (KOLD's comments in Gyeongsang dialect:
`--reader kold_gs --input valid.json --twins valid.json --twins-option side=dialect skip_bad=true
--twins-name dialect`), each paired with its text by `meta.group` (else by id).
"""
from __future__ import annotations

import argparse
import shlex
import sys

from kold_span.cli.options import (add_key_values, add_repeatable, add_scoring_options, non_empty_path, positive_int,
                                   share)
from kold_span.config.choices import EvasionKind, Targets


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `robustness` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['--model', 'm', '--input', 'dev.jsonl', '--out', 'report', '--perturb', 'nfd,leet'])
        >>> args.perturb, args.seeds, args.targets, args.word_probability, args.negative, args.twins
        ('nfd,leet', 1, 'all', 0.5, None, None)
    """
    parser = subparsers.add_parser("robustness", help="score a model on a labelled file, clean and with words "
                                                      "disguised by each evasion kind")
    parser.add_argument("--model", required=True, metavar="DIR", help="a model directory")
    parser.add_argument("--input", required=True, metavar="GOLD",
                        help="labelled examples: canonical JSONL (as `kold-span evaluate --gold` reads), or a "
                             "corpus file with --reader")
    parser.add_argument("--reader", default="jsonl", help="the corpus reader of --input (as `kold-span convert` "
                                                          "names them; default: canonical JSONL)")
    add_key_values(parser, "--option", "reader options of --input (as `kold-span convert --option`)")
    parser.add_argument("--twins", metavar="GOLD2",
                        help="the same texts in another variety (e.g. dialect rewrites), read with --reader and "
                             "--twins-option; each scored against its text of --input (paired by meta.group, else id)")
    add_key_values(parser, "--twins-option", "reader options of --twins, e.g. side=dialect skip_bad=true")
    parser.add_argument("--twins-name", default="twins", help="what the twins are called in the report (dialect)")
    parser.add_argument("--perturb", default="all", metavar="all|none|KIND,...",
                        help="the perturbation kinds (docs/ROBUSTNESS.md): all, none (clean and twins only), or a "
                             "comma-separated list of " + ", ".join(EvasionKind.values()))
    parser.add_argument("--out", required=True, metavar="DIR", type=non_empty_path,
                        help="where robustness.md, robustness.json and robustness.png are written")
    parser.add_argument("--seeds", type=positive_int, default=1, help="perturbation seeds per kind (mean ± sd)")
    parser.add_argument("--targets", choices=Targets.values(), default="all",
                        help="disguise any word, or only words inside a gold span (the hardest case)")
    parser.add_argument("--word-probability", type=share, default=0.5,
                        help="the chance of each word to be disguised (default 0.5)")
    parser.add_argument("--policy", default="semeval", choices=["semeval", "kold"],
                        help="empty-gold rule of the span F1 (as `kold-span evaluate`)")
    add_repeatable(parser, "--negative", "VALUE", "label values that mean nothing to flag, for the benign "
                   "false-positive count (default: false; e.g. --negative false none for BEEP!'s hate: none)")
    add_scoring_options(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    """Score clean and perturbed, print the table, write the three files."""
    from kold_span import corpora
    from kold_span.cli.options import check_outputs
    from kold_span.config.overrides import parse_key_value
    from kold_span.data.jsonl import require_path
    from kold_span.errors import DataError, needs_extra
    from kold_span.evaluation.robustness import measure, model_predictions, render_markdown, write_report
    from kold_span.inference.ensemble import load_predictor
    from kold_span.inference.pipeline import RunOptions
    from kold_span.text.perturb import parse_kinds

    with needs_extra("plots"):  # the plot is drawn after every kind is scored: refused before
        import matplotlib  # noqa: F401
    kinds = [] if args.perturb.strip() == "none" else parse_kinds(args.perturb)
    check_outputs({}, models=[args.model], folders={"--out": args.out})
    require_path(args.input, "--input")
    gold = corpora.read(args.reader, args.input, **dict(parse_key_value(o, "--option") for o in args.option or []))
    if not gold:
        raise DataError(f"{args.input}: no gold examples to score against")
    twins = None
    if args.twins:
        require_path(args.twins, "--twins")
        twins = corpora.read(args.reader, args.twins,
                             **dict(parse_key_value(o, "--twins-option") for o in args.twins_option or []))
    model = load_predictor([args.model], RunOptions(device=args.device, precision=args.precision))
    report = measure(gold, model_predictions(model, args.batch_size), kinds, seeds=args.seeds,
                     word_probability=args.word_probability, targets=args.targets, policy=args.policy,
                     negative=args.negative or ["false"], twins=twins, twins_name=args.twins_name)
    # The command as typed, when this process is `kold-span ... robustness ...` (not a caller's main()).
    command = shlex.join(["kold-span", *sys.argv[1:]]) if "robustness" in sys.argv[1:3] else ""
    report = {"model": str(args.model), "input": str(args.input), **report}
    if args.twins:
        report["twins_input"] = str(args.twins)
    paths = write_report(report, args.out, command)
    print(render_markdown(report).split("\n", 2)[2].strip())
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0
