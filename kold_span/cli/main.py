"""The `kold-span` command: one module per subcommand, registered in `COMMANDS`, and what they share.

Each command module has `add_parser(subparsers)`, which adds its subcommand and options and
returns the subparser, and `run(args) -> int`. `main` parses the arguments, sends the
package's log records to stderr (messages only; INFO, DEBUG with `-v`, WARNING with `-q` or a
command's own `--quiet`), runs the command, and reports a `KoldSpanError` or an `OSError` as
one line, `kold-span COMMAND: error: MESSAGE; NOTES` (the notes say which output files were left
as they were), exit status 2; an interrupt (Ctrl-C) the same way, exit status 130. Any other
exception is a bug and shows its traceback.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from contextlib import contextmanager
from types import ModuleType
from typing import Callable, Iterator, Optional, Sequence

from kold_span.cli import (ablate, agreement, configs, convert, evaluate, export, functional, import_encoder, predict,
                           pretrain, robustness, serve, thresholds, train)
from kold_span.cli.options import Terminated
from kold_span.config.registry import Registry
from kold_span.data.atomic import error_notes
from kold_span.errors import KoldSpanError

DESCRIPTION = ("The `kold-span` command line: train, configs, predict, evaluate, thresholds, robustness, functional, "
               "convert, agreement, pretrain, ablate, import-encoder, serve, export.")
# Command modules by subcommand, in the order `kold-span --help` lists them; installed packages add theirs (after
# these) under the entry-point group `kold_span.commands` (docs/ARCHITECTURE.md, "Where to add").
COMMANDS: Registry[ModuleType] = Registry("command", "commands", group="kold_span.commands")
for _module in (train, configs, predict, evaluate, thresholds, robustness, functional, convert, agreement, pretrain,
                import_encoder, ablate, serve, export):
    COMMANDS.add(_module.__name__.rsplit(".", 1)[1].replace("_", "-"), _module)
PACKAGE_LOGGER = logging.getLogger("kold_span")


def build_parser() -> argparse.ArgumentParser:
    """The `kold-span` parser: the global -v/-q flags and one subcommand per command of COMMANDS."""
    parser = argparse.ArgumentParser(prog="kold-span", description=DESCRIPTION)
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-v", "--verbose", dest="log_verbose", action="store_true",
                           help="log debug messages too")
    verbosity.add_argument("-q", "--quiet", dest="log_quiet", action="store_true",
                           help="log warnings and errors only")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        command = COMMANDS.get(name)
        command.add_parser(subparsers).set_defaults(run=command.run)
    return parser


def log_level(args: argparse.Namespace) -> int:
    """DEBUG with -v; WARNING with -q or the command's own --quiet; INFO otherwise."""
    if args.log_verbose:
        return logging.DEBUG
    return logging.WARNING if args.log_quiet or getattr(args, "quiet", False) else logging.INFO


@contextmanager
def warnings_in_one_line(command: str) -> Iterator[None]:
    r"""While a command runs, a library's warning (sklearn, statsmodels, torch) is one line, not a file and its code.

    Example:
        >>> import contextlib, io, warnings
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err), warnings_in_one_line("agreement"):
        ...     warnings.warn("Precision is ill-defined", UserWarning)
        >>> err.getvalue()
        'kold-span agreement: warning: Precision is ill-defined (UserWarning)\n'
    """
    def one_line(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        print(f"kold-span {command}: warning: {text[:300]} ({category.__name__})", file=file or sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = one_line
        yield


@contextmanager
def logging_to_stderr(level: int) -> Iterator[None]:
    """While a command runs, the package's log records of `level` and above go to stderr, message only.

    At WARNING and above (-q) the libraries say only warnings too: log records below WARNING are disabled
    process-wide (Lightning's device lines and tips; Lightning sets its loggers to INFO when it is imported,
    later than this, so their levels cannot be set here), and the datasets' "Map:" bars are off.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    before = PACKAGE_LOGGER.level, PACKAGE_LOGGER.propagate
    PACKAGE_LOGGER.addHandler(handler)
    PACKAGE_LOGGER.setLevel(level)
    PACKAGE_LOGGER.propagate = False  # a root handler set up by the caller would print each record twice
    quiet = level >= logging.WARNING
    disabled = logging.root.manager.disable
    if quiet:
        logging.disable(max(disabled, logging.INFO))
    bars = _datasets_bars_off() if quiet else None
    try:
        yield
    finally:
        PACKAGE_LOGGER.removeHandler(handler)
        PACKAGE_LOGGER.setLevel(before[0])
        PACKAGE_LOGGER.propagate = before[1]
        logging.disable(disabled)
        if bars:
            bars()


def _datasets_bars_off() -> Optional[Callable[[], None]]:
    """Turn the datasets library's progress bars off; what turns them back on (None if nothing to undo).

    Loaded already (a second command in one process), it is switched off; not yet, its environment variable
    is set for it to read when training imports it (importing it here would slow every command).
    """
    if "datasets" in sys.modules:
        from datasets.utils import logging as datasets_logging

        if not datasets_logging.is_progress_bar_enabled():
            return None
        datasets_logging.disable_progress_bar()
        return datasets_logging.enable_progress_bar
    if "HF_DATASETS_DISABLE_PROGRESS_BARS" in os.environ:
        return None
    os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
    return lambda: os.environ.pop("HF_DATASETS_DISABLE_PROGRESS_BARS", None)


def os_error_message(err: OSError) -> str:
    """An `OSError` as a message that names its path, without the `[Errno N]` prefix.

    Example:
        >>> os_error_message(FileNotFoundError(2, "No such file or directory", "x.txt"))
        'no such file: x.txt'
        >>> os_error_message(IsADirectoryError(21, "Is a directory", "out"))
        'is a directory: out'
        >>> os_error_message(FileNotFoundError("data.train: x.jsonl does not exist"))
        'data.train: x.jsonl does not exist'
    """
    if err.strerror is None:  # raised with a sentence of its own
        return str(err)
    reason = "no such file" if isinstance(err, FileNotFoundError) else err.strerror[:1].lower() + err.strerror[1:]
    paths = [str(path) for path in (err.filename, err.filename2) if path is not None]
    return f"{reason}: {' → '.join(paths)}" if paths else reason


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run `kold-span` with `argv` (default: the process arguments); returns the exit status."""
    args = build_parser().parse_args(argv)
    status = 2
    with logging_to_stderr(log_level(args)), warnings_in_one_line(args.command):
        try:
            return args.run(args)
        except KoldSpanError as err:
            message, notes = str(err), error_notes(err)
        except OSError as err:
            message, notes = os_error_message(err), error_notes(err)
        except Terminated as err:  # SIGTERM during a command that takes it as Ctrl-C (predict)
            message, notes, status = "terminated (SIGTERM)", error_notes(err), 143
        except KeyboardInterrupt as err:
            message, notes, status = "interrupted", error_notes(err), 130
    print(f"kold-span {args.command}: error: {'; '.join([message, *notes])}", file=sys.stderr)
    return status
