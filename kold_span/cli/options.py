"""Options several commands share, defined once."""
from __future__ import annotations

import argparse
import math
import signal
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional


def add_config_options(parser: argparse.ArgumentParser, example_config: str, example_set: str) -> None:
    """The positional config file and `--set KEY=VALUE ...` overrides (train, pretrain).

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_config_options(parser, "configs/experiment/demo.yaml", "trainer.max_epochs=3")
        >>> vars(parser.parse_args(["x.yaml", "--set", "seed=1", "run=a"]))
        {'config': 'x.yaml', 'set': ['seed=1', 'run=a']}
    """
    parser.add_argument("config", help=f"e.g. {example_config}")
    add_key_values(parser, "--set", f"override config keys, e.g. {example_set}")


def add_key_values(parser: Any, flag: str, help_text: str) -> None:
    """A KEY=VALUE option that takes several pairs and may be repeated, every pair kept in order: the one
    definition of `--set` and `--option` in every command.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_key_values(parser, "--set", "override config keys")
        >>> parser.parse_args(["--set", "run=X", "--set", "trainer.max_epochs=1", "seed=2"]).set
        ['run=X', 'trainer.max_epochs=1', 'seed=2']
        >>> parser.parse_args([]).set is None
        True
    """
    parser.add_argument(flag, action="extend", nargs="+", metavar="KEY=VALUE",
                        help=f"{help_text} (repeatable; every pair is kept, later ones win)")


def add_repeatable(parser: Any, flag: str, metavar: str, help_text: str, **options: Any) -> None:
    """An option of one or more values that may also be repeated, every value kept: `--model A --model B` is
    `--model A B` (argparse's plain nargs keeps only the last)."""
    parser.add_argument(flag, action="extend", nargs="+", metavar=metavar, help=help_text, **options)


def non_empty_path(text: str) -> str:
    """An argparse type: a path that is not empty (pathlib reads `--output ''` as the current directory).

    Example:
        >>> non_empty_path("out.jsonl")
        'out.jsonl'
        >>> non_empty_path(" ")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected a file name, got an empty one
    """
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a file name, got an empty one")
    return text


def bounded(kind: Callable[[str], float], low: float, high: Optional[float] = None,
            noun: str = "a number") -> Callable[[str], Any]:
    """An argparse type: `kind(text)` (int or float) within [low, high] (no upper bound when `high` is None).

    Example:
        >>> positive_int("32"), share("0.25"), port_number("0")
        (32, 0.25, 0)
        >>> positive_int("0")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be at least 1, got 0
        >>> share("2")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be in [0, 1], got 2
    """
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        if not low <= value <= (math.inf if high is None else high):  # `not` also refuses NaN
            limit = f"at least {low}" if high is None else f"in [{low}, {high}]"
            raise argparse.ArgumentTypeError(f"must be {limit}, got {text}")
        return value
    return parse


positive_int = bounded(int, 1, noun="a whole number")
non_negative_float = bounded(float, 0)
share = bounded(float, 0, 1)
port_number = bounded(int, 0, 65535, noun="a port number (0 for any free one)")
seed_number = bounded(int, 0, 2 ** 32 - 1, noun="a seed (a whole number)")  # as numpy takes seeds


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as Ctrl-C is: the same clean-up, outputs kept, partial files kept."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """During the block, SIGTERM (`kill`, a scheduler's stop) raises `Terminated`, as Ctrl-C raises KeyboardInterrupt.

    Example:
        >>> import os
        >>> try:
        ...     with sigterm_as_interrupt():
        ...         os.kill(os.getpid(), signal.SIGTERM)
        ... except Terminated:
        ...     print("stopped")
        stopped
    """
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return

    def stop(signum, frame):
        raise Terminated()

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
