"""`kold-span agreement FILE --format READER --out DIR`: the inter-annotator agreement report of a corpus."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from kold_span.agreement import KAPPA_WEIGHTS, LEVELS
from kold_span.agreement.bootstrap import MAX_N_BOOT
from kold_span.agreement.report import DEFAULT_N_BOOT, DEFAULT_WEIGHTS, FILES, FORMATS
from kold_span.cli.options import add_key_values, bounded, non_empty_path, seed_number


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `agreement` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['kold_v1.json', '--format', 'kold', '--out', 'agreement'])
        >>> args.format, args.out, args.level
        ('kold', 'agreement', 'nominal')
        >>> parser.parse_args(['likert.jsonl', '--format', 'jsonl', '--out', 'a', '--level', 'ordinal']).level
        'ordinal'
    """
    parser = subparsers.add_parser("agreement", help="inter-annotator agreement report of a corpus's raw annotations")
    parser.add_argument("file", help="corpus file or directory")
    parser.add_argument("--format", required=True, metavar="READER",
                        help=f"corpus reader keeping per-annotator labels: {', '.join(FORMATS)}")
    parser.add_argument("--out", required=True, type=non_empty_path,
                        help="output directory (report.md, report.json, two PNGs)")
    parser.add_argument("--label", help="annotation label key (default: the first one holding single bool, str, "
                                        "int or float values, e.g. OFF for kold, irony for multipico, type for "
                                        "toxic_spans_raw)")
    parser.add_argument("--level", choices=LEVELS, default="nominal",
                        help="level of measurement of the label (default nominal: labels are categories, numbers "
                             "included). nominal: Fleiss' and Cohen's kappa and alpha; ordinal: weighted Cohen's "
                             "kappa and ordinal alpha; interval, ratio: alpha alone. All but nominal need numbers")
    parser.add_argument("--weights", choices=KAPPA_WEIGHTS,
                        help=f"weights of Cohen's kappa at --level ordinal (default {DEFAULT_WEIGHTS})")
    parser.add_argument("--span-type", help="span type for character-level agreement (default: the first present)")
    parser.add_argument("--group-by", metavar="META_KEY", help="repeat the label statistics per value of "
                                                               "this meta key, e.g. lang for multipico")
    parser.add_argument("--n-boot", type=bounded(int, 1, MAX_N_BOOT, noun="a whole number"), default=DEFAULT_N_BOOT,
                        help=f"bootstrap resamples of items (default {DEFAULT_N_BOOT}, at most {MAX_N_BOOT})")
    parser.add_argument("--seed", type=seed_number, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--skip-bad", action="store_true", help="let the reader skip bad records (reported)")
    add_key_values(parser, "--option", "further reader options, e.g. min_annotators=2 or split=dev")
    return parser


def run(args: argparse.Namespace) -> int:
    """Write the report; print its two-line summary and the files written."""
    from kold_span.agreement import render, report
    from kold_span.cli.options import check_outputs
    from kold_span.config.overrides import parse_key_value
    from kold_span.errors import needs_extra

    with needs_extra("agreement"):  # refused before the reading and the bootstrap, not at the plots
        import krippendorff  # noqa: F401
        import matplotlib  # noqa: F401
        import statsmodels  # noqa: F401
    check_outputs({}, folders={"--out": args.out})
    reader_options = dict(parse_key_value(o, "--option") for o in args.option or [])
    if args.skip_bad:
        reader_options["skip_bad"] = True
    start = time.perf_counter()
    result = report.run(args.file, args.format, args.out, reader_options=reader_options, label=args.label,
                        span_type=args.span_type, group_by=args.group_by, n_boot=args.n_boot, seed=args.seed,
                        level=args.level, weights=args.weights)
    print(render.summary(result))
    print(f"wrote {', '.join(str(Path(args.out) / name) for name in FILES)} in {time.perf_counter() - start:.1f} s")
    return 0
