"""Output files written whole or not at all: a temporary file beside the target, renamed over it on success.

Every writer of the package (`write_jsonl`, `predict`'s JSONL and HTML, `evaluate --out`, the
agreement report, the ablation results) goes through `atomic_write`. Until the block ends
without an error the target is untouched: a run that fails midway, or is killed, leaves the
previous file as it was instead of an empty or half-written one that looks complete. The
rename is `os.replace` on the same directory, so a reader of the target sees either the old
file or the new one, never a mixture.

A run that can continue after a kill (`kold-span predict --resume`) names its temporary file
itself (`partial`): that file is kept when the block fails (unless it is empty), and the error
says where it is.
Any other temporary file is removed on failure. Either way the error gets a note naming the
target left as it was (or not written, when there was none); the command line prints an
error's notes after its message.

Example:
    >>> import tempfile
    >>> from kold_span.errors import DataError
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = Path(tmp.name)
    >>> with atomic_write(folder / "scores.json") as f:
    ...     _ = f.write("{}\\n")
    >>> (folder / "scores.json").read_text()
    '{}\\n'
    >>> try:
    ...     with atomic_write(folder / "scores.json") as f:
    ...         _ = f.write('{"half": ')
    ...         raise DataError("gold.jsonl:3: invalid JSON")
    ... except DataError as err:
    ...     print(err, "|", error_notes(err))
    gold.jsonl:3: invalid JSON | ['...scores.json left as it was']
    >>> (folder / "scores.json").read_text(), sorted(p.name for p in folder.iterdir())
    ('{}\\n', ['scores.json'])
    >>> tmp.cleanup()
"""
from __future__ import annotations

import errno
import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator, Optional, Union

PARTIAL_SUFFIX = ".partial"


def partial_path(path: Union[str, Path]) -> Path:
    """Where a resumable run keeps its unfinished output: the target's name with `.partial` added.

    Example:
        >>> partial_path("out/predictions.jsonl").as_posix()
        'out/predictions.jsonl.partial'
    """
    path = Path(path)
    return path.with_name(path.name + PARTIAL_SUFFIX)


def add_note(err: BaseException, note: str) -> None:
    """Attach `note` to an exception (what `BaseException.add_note` does from Python 3.11 on)."""
    notes = getattr(err, "__notes__", None)
    if notes is None:
        notes = []
        try:
            err.__notes__ = notes  # type: ignore[attr-defined]
        except AttributeError:  # an exception type with __slots__: nothing to attach to
            return
    notes.append(note)


def error_notes(err: BaseException) -> list[str]:
    """The notes attached to an exception (`add_note`), in order; [] when it has none."""
    return [str(note) for note in getattr(err, "__notes__", None) or []]


@contextmanager
def atomic_write(path: Union[str, Path], mode: str = "w", *, partial: Optional[Path] = None,
                 encoding: Optional[str] = "utf-8", newline: Optional[str] = None,
                 rename: bool = True) -> Iterator[IO[Any]]:
    """A file to write `path` through: a temporary file beside it, flushed, synced and renamed over it on success.

    Args:
        path: the target; its directory is created when missing.
        mode: "w" (text), "wb" (bytes), or "a" to append to an existing `partial` (a resumed run).
        partial: a fixed temporary file, kept when the block fails (unless empty) so the run can
            resume from it; default a fresh hidden file beside the target, removed when the block fails.
        encoding: of a text mode (ignored for "wb").
        newline: as for `open` (the CSV writer wants "").
        rename: rename the temporary file over `path` on success; False keeps it (a `partial` the
            caller turns into `path` itself, as a Parquet output is converted from its rows).

    Returns:
        A context manager giving the open temporary file.

    Raises:
        IsADirectoryError: `path` is a directory (before the block runs).
        Whatever the block raises, with a note naming the target left as it was (and the kept
        `partial`); the temporary file is gone unless it is `partial`.

    Example:
        >>> import tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> with atomic_write(Path(tmp.name) / "new" / "plot.png", "wb") as f:
        ...     _ = f.write(b"PNG")
        >>> sorted(p.name for p in (Path(tmp.name) / "new").iterdir())
        ['plot.png']
        >>> tmp.cleanup()
    """
    if mode not in ("w", "wb", "a"):
        raise ValueError(f"mode must be 'w', 'wb' or 'a', got {mode!r}")
    path = Path(path)
    if path.is_dir():  # found now, not by the rename after all the work
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    if partial is None and (mode == "a" or not rename):
        raise ValueError("mode 'a' and rename=False are for a kept partial file: pass partial=")
    # A fresh name opened with "x" (not mkstemp, whose files are private): the result gets the
    # permissions any new file of the user gets.
    temp = Path(partial) if partial is not None else path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        file = temp.open(mode if partial is not None else mode.replace("w", "x"),
                         encoding=None if mode == "wb" else encoding, newline=newline)
    except OSError as err:  # named by the target the user asked for, not the temporary file beside it
        raise OSError(f"cannot write {path}: {err.strerror or err}") from err
    try:
        with file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        if rename:
            os.replace(temp, path)
    except BaseException as err:
        untouched = f"{path} left as it was" if path.exists() else f"{path} not written"
        if partial is None or not temp.exists() or temp.stat().st_size == 0:
            temp.unlink(missing_ok=True)  # a kept partial file holding nothing would only be in the way
            add_note(err, untouched)
        else:
            add_note(err, f"{untouched}; what was written so far is kept in {temp}")
        raise
    if rename:
        _sync_directory(path.parent)


def write_text_atomic(path: Union[str, Path], text: str) -> Path:
    """Write a whole UTF-8 text file through `atomic_write`; returns `path`.

    Example:
        >>> import tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> write_text_atomic(Path(tmp.name) / "report.md", "# Report\\n").read_text()
        '# Report\\n'
        >>> tmp.cleanup()
    """
    with atomic_write(path) as f:
        f.write(text)
    return Path(path)


def _sync_directory(directory: Path) -> None:
    """Make a rename inside `directory` survive a power cut (where the platform lets a directory be synced)."""
    try:
        handle = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)
