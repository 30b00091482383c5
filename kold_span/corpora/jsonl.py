"""The canonical JSONL format written by `kold-span convert` and `write_jsonl`."""
from __future__ import annotations

from pathlib import Path

from kold_span.corpora import register
from kold_span.data.example import Example
from kold_span.data.jsonl import read_jsonl


@register("jsonl")
def read_canonical_jsonl(path: Path) -> list[Example]:
    """Read canonical examples, one JSON object per line."""
    return list(read_jsonl(path))
