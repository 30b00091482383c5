"""`kold-span convert READER SRC OUT`: a corpus read by one of the readers, written as canonical JSONL."""
from __future__ import annotations

import argparse
from pathlib import Path

from kold_span.cli.options import add_key_values, non_empty_path


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `convert` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['kold', 'kold_v1.json', 'kold.jsonl', '--skip-bad'])
        >>> args.name, args.skip_bad
        ('kold', True)
    """
    parser = subparsers.add_parser("convert", help="read a corpus and write canonical JSONL")
    parser.add_argument("name", help="reader name, e.g. kold, toxic_spans, beep, kocosa")
    parser.add_argument("src", help="corpus file or directory")
    parser.add_argument("out", type=non_empty_path, help="output .jsonl")
    add_key_values(parser, "--option", "reader options, e.g. min_annotators=2")
    parser.add_argument("--skip-bad", action="store_true", help="skip bad records (each one is reported)")
    return parser


def run(args: argparse.Namespace) -> int:
    """Read, write and print how many examples were written."""
    from kold_span import corpora
    from kold_span.config.overrides import parse_key_value
    from kold_span.cli.options import check_outputs
    from kold_span.data.jsonl import write_jsonl

    check_outputs({"OUT": args.out}, {"SRC": args.src})
    options = dict(parse_key_value(o, "--option") for o in args.option or [])
    if args.skip_bad:
        options["skip_bad"] = True
    n = write_jsonl(corpora.read(args.name, Path(args.src), **options), Path(args.out))
    print(f"wrote {n} examples to {args.out}")
    return 0
