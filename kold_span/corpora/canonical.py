"""The canonical JSONL format written by `kold-span convert` and `write_jsonl`."""
from __future__ import annotations

from pathlib import Path

from kold_span.corpora import register
from kold_span.data.example import Example
from kold_span.data.jsonl import read_jsonl


@register("jsonl")
def read_canonical_jsonl(path: Path) -> list[Example]:
    """Read canonical examples, one JSON object per line.

    Example:
        >>> import tempfile
        >>> from kold_span.data.jsonl import write_jsonl
        >>> folder = tempfile.TemporaryDirectory()
        >>> path = Path(folder.name) / "gold.jsonl"
        >>> write_jsonl([Example(id="1", text="좋은 기사"), Example(id="2", text="너 바보냐", spans={"OFF": [(2, 5)]})], path)
        2
        >>> [(ex.id, ex.spans) for ex in read_canonical_jsonl(path)]
        [('1', {}), ('2', {'OFF': [(2, 5)]})]
        >>> folder.cleanup()
    """
    return list(read_jsonl(path))
