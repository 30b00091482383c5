"""`kold-span configs`: the experiment configs shipped with the package, by the name `kold-span train` takes."""
from __future__ import annotations

import argparse
import textwrap

LINE_WIDTH = 120  # each config on one line: its description is shortened to fit


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `configs` subcommand.

    Example:
        >>> parser = add_parser(argparse.ArgumentParser().add_subparsers())
        >>> vars(parser.parse_args([]))
        {}
    """
    return subparsers.add_parser("configs", help="list the shipped experiment configs (kold-span train NAME)")


def run(args: argparse.Namespace) -> int:
    """Print each shipped experiment's name and what it is for, and the folder they are in."""
    from kold_span.config.shipped import config_root, description, experiment_names

    folder = config_root() / "experiment"
    names = experiment_names()
    width = max(map(len, names), default=0)
    print(f"{len(names)} shipped experiment configs (kold-span train NAME), in {folder}:")
    for name in names:
        about = textwrap.shorten(description(folder / f"{name}.yaml"), LINE_WIDTH - width - 4, placeholder=" …")
        print(f"  {name:<{width}}  {about}".rstrip())
    return 0
