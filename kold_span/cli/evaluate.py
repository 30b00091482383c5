"""`kold-span evaluate --gold FILE --pred FILE`: every span type and label of the gold file, scored."""
from __future__ import annotations

import argparse
from pathlib import Path

from kold_span.cli.options import non_empty_path


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `evaluate` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['--gold', 'gold.jsonl', '--pred', 'out.jsonl'])
        >>> args.gold, args.pred, args.policy
        ('gold.jsonl', 'out.jsonl', 'semeval')
    """
    parser = subparsers.add_parser("evaluate", help="score predictions against gold examples")
    parser.add_argument("--gold", required=True, help="canonical examples JSONL")
    parser.add_argument("--pred", required=True, help="predictions JSONL (kold-span predict output or examples)")
    parser.add_argument("--out", type=non_empty_path, help="write the scores as JSON")
    parser.add_argument("--policy", default="semeval", choices=["semeval", "kold"],
                        help="empty-gold rule of the span F1 (default: SemEval-2021 Toxic Spans)")
    parser.add_argument("--lenient", action="store_true",
                        help="warn instead of refusing malformed span offsets (left out), spans past the text's "
                             "end and predicted texts that differ from the gold text (scored as they are)")
    return parser


def run(args: argparse.Namespace) -> int:
    """Print the score table; with --out, also write the scores as JSON."""
    from kold_span.cli.options import check_outputs
    from kold_span.data.atomic import write_text_atomic
    from kold_span.data.jsonl import finite_or_null, json_text
    from kold_span.evaluation.prediction_files import evaluate_files

    check_outputs({"--out": args.out}, {"--gold": args.gold, "--pred": args.pred})
    report = evaluate_files(Path(args.gold), Path(args.pred), policy=args.policy, lenient=args.lenient)
    print(report.table())
    if args.out:
        write_text_atomic(args.out, json_text(finite_or_null(report.scores), indent=1))
        print(f"wrote {args.out}")
    return 0
