"""One registry type for every plug-in point: corpus readers, task kinds, normalization steps, commands.

A `Registry` maps names to things of one role, in the order they were registered: by code (`register`,
`add`), by a module of `modules` imported when its name is first asked for, or by an installed package's
entry point under `group`, loaded on first use (docs/ARCHITECTURE.md, "Where to add").

Example:
    >>> steps = Registry("step", "steps")
    >>> upper = steps.add("upper", str.upper)
    >>> steps.get("upper")("a"), list(steps), "lower" in steps
    ('A', ['upper'], False)
    >>> steps.get("lower")
    Traceback (most recent call last):
    ...
    kold_span.errors.ArgumentError: unknown step 'lower'; known steps: upper
"""
from __future__ import annotations

import importlib
from importlib import metadata
from typing import Callable, Generic, Iterator, Mapping, Optional, TypeVar

from kold_span.errors import ArgumentError

T = TypeVar("T")


class Registry(Generic[T]):
    """Things of one role by name: registered in code, by a module imported on first use, or by an entry point."""

    def __init__(self, what: str, plural: str, modules: Optional[Mapping[str, str]] = None,
                 group: Optional[str] = None):
        self.what, self.plural, self.group = what, plural, group
        self.modules = dict(modules or {})  # name → the module that registers it when imported
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """A decorator registering what it decorates under `name`."""
        def wrap(item: T) -> T:
            return self.add(name, item)
        return wrap

    def add(self, name: str, item: T) -> T:
        """Register `item` under `name`; returns it."""
        self._entries[name] = item
        return item

    def plugins(self) -> dict[str, metadata.EntryPoint]:
        """The entry points installed packages declare under `group` (none without a group), by name."""
        return {ep.name: ep for ep in metadata.entry_points(group=self.group)} if self.group else {}

    def names(self) -> list[str]:
        """Every name: registered ones, those of `modules`, then installed packages' entry points."""
        return list(dict.fromkeys([*self._entries, *self.modules, *self.plugins()]))

    def get(self, name: str) -> T:
        """What is registered under `name`, its module or entry point loaded first; unknown names list the known."""
        if name not in self._entries:
            if name in self.modules:
                importlib.import_module(self.modules[name])
            elif name in (plugins := self.plugins()):
                self.add(name, plugins[name].load())
        if name not in self._entries:
            raise ArgumentError(f"unknown {self.what} {name!r}; known {self.plural}: {', '.join(sorted(self.names()))}")
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
