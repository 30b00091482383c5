"""IroSvA 2019: Spanish irony in context, three variants (es: Spain, mx: Mexico, cu: Cuba).

Each variant is a CSV `irosva.<variant>.training.csv` with columns ID, TOPIC, IS_IRONIC
(0/1), MESSAGE; the topic is the context. IDs are not unique in every file (the Mexican
training set holds one row twice), so a repeated ID gets the row index appended to its id.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from kold_span.corpora import register
from kold_span.corpora._common import CsvRecords, bad_field, reports_skipped
from kold_span.data.bad_records import BadRecords
from kold_span.data.example import Example
from kold_span.errors import ArgumentError

VARIANTS = ("cu", "es", "mx")
_FILE_NAME = re.compile(r"^irosva\.([a-z]+)\.")


@register("irosva")
@reports_skipped("irosva")
def read_irosva(path: Path, *, bad: BadRecords, variant: Optional[str] = None) -> list[Example]:
    """Read IroSvA messages with their topic as context: examples with id `irosva-<variant>-<ID>`, `context` =
    TOPIC, `labels["irony"]` (IS_IRONIC 1 → True, 0 → False) and `meta["variant"]`.

    `path` is one CSV file, or a directory: then every `irosva.<v>.training.csv` in it (sorted by variant), or
    only the one of `variant`, which also names the variant of a file whose name does not say it.

    Example:
        >>> import tempfile
        >>> folder = tempfile.TemporaryDirectory()
        >>> _ = (Path(folder.name) / "irosva.mx.training.csv").write_text(
        ...     "ID,TOPIC,IS_IRONIC,MESSAGE\\n7,Política,1,¡Qué gran idea!\\n", encoding="utf-8")
        >>> [(ex.id, ex.context, ex.text, ex.labels) for ex in read_irosva(folder.name)]
        [('irosva-mx-7', 'Política', '¡Qué gran idea!', {'irony': True})]
        >>> folder.cleanup()
    """
    if variant is not None and variant not in VARIANTS:
        raise ArgumentError(f"irosva: variant must be one of {list(VARIANTS)}, got {variant!r}")
    if path.is_dir():
        pattern = f"irosva.{variant}.training.csv" if variant else "irosva.*.training.csv"
        files = sorted(path.glob(pattern))
        if not files:
            raise FileNotFoundError(f"irosva: no {pattern} in directory {path}")
    elif path.is_file():
        files = [path]
    else:
        raise FileNotFoundError(f"irosva: no such file or directory: {path}")
    return [ex for file in files for ex in _read_file(file, _file_variant(file, variant), bad)]


def _file_variant(file: Path, variant: Optional[str]) -> str:
    """The variant named by `variant`, else by the file name; the two must agree."""
    match = _FILE_NAME.match(file.name)
    named = match.group(1) if match and match.group(1) in VARIANTS else None
    if variant and named and variant != named:
        raise ArgumentError(f"irosva: variant={variant!r} but the file name {file.name} says {named!r}")
    if not (variant or named):
        raise ArgumentError(f"irosva: cannot tell the variant of {file.name}; pass variant= one of {list(VARIANTS)}")
    return variant or named


def _read_file(file: Path, variant: str, bad: BadRecords) -> list[Example]:
    """The examples of one variant's CSV file."""
    examples = []
    seen: set[str] = set()
    for index, line, row in CsvRecords(file, ("ID", "TOPIC", "IS_IRONIC", "MESSAGE"), bad):
        where = f"{file}:{line}"
        with bad.guard():
            if row["IS_IRONIC"] not in ("0", "1"):
                raise bad_field(where, "IS_IRONIC", f"expected 0 or 1, got {row['IS_IRONIC']!r}")
            if not row["ID"]:
                raise bad_field(where, "ID", "empty")
            example_id = f"irosva-{variant}-{row['ID']}"
            if example_id in seen:
                example_id = f"{example_id}-{index}"
            seen.add(example_id)
            examples.append(Example(id=example_id, text=row["MESSAGE"], context=row["TOPIC"],
                                    labels={"irony": row["IS_IRONIC"] == "1"},
                                    meta={"variant": variant}))
    return examples
