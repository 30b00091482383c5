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
    parser.add_argument("--set", nargs="*", metavar="KEY=VALUE", help=f"override config keys, e.g. {example_set}")


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
