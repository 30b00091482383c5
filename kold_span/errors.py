"""The project's errors: one root, `KoldSpanError`, that the command line reports without a traceback.

Each subclass also derives from the built-in error it refines (`ValueError` for bad
values, `RuntimeError` for a model that cannot be loaded), so callers that caught
those before still do.

Which to raise: a mistake the user can fix is one of these, named by where it was made (each class
says where), every subclass defined here. A path that does not exist is the built-in
`FileNotFoundError`, which the command line reports with its path. What only a bug can cause (a
model used before `fit`, two parallel sequences of different lengths) stays a built-in error, so
that it shows its traceback.

>>> issubclass(DataError, KoldSpanError) and issubclass(DataError, ValueError)
True
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Optional


class KoldSpanError(Exception):
    """Something the user can fix: a bad file, config value, model directory or argument."""


class ConfigError(KoldSpanError, ValueError):
    """A config file or override is invalid; the message names the key and the file."""


class DataError(KoldSpanError, ValueError):
    """Malformed input data; the message names the file, line (or record) and field."""


class EncoderLoadError(KoldSpanError, RuntimeError):
    """An encoder or tokenizer could not be loaded (offline without a cache, a bad directory)."""


class ModelFormatError(KoldSpanError, ValueError):
    """A trained model directory this version cannot read: a missing file or key, an unknown format."""


class ArgumentError(KoldSpanError, ValueError):
    """A bad argument to the Python API (a wrong type, an empty batch size); names the argument."""


class OutputInUseError(KoldSpanError, RuntimeError):
    """An output file another run is writing now (its lock is taken): refused instead of mixing the two runs."""


class OutputTargetError(ArgumentError):
    """An output a command will not write: a device, pipe or socket, a write-protected file, a file inside a model
    directory, another output's companion file, or a non-empty directory of another kind (without --overwrite)."""


class NonFiniteError(KoldSpanError, ValueError):
    """A number that must be finite came out NaN or infinite: a loss or gradient norm in training (the run
    diverged), or a value about to be written as JSON, which has no NaN or Infinity."""


class MissingExtraError(KoldSpanError, ImportError):
    """An optional package is not installed; the message names the `pip install 'kold-span[extra]'` that adds it."""


@contextmanager
def needs_extra(extra: str) -> Iterator[None]:
    """Around the imports of an optional package: one that is missing raises `MissingExtraError` naming `extra`.

    The package's own modules are no optional package: a missing one is a bug and keeps its traceback.

    >>> with needs_extra("serve"):
    ...     import no_such_module
    Traceback (most recent call last):
    ...
    kold_span.errors.MissingExtraError: no_such_module is not installed: pip install 'kold-span[serve]'
    """
    try:
        yield
    except ModuleNotFoundError as err:
        if err.name is None or err.name.partition(".")[0] == "kold_span":
            raise
        raise MissingExtraError(f"{err.name} is not installed: pip install 'kold-span[{extra}]'") from err


class UnreachableTargetError(KoldSpanError, ValueError):
    """No threshold meets a decision target (`kold-span thresholds`, `decision:`); names the best value reached."""


class UnfinishedOutputError(DataError):
    """An unfinished output that cannot be resumed: no rows of `kold-span predict`, or the rows of another input."""


class PackedEncoderError(EncoderLoadError):
    """The packed encoder file is not in the expected format."""


class SplitZipError(EncoderLoadError):
    """A split zip's parts are missing, out of order, corrupt or unsafe to unzip."""


class RequestError(KoldSpanError, ValueError):
    """A request the service refuses: the HTTP status, the message, the field it names, and optional
    `details` (Perspective's typed error, e.g. `{"errorType": "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE"}`)."""

    def __init__(self, status: int, message: str, field: str = "body",
                 details: Optional[list[dict[str, Any]]] = None):
        super().__init__(message)
        self.status, self.message, self.field, self.details = status, message, field, details


class Throttled(RequestError):
    """A 429 for one key: its rate or its daily quota is spent (`reason`, the error's `errorType`:
    RATE_LIMIT_EXCEEDED or QUOTA_EXCEEDED, apart from the queue's QUEUE_FULL); retry after
    `retry_after` seconds."""

    def __init__(self, message: str, field: str, retry_after: int, reason: str):
        super().__init__(429, message, field, [{"errorType": reason}])
        self.retry_after = retry_after


class QueueFull(KoldSpanError):
    """More comments are waiting than `max_queue` allows; retry after `retry_after` seconds."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class Closed(KoldSpanError):
    """The batcher is draining for shutdown and takes no new work."""


class CommentTooLarge(KoldSpanError):
    """One comment's windows come to more tokens than `max_comment_tokens`; none of its request ran."""

    def __init__(self, tokens: int, limit: int):
        super().__init__(f"comments: one comment is {tokens} tokens (its windows × the longest), over the limit "
                         f"of {limit} per comment (--max-comment-tokens); split it, or send it to "
                         "`kold-span predict`")
        self.tokens, self.limit = tokens, limit


class RequestTooLarge(KoldSpanError):
    """A request's comments come to more tokens than `max_request_tokens`; none of them ran."""

    def __init__(self, tokens: int, limit: int, measured_all: bool):
        at_least = "" if measured_all else "at least "
        super().__init__(f"comments: {at_least}{tokens} tokens, over the limit of {limit} per request "
                         "(--max-request-tokens); send fewer or shorter comments per request")
        self.tokens, self.limit = tokens, limit
