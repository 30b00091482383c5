"""Options several commands share, defined once."""
from __future__ import annotations

import argparse


def add_config_options(parser: argparse.ArgumentParser, example_config: str, example_set: str) -> None:
    """The positional config file and `--set KEY=VALUE ...` overrides (train, pretrain).

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_config_options(parser, "configs/experiment/demo.yaml", "trainer.max_epochs=3")
        >>> vars(parser.parse_args(["x.yaml", "--set", "seed=1", "run=a"]))
        {'config': 'x.yaml', 'set': ['seed=1', 'run=a']}
    """
    parser.add_argument("config", help=f"e.g. {example_config}")
    parser.add_argument("--set", nargs="*", metavar="KEY=VALUE", help=f"override config keys, e.g. {example_set}")
