"""Readers of corpora into canonical `Example`s, registered by name.

>>> from kold_span import corpora
>>> sorted(corpora.available())[:2]
['beep', 'functional']
"""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Callable, Union

from kold_span.config.registry import Registry
from kold_span.data.example import Example
from kold_span.errors import ArgumentError

Reader = Callable[..., list[Example]]
# Reader modules register themselves on import; this lists where each name lives. Installed packages add
# readers under the entry-point group `kold_span.corpora` (docs/ARCHITECTURE.md, "Where to add").
READERS: Registry[Reader] = Registry("corpus reader", "readers", group="kold_span.corpora", modules={
    "jsonl": "kold_span.corpora.canonical",
    "kold": "kold_span.corpora.kold",
    "kold_gs": "kold_span.corpora.kold_gs",
    "toxic_spans": "kold_span.corpora.toxic_spans",
    "toxic_spans_raw": "kold_span.corpora.toxic_spans",
    "beep": "kold_span.corpora.beep",
    "unsmile": "kold_span.corpora.unsmile",
    "kocosa": "kold_span.corpora.kocosa",
    "irosva": "kold_span.corpora.irosva",
    "multipico": "kold_span.corpora.multipico",
    "functional": "kold_span.corpora.functional",
})
register, get_reader = READERS.register, READERS.get


def available() -> list[str]:
    """Names of all known readers, installed packages' included."""
    return sorted(READERS.names())


def read(name: str, path: Union[str, Path], **options) -> list[Example]:
    """Read the corpus at `path` with the reader registered as `name` (its options checked first)."""
    reader = get_reader(name)
    check_options(name, reader, options)
    return reader(Path(path), **options)


def check_options(name: str, reader: Reader, options: dict[str, Any]) -> None:
    """An `ArgumentError` naming the option unless each is one of the reader's, of its default's kind.

    Example:
        >>> for options in ({"min_annotator": 2}, {"skip_bad": "no"}):
        ...     try:
        ...         check_options("kold", get_reader("kold"), options)
        ...     except ArgumentError as err:
        ...         print(err)
        reader 'kold' has no option 'min_annotator'; its options: min_annotators, skip_bad
        reader 'kold': option 'skip_bad' must be true or false, got 'no'
    """
    # Annotations are strings here (postponed evaluation); the plain ones are checked, unions are left
    # to the reader (toxic_spans_raw's min_annotators takes 2 or "half").
    params = {p.name: str(p.annotation) for p in inspect.signature(reader).parameters.values()
              if p.kind == inspect.Parameter.KEYWORD_ONLY}
    for key, value in options.items():
        if key not in params:
            raise ArgumentError(f"reader {name!r} has no option {key!r}; its options: "
                                f"{', '.join(sorted(params)) or 'none'}")
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok, kind = {"bool": (isinstance(value, bool), "true or false"),
                    "int": (number and isinstance(value, int), "a whole number"),
                    "float": (number, "a number")}.get(params[key], (True, ""))
        if not ok:
            raise ArgumentError(f"reader {name!r}: option {key!r} must be {kind}, got {value!r}")
