"""Readers of corpora into canonical `Example`s, registered by name.

>>> from kold_span import corpora
>>> sorted(corpora.available())[:2]
['beep', 'irosva']
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Callable, Union

from kold_span.data import Example

Reader = Callable[..., list[Example]]
_READERS: dict[str, Reader] = {}
# Reader modules register themselves on import; this lists where each name lives.
_MODULES = {
    "jsonl": "kold_span.corpora.jsonl",
    "kold": "kold_span.corpora.kold",
    "toxic_spans": "kold_span.corpora.toxic_spans",
    "toxic_spans_raw": "kold_span.corpora.toxic_spans",
    "beep": "kold_span.corpora.beep",
    "unsmile": "kold_span.corpora.unsmile",
    "kocosa": "kold_span.corpora.kocosa",
    "irosva": "kold_span.corpora.irosva",
    "multipico": "kold_span.corpora.multipico",
}


def register(name: str) -> Callable[[Reader], Reader]:
    """Decorator registering a reader function under `name`."""
    def wrap(fn: Reader) -> Reader:
        _READERS[name] = fn
        return fn
    return wrap


def available() -> list[str]:
    """Names of all known readers."""
    return sorted(_MODULES)


def get_reader(name: str) -> Reader:
    """The reader registered under `name`; unknown names list the known ones."""
    if name not in _MODULES:
        raise KeyError(f"unknown corpus reader {name!r}; known readers: {', '.join(available())}")
    if name not in _READERS:
        importlib.import_module(_MODULES[name])
    return _READERS[name]


def read(name: str, path: Union[str, Path], **options) -> list[Example]:
    """Read the corpus at `path` with the reader registered as `name`."""
    return get_reader(name)(Path(path), **options)
