"""A model directory's manifest: the SHA-256 and size of every file in it, written at save and checked at load.

A model directory is data, never code: what loads it reads JSON, safetensors and a tokenizer,
and the manifest (`manifest.json`) makes a truncated, corrupt or swapped file a `ModelFormatError`
naming that file, before any library parses it. It lists every file the directory holds when
`write_manifest` runs (the last step of `Predictor.save_pretrained`), whatever wrote them, so a
file a later version adds (an ONNX graph, a normalizer's tables) is covered with no special case;
whoever adds a file after saving calls `write_manifest` again. A directory without a manifest
(saved before it existed) loads unchecked, with a warning; `check_contained` still refuses a file
that is a link out of the directory.

Example:
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = Path(tmp.name)
    >>> _ = (folder / "config.json").write_text("{}")
    >>> _ = write_manifest(folder)
    >>> sorted(verify_manifest(folder))
    ['config.json']
    >>> _ = (folder / "config.json").write_text("{}\\n")
    >>> verify_manifest(folder)
    Traceback (most recent call last):
    ...
    kold_span.errors.ModelFormatError: .../config.json: 3 bytes where the model was saved with 2 (truncated or changed since it was saved); copy the model directory again
    >>> tmp.cleanup()
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Collection, Iterator, Optional, Union

from kold_span.config.limits import FILE_BYTES, read_bounded
from kold_span.data.atomic import write_text_atomic
from kold_span.data.jsonl import json_text
from kold_span.errors import ModelFormatError

log = logging.getLogger(__name__)
MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1
_CHUNK = 1 << 20


def file_digest(path: Union[str, Path]) -> str:
    """The SHA-256 of a file's bytes, in hex, read a MiB at a time.

    Example:
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile() as f:
        ...     _ = f.write(b"abc"); f.flush()
        ...     file_digest(f.name)[:16]
        'ba7816bf8f01cfea'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def read_json(path: Path) -> Any:
    """A JSON file of a model directory, parsed; one that is not UTF-8 JSON, nests past Python's stack or is larger
    than `FILE_BYTES` (`config.limits`) is a `ModelFormatError` naming it."""
    data = read_bounded(path, FILE_BYTES, ModelFormatError)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModelFormatError(f"{path}: not a JSON file ({err})") from None
    except (ValueError, RecursionError) as err:  # a number of more than 4300 digits, nesting past the stack
        raise ModelFormatError(f"{path}: not a JSON file ({type(err).__name__}: {str(err)[:100]})") from None


def model_files(directory: Union[str, Path]) -> Iterator[str]:
    """The files of a model directory as sorted '/'-separated relative paths, the manifest and hidden files left out."""
    directory = Path(directory)
    found = []
    for root, folders, files in os.walk(directory):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in files:
            if not name.startswith(".") and not (Path(root) == directory and name == MANIFEST_NAME):
                found.append((Path(root) / name).relative_to(directory).as_posix())
    return iter(sorted(found))


def carry_over(source: Union[str, Path], target: Union[str, Path], leave_out: Collection[str] = ()) -> None:
    """Put every file of the model directory `source` but its manifest, `leave_out` ('/'-separated relative paths)
    and what an export killed midway left (`.export-*` folders) into `target`, a new directory that replaces
    it: hard-linked where the file system allows (no file of a model is written in place, so the two never
    differ), else copied. Hidden files go along: they are the user's, though the manifest does not list them."""
    import shutil

    source = Path(source)
    for root, folders, files in os.walk(source):
        folders[:] = sorted(f for f in folders if not (Path(root) == source and f.startswith(".export-")))
        for file in files:
            name = (Path(root) / file).relative_to(source).as_posix()
            if name in leave_out or name == MANIFEST_NAME:
                continue
            destination = Path(target) / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source / name, destination)
            except OSError:
                shutil.copy2(source / name, destination)


def write_manifest(directory: Union[str, Path]) -> Path:
    """Write `manifest.json`, {"version", "files": {path: {"sha256", "bytes"}}} of every file; returns its path."""
    directory = Path(directory)
    files = {name: {"sha256": file_digest(directory / name), "bytes": (directory / name).stat().st_size}
             for name in model_files(directory)}
    return write_text_atomic(directory / MANIFEST_NAME, json_text({"version": MANIFEST_VERSION, "files": files},
                                                                  indent=1) + "\n")


def check_contained(directory: Union[str, Path]) -> None:
    """A `ModelFormatError` naming the first file or folder of `directory` that resolves outside it (a link out)."""
    root = Path(directory).resolve()
    for current, folders, files in os.walk(root):
        for name in folders + files:
            path = Path(current) / name
            if path.is_symlink() and not _inside(path.resolve(), root):
                raise ModelFormatError(f"{path}: a link to {os.readlink(path)}, outside the model directory; "
                                       "every file a model directory names must be inside it")


def inside(directory: Union[str, Path], relative: str, where: str) -> Path:
    """`directory / relative`, or a `ModelFormatError` (naming `where`) when it resolves outside `directory`.

    Example:
        >>> inside("model", "ngram/OFF", "config.json key 'ngram'").as_posix()
        'model/ngram/OFF'
        >>> inside("model", "../../etc/passwd", "config.json key 'ngram'")
        Traceback (most recent call last):
        ...
        kold_span.errors.ModelFormatError: config.json key 'ngram': '../../etc/passwd' is outside the model directory model
    """
    path = Path(directory) / relative
    if not isinstance(relative, str) or not relative or not _inside(path.resolve(), Path(directory).resolve()):
        raise ModelFormatError(f"{where}: {relative!r} is outside the model directory {directory}")
    return path


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def verify_manifest(directory: Union[str, Path], skip: Collection[str] = ()) -> Optional[dict[str, str]]:
    """Check every file the manifest lists but `skip` (size, then SHA-256); {relative path: sha256}, None without one.

    `skip` names files about to be replaced (an export writing its graph anew checks everything else). An
    unreadable manifest, or a listed file missing, of another size or with other bytes, is a `ModelFormatError`
    naming the file.
    """
    directory = Path(directory)
    path = directory / MANIFEST_NAME
    if not path.exists():
        log.warning("%s: no %s (a model saved before manifests): its files are not checked", directory,
                    MANIFEST_NAME)
        return None
    files = _read_manifest(path)
    digests = {}
    for name, entry in files.items():
        if name in skip:
            continue
        target = inside(directory, name, f"{path}: file")
        if not target.is_file():
            raise ModelFormatError(f"{target}: missing, though {MANIFEST_NAME} lists it; copy the model "
                                   "directory again")
        size = target.stat().st_size
        if size != entry["bytes"]:
            raise ModelFormatError(f"{target}: {size} bytes where the model was saved with {entry['bytes']} "
                                   "(truncated or changed since it was saved); copy the model directory again")
        digest = file_digest(target)
        if digest != entry["sha256"]:
            raise ModelFormatError(f"{target}: its SHA-256 differs from the one in {MANIFEST_NAME} (corrupt or "
                                   "changed since it was saved); copy the model directory again")
        digests[name] = digest
    unlisted = [name for name in model_files(directory) if name not in files]
    if unlisted:
        log.warning("%s: %s not in %s: not checked (added after the model was saved?)", directory,
                    ", ".join(unlisted[:5]) + (" ..." if len(unlisted) > 5 else ""), MANIFEST_NAME)
    return digests


def _read_manifest(path: Path) -> dict[str, dict]:
    """The "files" of a manifest, each entry checked to hold a hex sha256 and a byte count."""
    manifest = read_json(path)
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION or not isinstance(files, dict):
        raise ModelFormatError(f"{path}: not a manifest of version {MANIFEST_VERSION} (an object with "
                               "'version' and 'files')")
    for name, entry in files.items():
        if not (isinstance(entry, dict) and isinstance(entry.get("sha256"), str) and len(entry["sha256"]) == 64
                and isinstance(entry.get("bytes"), int) and not isinstance(entry["bytes"], bool)):
            raise ModelFormatError(f"{path}: entry {name!r} must be {{'sha256': 64 hex digits, 'bytes': an integer}}")
    return files


def directory_identity(directory: Union[str, Path], digests: Optional[dict[str, str]] = None) -> str:
    """One SHA-256 for a model directory's contents: of every file's path and SHA-256 (`digests`, else computed).

    Two directories holding the same bytes have the same identity wherever they are; retrained
    weights or an edited config.json give another.
    """
    if digests is None:
        digests = {name: file_digest(Path(directory) / name) for name in model_files(directory)}
    whole = hashlib.sha256()
    for name in sorted(digests):
        whole.update(f"{name}\0{digests[name]}\n".encode())
    return whole.hexdigest()
