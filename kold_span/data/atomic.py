"""Output files written whole or not at all: a temporary file beside the target, renamed over it on success.

Every file the package writes goes through `atomic_write`, text always in UTF-8; only what a library writes
into a directory being built (`save_pretrained`, safetensors) and the service's append-only feedback file do
not. What it promises is told once, in docs/ROBUSTNESS.md ("Output files", "What a command may write"): the
target untouched until the rename (`os.replace` in its directory), the error noting it (`add_note`); a
resumable run's own temporary file kept (`partial`); one run per target (`output_lock`); outputs apart from
inputs and from each other (`check_outputs_apart`, `companion_of`); which targets may be replaced
(`output_target`); directories built beside and swapped in whole (`replace_directory`).

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
import shutil
import signal
import stat
import threading
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Mapping, Optional, Sequence, Union

from kold_span.errors import ArgumentError, OutputInUseError, OutputTargetError

log = logging.getLogger(__name__)
PARTIAL_SUFFIX = ".partial"
OPTIONS_SUFFIX = ".json"  # after PARTIAL_SUFFIX: the options a resumable output was written with
LOCK_SUFFIX = ".lock"
_TEMPORARY = r"\.{name}\.[0-9a-f]{{8}}\.tmp"  # a temporary file of the target `name` (`_atomic_write`)
_STAGING = r"\.{name}\.(new|old)-[0-9a-f]{{8}}"  # a folder `replace_directory` builds, or the one it replaced
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

    `path`'s directory is created when missing. `mode` is "w" (text), "wb" (bytes), or "a" to append to an existing
    `partial` (a resumed run): a fixed temporary file, kept when the block fails (unless empty) so the run can
    resume from it; by default a fresh hidden file beside the target, removed when the block fails. `newline` is
    as for `open` (the CSV writer wants ""). `rename` False keeps the temporary file (a `partial` the caller turns
    into `path` itself, as a Parquet output is converted from its rows).

    A `path` that must not be replaced (`output_target`) is refused before the block runs (IsADirectoryError,
    OutputTargetError); whatever the block raises gets a note naming the target left as it was (and the kept
    `partial`).

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
    path = output_target(path)  # found now, not by the rename after all the work
    if partial is None and (mode == "a" or not rename):
        raise ValueError("mode 'a' and rename=False are for a kept partial file: pass partial=")
    with output_lock(path):
        if partial is not None:
            check_companion(partial, path)
        with _atomic_write(path, mode, partial, encoding, newline, rename) as file:
            yield file


@contextmanager
def _atomic_write(path: Path, mode: str, partial: Optional[Path], encoding: Optional[str],
                  newline: Optional[str], rename: bool) -> Iterator[IO[Any]]:
    """`atomic_write` once its arguments are checked and the target's lock is held."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A fresh name opened with "x" (not mkstemp, whose files are private): the result gets the
    # permissions any new file of the user gets, or those of the file it replaces.
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
            keep_mode(temp, path)
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


def output_target(path: Union[str, Path]) -> Path:
    """The file writing `path` replaces: `path`, or the file a symbolic link `path` points to.

    An output is written beside its target and renamed over it, so a target that is no regular
    file would be replaced by one: a directory is an `IsADirectoryError`; a device (/dev/null), a
    named pipe or a socket, and a file without write permission (whoever runs the command, root
    too: the mode bits are read, not only `os.access`), an `OutputTargetError`. A link is followed,
    so the link stays and the file it names gets the output.

    Example:
        >>> output_target("/dev/null")
        Traceback (most recent call last):
        ...
        kold_span.errors.OutputTargetError: /dev/null: not a regular file but a character device; an output is written beside its target and renamed over it, which would replace the character device: name a regular file
    """
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        info = target.stat()
    except OSError:  # not there yet (or not reachable: opening it says why)
        return target
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not stat.S_ISREG(info.st_mode):
        kind = _special_kind(info.st_mode)
        raise OutputTargetError(f"{path}: not a regular file but {kind}; an output is written beside its target and "
                                f"renamed over it, which would replace the {kind.split(' ', 1)[1]}: name a regular "
                                "file")
    if not (os.access(target, os.W_OK) and info.st_mode & 0o222):
        raise OutputTargetError(f"{path}: write-protected (mode {stat.S_IMODE(info.st_mode):04o}); kold-span does not "
                                f"replace a file without write permission: make it writable (chmod u+w) or name "
                                "another output")
    return target


def _special_kind(mode: int) -> str:
    """What a file that is neither a regular file nor a directory is, for a message."""
    kinds = [(stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")]
    return next((name for test, name in kinds if test(mode)), "a special file")


def keep_mode(new: Path, old: Path) -> None:
    """Give `new`, about to replace `old`, the permission bits of `old` (and its owner and group, where allowed)."""
    try:
        info = old.stat()
    except OSError:  # nothing replaced: the new file keeps the permissions any new file gets
        return
    os.chmod(new, stat.S_IMODE(info.st_mode))
    mine = new.stat()
    if (mine.st_uid, mine.st_gid) != (info.st_uid, info.st_gid):
        with suppress(OSError):  # only root may give a file away; anyone else keeps their own
            os.chown(new, info.st_uid, info.st_gid)


def check_companion(companion: Path, target: Path) -> None:
    """An `OutputTargetError` unless a file kept beside `target` (its `.partial`, its options) is absent or a
    regular file: a link or a device there would be written through, or renamed over the target."""
    try:
        info = companion.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else (
            "a directory" if stat.S_ISDIR(info.st_mode) else _special_kind(info.st_mode))
        raise OutputTargetError(f"{companion}: {kind}, where writing {target.name} keeps a file of its own; "
                                "remove it or name another output")


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
                            "output (two runs on one output would mix what they write)")


def _acquire(lock: Path, path: Union[str, Path]) -> Optional[int]:
    """The open, `flock`ed lock file of `path` (None where locking is not supported); `OutputInUseError` if held."""
    try:
        import fcntl
    except ImportError:  # not a POSIX system: no advisory locks to take
        log.debug("%s: no fcntl here, written without a lock", path)
        return None
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        try:  # never through a link: the lock file is truncated, and a link could name any file
            handle = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise OutputTargetError(f"{lock}: a symbolic link where the lock file of {path} belongs; remove "
                                        "it") from None
            raise OSError(f"cannot write {path}: {err.strerror or err}") from err
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            os.close(handle)
            raise OutputTargetError(f"{lock}: not a regular file, where the lock file of {path} belongs; remove it")
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
    pattern = re.compile(_TEMPORARY.format(name=re.escape(target.name)))
    try:
        stale = [p for p in target.parent.iterdir() if pattern.fullmatch(p.name) and p.is_file()
                 and not p.is_symlink()]
    except OSError:
        return
    for path in stale:
        log.info("%s: removing %s, left by a run that was killed", target, path.name)
        with suppress(OSError):
            path.unlink()


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
    """Refuse, before anything is read, an output that would destroy an input, another output or itself.

    Each output must name a file (not "" nor "-": outputs are written whole and renamed into place,
    never streamed to standard output) that may be replaced (`output_target`); it must not be one
    of the inputs or another output (by `same_file`), nor a file a writer keeps beside one of them
    (`companion_of`: its `.partial`, options, lock or temporary files). None entries are skipped. Both mappings go
    from option name (as the user typed it, e.g. "--output") to path; the `ArgumentError` names both options.

    Example:
        >>> check_outputs_apart({"--output": "in.jsonl"}, {"--input": "./in.jsonl"})
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: --output in.jsonl is the input (--input ./in.jsonl): writing it would destroy the input; choose another output file
        >>> check_outputs_apart({"--output": "o.jsonl", "--html": "o.jsonl.partial"}, {})
        Traceback (most recent call last):
        ...
        kold_span.errors.OutputTargetError: --html o.jsonl.partial is the unfinished rows of --output o.jsonl: choose two files apart
    """
    named_outputs = [(name, path) for name, path in outputs.items() if path is not None]
    for name, path in named_outputs:
        if str(path) == "":
            raise OutputTargetError(f"{name} is empty: name a file")
        if str(path) == "-":
            raise OutputTargetError(f"{name} -: outputs are written whole and renamed into place, never to standard "
                                    "output: name a file (./- for a file named '-')")
        output_target(path)
    for i, (name, path) in enumerate(named_outputs):
        for other, source in inputs.items():
            if source is None:
                continue
            if same_file(path, source):
                raise ArgumentError(f"{name} {path} is the input ({other} {source}): writing it would destroy the "
                                    "input; choose another output file")
            if role := companion_of(source, path):
                raise OutputTargetError(f"{other} {source} is the {role} of {name} {path}: writing it would destroy "
                                        "the input; choose another output file")
        for other, earlier in named_outputs[:i]:
            if same_file(path, earlier):
                raise ArgumentError(f"{name} {path} is also {other} {earlier}: choose two different files")
            for (a, a_path), (b, b_path) in (((name, path), (other, earlier)), ((other, earlier), (name, path))):
                if role := companion_of(a_path, b_path):
                    raise OutputTargetError(f"{a} {a_path} is the {role} of {b} {b_path}: choose two files apart")


def companion_of(path: Union[str, Path], output: Union[str, Path]) -> Optional[str]:
    """What `path` is to `output` when it is a file kept beside it while it is written, else None.

    Example:
        >>> companion_of("out/p.jsonl.partial.json", "out/p.jsonl"), companion_of("out/.p.jsonl.lock", "out/p.jsonl")
        ('options file', 'lock file')
        >>> companion_of("out/p.jsonl.html", "out/p.jsonl") is None
        True
    """
    path, target = Path(os.path.realpath(path)), Path(os.path.realpath(output))
    if path.parent != target.parent:
        return None
    partial = partial_path(target).name
    roles = {partial: "unfinished rows", partial + OPTIONS_SUFFIX: "options file",
             f".{target.name}{LOCK_SUFFIX}": "lock file"}
    if path.name in roles:
        return roles[path.name]
    return "temporary file" if re.fullmatch(_TEMPORARY.format(name=re.escape(target.name)), path.name) else None


def check_outside(paths: Mapping[str, Optional[Union[str, Path]]], folders: Sequence[Union[str, Path]],
                  what: str = "model directory") -> None:
    """An `OutputTargetError` if one of the output `paths` is one of `folders` or inside one (links resolved).

    Example:
        >>> check_outside({"--html": "m/config.json"}, ["m"])
        Traceback (most recent call last):
        ...
        kold_span.errors.OutputTargetError: --html m/config.json is inside the model directory m: writing it would change the model; choose a file outside it
    """
    for name, path in paths.items():
        if path is None:
            continue
        resolved = Path(os.path.realpath(path))
        for folder in folders:
            root = Path(os.path.realpath(folder))
            if resolved == root or root in resolved.parents:
                raise OutputTargetError(f"{name} {path} is inside the {what} {folder}: writing it would change the "
                                        f"{what.split()[0]}; choose a file outside it")


@contextmanager
def replace_directory(target: Union[str, Path], same_kind: Callable[[Path], bool], what: str,
                      overwrite: bool = False) -> Iterator[Path]:
    """A new, empty folder beside `target` to build it in, swapped in for `target` when the block ends without error.

    A directory (a model, an encoder) is never edited in place: until the swap `target` is
    untouched, so a block that fails or is interrupted (Ctrl-C, SIGTERM taken as Ctrl-C) leaves
    it as it was, and its folder is removed (the error gets a note saying so). The swap is two
    renames (the old folder aside, the new one in) with SIGINT and SIGTERM held back between them
    (`_signals_held`), then the old folder is removed. The lock on `target` (`output_lock`) is held
    throughout: a second run replacing it is refused. A process killed outright leaves a hidden
    `.NAME.new-*` (or, between the renames, `.NAME.old-*`) folder beside it, which the next
    replacement removes (or, with no `target`, renames back). A link `target` is followed. A
    non-empty `target` that is not `what` (`same_kind` says) is refused unless `overwrite`
    (`check_replaceable`).

    Example:
        >>> import tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> model = Path(tmp.name) / "model"
        >>> with replace_directory(model, lambda p: True, "a model") as folder:
        ...     _ = (folder / "config.json").write_text("{}")
        >>> sorted(p.name for p in Path(tmp.name).iterdir()), (model / "config.json").read_text()
        (['model'], '{}')
        >>> tmp.cleanup()
    """
    target = directory_target(target)
    with output_lock(target):
        check_replaceable(target, same_kind, what, overwrite)
        _remove_stale_folders(target)
        staging = target.with_name(f".{target.name}.new-{secrets.token_hex(4)}")
        staging.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir()
        with suppress(OSError):
            os.chmod(staging, stat.S_IMODE(target.stat().st_mode))
        try:
            yield staging
            _swap_in(staging, target)
        except BaseException as err:
            if staging.exists():  # not swapped in (a signal held back during the swap arrives after it)
                shutil.rmtree(staging, ignore_errors=True)
                add_note(err, f"{target} left as it was" if target.exists() else f"{target} not written")
            raise


def directory_target(path: Union[str, Path]) -> Path:
    """The directory writing `path` replaces (a link followed); an `OutputTargetError` if `path` is something else."""
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if target.exists() and not target.is_dir():
        raise OutputTargetError(f"{path}: not a directory; name a directory to write")
    return target


def check_replaceable(target: Union[str, Path], same_kind: Callable[[Path], bool], what: str,
                      overwrite: bool = False) -> None:
    """An `OutputTargetError` unless `target` may be replaced by `what`: absent, empty, its kind, or `overwrite`.

    Even with `overwrite`, a folder holding the current directory is refused.

    Example:
        >>> check_replaceable(".", lambda p: False, "an encoder directory", overwrite=True)
        Traceback (most recent call last):
        ...
        kold_span.errors.OutputTargetError: . holds the current directory: name another directory for an encoder directory
    """
    target = directory_target(target)
    if not target.is_dir() or not any(target.iterdir()) or same_kind(target):
        return
    if not overwrite:
        raise OutputTargetError(f"{target} already exists and is not empty, and is not {what}: nothing was "
                                "written; remove it, name another directory, or pass --overwrite to replace it")
    here, root = Path.cwd().resolve(), target.resolve()
    if here == root or root in here.parents:
        raise OutputTargetError(f"{target} holds the current directory: name another directory for {what}")


def _swap_in(staging: Path, target: Path) -> None:
    """Put `staging` where `target` is, by renames that no Ctrl-C or SIGTERM cuts apart; the old folder removed."""
    old = target.with_name(f".{target.name}.old-{secrets.token_hex(4)}")
    with _signals_held():
        replaced = target.exists()
        if replaced:
            os.rename(target, old)
        try:
            os.rename(staging, target)
        except BaseException:
            if replaced:
                os.rename(old, target)
            raise
        _sync_directory(target.parent)
        if replaced:
            shutil.rmtree(old, ignore_errors=True)


def _remove_stale_folders(target: Path) -> None:
    """Remove what killed replacements of `target` left beside it (a folder moved aside is put back if `target` is
    gone)."""
    pattern = re.compile(_STAGING.format(name=re.escape(target.name)))
    try:
        stale = sorted(p for p in target.parent.iterdir() if pattern.fullmatch(p.name) and p.is_dir()
                       and not p.is_symlink())
    except OSError:
        return
    for folder in stale:
        if "old-" in folder.name and not target.exists():
            log.warning("%s: missing; putting back %s, which a killed run had moved aside", target, folder.name)
            os.rename(folder, target)
            continue
        log.info("%s: removing %s, left by a run that was killed", target, folder.name)
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back during the block (in the main thread) and delivered after it.

    A Python handler runs between two bytecodes of the main thread, so it could raise between two
    renames; only the main thread runs handlers, so elsewhere nothing needs holding.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    before = {}
    for number in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(number)
        if handler is not None:  # None: a handler not set from Python, which cannot be put back
            before[number] = signal.signal(number, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)
    for number in caught:
        handler = before[number]
        if callable(handler):
            handler(number, None)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(number)


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
