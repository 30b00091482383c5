"""`kold-span pretrain CONFIG`: masked-language-model pretraining of a scratch encoder (progress is logged)."""
from __future__ import annotations

import argparse

from kold_span.cli.options import add_config_options


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `pretrain` subcommand and its options.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> args = parser.parse_args(['configs/pretrain/korean_beep.yaml', '--set', 'max_steps=3'])
        >>> args.config, args.set
        ('configs/pretrain/korean_beep.yaml', ['max_steps=3'])
    """
    parser = subparsers.add_parser("pretrain", help="masked-LM pretraining of a scratch encoder on unlabeled texts")
    add_config_options(parser, "configs/pretrain/korean_beep.yaml", "max_steps=100 encoder.layers=2")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")
    parser.add_argument("--resume", action="store_true", help="continue from the run's last checkpoint (OUTPUT-run)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace OUTPUT even when it is a non-empty folder of something else than a pretrained "
                             "encoder (without it such a folder is refused before training)")
    return parser


def run(args: argparse.Namespace) -> int:
    """Pretrain and save the encoder directory the config names."""
    from kold_span.config.loading import load_pretrain_config
    from kold_span.training.pretrain import pretrain

    pretrain(load_pretrain_config(args.config, args.set or []), quiet=args.quiet, resume=args.resume,
             overwrite=args.overwrite)
    return 0
