"""How much the package reads at once: a bound on each file it reads whole and on each line of a line format.

A bound turns an input that never ends (`/dev/zero`, a line with no newline) or that would exhaust
memory into one clear error, which says how to raise the bound: each is an environment variable
(docs/ROBUSTNESS.md, "Read bounds"), so every command, the Python API and the service take it alike.

| bound | default | for |
|---|---|---|
| `KOLD_SPAN_MAX_LINE_BYTES` | 16 MiB | one line of a JSONL, CSV, TSV or TXT file, and one CSV field |
| `KOLD_SPAN_MAX_FILE_BYTES` | 256 MiB | a file read whole: a corpus's JSON, a model directory's JSON files |
| `KOLD_SPAN_MAX_CONFIG_BYTES` | 4 MiB | a YAML config, an options or API key file |
| `KOLD_SPAN_MAX_STDIN_BYTES` | 16 GiB | all of what `predict --input -` spools from standard input |
"""
from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator, Union

from kold_span.errors import ConfigError, KoldSpanError

MIB = 1 << 20


@dataclass(frozen=True)
class ReadLimit:
    """One bound: the environment variable that sets it (a number of bytes) and its default.

    Example:
        >>> LINE_BYTES.bytes() == 16 * MIB
        True
        >>> LINE_BYTES.exceeded("in.jsonl:3", "a line")
        'in.jsonl:3: a line longer than 16 MiB; set KOLD_SPAN_MAX_LINE_BYTES (bytes) to read longer ones'
    """

    env: str
    default: int

    def bytes(self) -> int:
        """The bound in force: the environment variable's value, else the default."""
        text = os.environ.get(self.env, "").strip()
        if not text:
            return self.default
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise ConfigError(f"{self.env}={text!r}: must be a whole number of bytes, at least 1")
        return value

    def exceeded(self, where: str, what: str) -> str:
        """The message of a read that went past the bound."""
        limit = self.bytes()
        size = f"{limit // MIB} MiB" if limit % MIB == 0 else f"{limit} bytes"
        return f"{where}: {what} longer than {size}; set {self.env} (bytes) to read longer ones"


# A comment of 16 MiB is a book, far longer than any real one, and predict's row of a 6 MB comment (its spans
# listed) still fits; the memory predict takes for a comment that long (docs/ROBUSTNESS.md, "Read bounds") is why
# the bound is not higher.
LINE_BYTES = ReadLimit("KOLD_SPAN_MAX_LINE_BYTES", 16 * MIB)
# Corpora read whole (KOLD's, KoCoSa's, MultiPICO's JSON) are tens of MB, a model's n-gram vocabulary a few, and
# parsed JSON takes several times its size in memory.
FILE_BYTES = ReadLimit("KOLD_SPAN_MAX_FILE_BYTES", 256 * MIB)
# Configs and a model directory's JSON files are kilobytes; PyYAML parses in pure Python, slowly.
CONFIG_BYTES = ReadLimit("KOLD_SPAN_MAX_CONFIG_BYTES", 4 * MIB)
# predict spools standard input to a file before it predicts (rows are then read as a file's are): a stream that
# never ends would fill the disk. 16 GiB is millions of comments, more than a stream meant to end holds.
STDIN_BYTES = ReadLimit("KOLD_SPAN_MAX_STDIN_BYTES", 16 * 1024 * MIB)


def read_bounded(path: Union[str, Path], limit: ReadLimit, error: type[KoldSpanError]) -> bytes:
    """A whole file's bytes, or `error` naming it once it holds more than `limit` allows (nothing more is read).

    Example:
        >>> read_bounded("/dev/zero", CONFIG_BYTES, ConfigError)
        Traceback (most recent call last):
        ...
        kold_span.errors.ConfigError: /dev/zero: a file longer than 4 MiB; set KOLD_SPAN_MAX_CONFIG_BYTES (bytes) to ...
    """
    bound = limit.bytes()
    with open(path, "rb") as f:
        data = f.read(bound + 1)
    if len(data) > bound:
        raise error(limit.exceeded(str(path), "a file"))
    return data


def read_bounded_text(path: Union[str, Path], limit: ReadLimit, error: type[KoldSpanError]) -> str:
    """`read_bounded` decoded as UTF-8; bytes that are not UTF-8 are `error` naming the file and line."""
    data = read_bounded(path, limit, error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise error(f"{path}:{line}: not UTF-8 text; save the file as UTF-8") from None


def bounded_lines(f: IO[bytes], path: Union[str, Path], error: type[KoldSpanError]) -> Iterator[bytes]:
    """The lines of a binary file, ends kept, each read with at most `LINE_BYTES` in memory; a longer one is
    `error` naming the file and line.

    Example:
        >>> import io
        >>> list(bounded_lines(io.BytesIO(b"a\\nbc"), "in.txt", ConfigError))
        [b'a\\n', b'bc']
    """
    bound = LINE_BYTES.bytes()
    for number, line in enumerate(iter(lambda: f.readline(bound + 1), b""), 1):
        if len(line) > bound:
            raise error(LINE_BYTES.exceeded(f"{path}:{number}", "a line"))
        yield line


def allow_csv_fields() -> None:
    """Let Python's csv module read fields as long as `LINE_BYTES` (its own limit, 128 KiB, cut long comments).

    Example:
        >>> allow_csv_fields(); csv.field_size_limit() == LINE_BYTES.bytes()
        True
    """
    csv.field_size_limit(LINE_BYTES.bytes())


def csv_field_too_long(err: csv.Error) -> bool:
    """Whether a csv error is a field longer than `allow_csv_fields` lets it read."""
    return "field larger than field limit" in str(err)
