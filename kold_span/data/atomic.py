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

One run writes a target at a time: `atomic_write` holds an exclusive lock on it (`output_lock`:
`flock` on a hidden `.<name>.lock` beside it, removed when released) from the start of the block
to the rename, and a second run, in another process or thread, is refused at once with an
`OutputInUseError` instead of mixing its rows with the first's. A caller that does more than one
write to a target (`predict`: its resume point, its partial file, the Parquet conversion) holds
`output_lock` around all of them; the same thread takes a lock it holds again freely.
`check_outputs_apart` refuses an output that is one of the inputs (the same path, a link to it)
before anything is read.

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
import logging
import os
import re
import secrets
import threading
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any, Iterator, Mapping, Optional, Union

from kold_span.errors import ArgumentError, OutputInUseError

log = logging.getLogger(__name__)
PARTIAL_SUFFIX = ".partial"
LOCK_SUFFIX = ".lock"
# Targets this process holds the lock of: resolved path -> the holding thread. That thread takes its own lock
# again (predict's Parquet conversion inside its partial file's block); another thread is refused.
_HELD: dict[str, int] = {}
_HELD_GUARD = threading.Lock()


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
    if partial is None and (mode == "a" or not rename):
        raise ValueError("mode 'a' and rename=False are for a kept partial file: pass partial=")
    with output_lock(path):
        with _atomic_write(path, mode, partial, encoding, newline, rename) as file:
            yield file


@contextmanager
def _atomic_write(path: Path, mode: str, partial: Optional[Path], encoding: Optional[str],
                  newline: Optional[str], rename: bool) -> Iterator[IO[Any]]:
    """`atomic_write` once its arguments are checked and the target's lock is held."""
    path.parent.mkdir(parents=True, exist_ok=True)
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


def lock_path(path: Union[str, Path]) -> Path:
    """The hidden file whose `flock` is the lock on writing `path` (links resolved: one lock per file).

    Example:
        >>> lock_path("/tmp/out/predictions.jsonl").name
        '.predictions.jsonl.lock'
    """
    target = Path(os.path.realpath(path))
    return target.with_name(f".{target.name}{LOCK_SUFFIX}")


@contextmanager
def output_lock(path: Union[str, Path]) -> Iterator[None]:
    """Hold the exclusive lock on writing `path` for the block; an `OutputInUseError` if another run holds it.

    The lock is `flock` on `lock_path(path)`, so it is released by the kernel when its holder dies
    (`kill -9` too): a lock file left behind never blocks a later run. The holder writes its
    process id into the file, named in the refusal. Where the file system cannot lock (some
    network mounts), the block runs unlocked, with a warning.

    Example:
        >>> import tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> target = Path(tmp.name) / "out.jsonl"
        >>> with output_lock(target):
        ...     with output_lock(target):  # the same thread: taken again
        ...         lock_path(target).exists()
        True
        >>> lock_path(target).exists()
        False
        >>> tmp.cleanup()
    """
    key = str(lock_path(path))
    me = threading.get_ident()
    with _HELD_GUARD:
        holder = _HELD.get(key)
    if holder is not None:
        if holder != me:
            raise _in_use(path, os.getpid())
        yield  # this thread holds it already: the outer block releases it
        return
    handle = _acquire(Path(key), path)
    with _HELD_GUARD:
        _HELD[key] = me
    try:
        yield
    finally:
        with _HELD_GUARD:
            del _HELD[key]
        if handle is not None:
            Path(key).unlink(missing_ok=True)  # while still held: a run waiting on this file retries on a fresh one
            os.close(handle)


def _in_use(path: Union[str, Path], pid: Optional[int]) -> OutputInUseError:
    """The refusal of a second run on an output another run is writing."""
    holder = f"another run (process {pid})" if pid else "another run"
    return OutputInUseError(f"{path} is being written by {holder}; wait for it to finish or choose another "
                            "output (two runs on one file would mix their rows)")


def _acquire(lock: Path, path: Union[str, Path]) -> Optional[int]:
    """The open, `flock`ed lock file of `path` (None where locking is not supported); `OutputInUseError` if held."""
    try:
        import fcntl
    except ImportError:  # not a POSIX system: no advisory locks to take
        log.debug("%s: no fcntl here, written without a lock", path)
        return None
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        try:
            handle = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise OSError(f"cannot write {path}: {err.strerror or err}") from err
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(handle)
            os.close(handle)
            raise _in_use(path, pid) from None
        except OSError as err:
            os.close(handle)
            log.warning("%s: the file system cannot lock (%s); written without a lock", path, err.strerror or err)
            return None
        # Its last holder may have removed the file between our open and our lock: lock the file now there.
        try:
            same = os.path.samestat(os.fstat(handle), os.stat(lock))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(handle)
    os.ftruncate(handle, 0)
    os.write(handle, f"{os.getpid()}\n".encode())
    _remove_stale_temporaries(Path(os.path.realpath(path)))
    return handle


def _remove_stale_temporaries(target: Path) -> None:
    """Remove the temporary files a killed run of `target` left (`.NAME.XXXXXXXX.tmp`); under the lock none is live."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.[0-9a-f]{{8}}\.tmp")
    try:
        stale = [p for p in target.parent.iterdir() if pattern.fullmatch(p.name)]
    except OSError:
        return
    for path in stale:
        log.info("%s: removing %s, left by a run that was killed", target, path.name)
        path.unlink(missing_ok=True)


def _read_pid(handle: int) -> Optional[int]:
    """The process id a lock's holder wrote into its lock file, or None."""
    try:
        return int(os.pread(handle, 32, 0).decode("ascii").strip() or "0") or None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def same_file(a: Union[str, Path], b: Union[str, Path]) -> bool:
    """Whether two paths name one file: the same resolved path, or (both existing) the same inode (a hard link).

    Example:
        >>> same_file("out/../in.jsonl", "in.jsonl"), same_file("in.jsonl", "out.jsonl")
        (True, False)
    """
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def check_outputs_apart(outputs: Mapping[str, Optional[Union[str, Path]]],
                        inputs: Mapping[str, Optional[Union[str, Path]]]) -> None:
    """An `ArgumentError` if an output is one of the inputs or another output (by `same_file`); None entries skipped.

    Called before anything is read, so that a run cannot destroy its own input.

    Args:
        outputs: option name (as the user typed it, e.g. "--output") → path.
        inputs: option name → path.

    Example:
        >>> check_outputs_apart({"--output": "in.jsonl"}, {"--input": "./in.jsonl"})
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: --output in.jsonl is the input (--input ./in.jsonl): writing it would destroy the input; choose another output file
    """
    named_outputs = [(name, path) for name, path in outputs.items() if path is not None]
    for i, (name, path) in enumerate(named_outputs):
        for other, source in inputs.items():
            if source is not None and same_file(path, source):
                raise ArgumentError(f"{name} {path} is the input ({other} {source}): writing it would destroy the "
                                    "input; choose another output file")
        for other, earlier in named_outputs[:i]:
            if same_file(path, earlier):
                raise ArgumentError(f"{name} {path} is also {other} {earlier}: choose two different files")


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
    with suppress(OSError):
        handle = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)
