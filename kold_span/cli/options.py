"""Options several commands share, defined once."""
from __future__ import annotations

import argparse
import signal
import threading
from contextlib import contextmanager
from typing import Iterator


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


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1.

    Example:
        >>> positive_int("32")
        32
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_float(text: str) -> float:
    """An argparse type: a number of at least 0.

    Example:
        >>> non_negative_float("0.25")
        0.25
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {text}")
    return value


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


def share(text: str) -> float:
    """An argparse type: a number in [0, 1].

    Example:
        >>> share("0.25")
        0.25
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return value
