"""Options several commands share, defined once."""
from __future__ import annotations

import argparse
import math
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, Union

PathArg = Optional[Union[str, Path]]


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



def add_scoring_options(parser: argparse.ArgumentParser) -> None:
    """--batch-size, --device and --precision of the commands that score a model on gold (robustness, functional)."""
    from kold_span.config.choices import Precision

    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument("--device", default="cpu", help="where the network runs: cpu, cuda, cuda:1")
    parser.add_argument("--precision", choices=Precision.values(), default="fp32",
                        help="the network's precision (default fp32, as training scores dev and test)")

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


def check_outputs(outputs: Mapping[str, PathArg], inputs: Optional[Mapping[str, PathArg]] = None, *,
                  models: Sequence[Union[str, Path]] = (), folders: Optional[Mapping[str, PathArg]] = None) -> None:
    """Refuse, before anything is read, outputs that would destroy an input, each other or a model directory.

    `outputs` are files (`data.atomic.check_outputs_apart`: no input, no other output or its companion
    files, nothing but a writable regular file replaced); `folders` are output directories. Neither may
    be inside one of `models` (the model directories the command reads) or inside any other model
    directory (`enclosing_model_dir`): a file written there would break the model.
    """
    from kold_span.data.atomic import check_outputs_apart, check_outside
    from kold_span.models.model_dir import enclosing_model_dir

    check_outputs_apart(outputs, inputs or {})
    written = {**outputs, **(folders or {})}
    found = [folder for path in written.values() if path is not None and (folder := enclosing_model_dir(path))]
    check_outside(written, [*models, *found])


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
