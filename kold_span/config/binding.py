"""Dataclasses built from plain data: every key known, every value of its declared type and range, or a `ConfigError`.

A numeric field states its range with `bounded(default, low, high, ...)` (its `Bounds` in the field's
metadata); every number is checked against it where it is read, so the message names the key and the
file or `--set` it came from. A float is always finite: no key means anything by NaN or infinity.
"""
from __future__ import annotations

import dataclasses
import math
import reprlib
import typing
from dataclasses import dataclass
from enum import Enum
from typing import Any, Optional, Union

from kold_span.errors import ConfigError

_SHOWN = reprlib.Repr()
_SHOWN.maxstring, _SHOWN.maxother, _SHOWN.maxlist, _SHOWN.maxdict, _SHOWN.maxlevel = 60, 60, 6, 6, 3


def _shown(value: Any) -> str:
    """A config value for a message, cut short: a huge list or mapping never fills the terminal.

    Example:
        >>> _shown(list(range(1000)))
        '[0, 1, 2, 3, 4, 5, ...]'
    """
    return _SHOWN.repr(value)


@dataclass(frozen=True)
class Bounds:
    """The numbers a key allows: from `low` to `high` (either end open or absent), or one of `also`.

    Example:
        >>> Bounds(0, 1, high_open=True).describe(), Bounds(1, also=(-1,)).describe(), Bounds(0, low_open=True).holds(0)
        ('in [0, 1)', '-1 or at least 1', False)
    """

    low: Optional[float] = None
    high: Optional[float] = None
    low_open: bool = False
    high_open: bool = False
    also: tuple[float, ...] = ()  # values outside the range that mean something (-1: no limit)

    def holds(self, value: float) -> bool:
        """Whether `value` is allowed (NaN never is)."""
        if value in self.also:
            return True
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def describe(self) -> str:
        """The range in words: 'in [0, 1)', 'at least 1', 'above 0', 'at most 64'."""
        low, high = _number(self.low), _number(self.high)
        if self.low is not None and self.high is not None:
            text = f"in {'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"
        elif self.low is not None:
            text = f"{'above' if self.low_open else 'at least'} {low}"
        else:
            text = f"{'below' if self.high_open else 'at most'} {high}"
        return " or ".join([*(_number(v) for v in self.also), text])


def _number(value: Optional[float]) -> str:
    """A bound as written in a config: 1 and 4294967295 without a decimal point, 0.5 with one."""
    return str(int(value)) if value is not None and float(value).is_integer() else str(value)


def bounded(default: Any, low: Optional[float] = None, high: Optional[float] = None, *, low_open: bool = False,
            high_open: bool = False, also: tuple[float, ...] = ()) -> Any:
    """A dataclass field with `default` whose numbers must lie in the range (`Bounds`); None always passes.

    Example:
        >>> @dataclasses.dataclass
        ... class Run:
        ...     dropout: float = bounded(0.1, 0, 1, high_open=True)
        >>> build_dataclass(Run, {"dropout": 2}, "run.yaml")
        Traceback (most recent call last):
        ...
        kold_span.errors.ConfigError: run.yaml: key 'dropout' must be in [0, 1), got 2.0
    """
    return dataclasses.field(default=default, metadata={"bounds": Bounds(low, high, low_open, high_open, also)})


def field_bounds(field: dataclasses.Field) -> Optional[Bounds]:
    """The `Bounds` of a dataclass field made by `bounded`, or None."""
    return field.metadata.get("bounds")


def option(help: str, default: Any = None, **argparse: Any) -> Any:
    """A dataclass field that is a command-line option too: its help and argparse keywords in the field's metadata
    (`cli.serve` builds `kold-span serve`'s options from `service.settings.Settings` so)."""
    return dataclasses.field(default=default, metadata={"help": help, **argparse})


def _check_bounds(value: Any, bounds: Bounds, where: str, key: str) -> None:
    """A `ConfigError` naming `key` for a number (or a number in a list) outside `bounds`."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_bounds(item, bounds, where, f"{key}[{i}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if not bounds.holds(value):
            raise ConfigError(f"{where}: key '{key}' must be {bounds.describe()}, got {_shown(value)}")
        if isinstance(value, int) and not -2 ** 63 <= value < 2 ** 63:  # what torch and numpy take
            raise ConfigError(f"{where}: key '{key}' must be a whole number of at most 64 bits, got {_shown(value)}")


def check_bounds(instance: Any, where: str, prefix: str = "") -> None:
    """A `ConfigError` naming the first number of a built dataclass (and those inside it) outside its field's bounds.

    `build_dataclass` checks each source as it reads it; this checks a dataclass made in Python.
    """
    for f in dataclasses.fields(instance):
        value, bounds = getattr(instance, f.name), field_bounds(f)
        if bounds is not None:
            _check_bounds(value, bounds, where, f"{prefix}{f.name}")
        for i, item in enumerate(value if isinstance(value, list) else [value]):
            if dataclasses.is_dataclass(item) and not isinstance(item, type):
                index = f"[{i}]" if isinstance(value, list) else ""
                check_bounds(item, where, f"{prefix}{f.name}{index}.")


def _check_keys(raw: dict[str, Any], cls: type, where: str, prefix: str) -> None:
    """Fail on keys not in dataclass `cls`, naming the key, file and allowed keys."""
    allowed = [f.name for f in dataclasses.fields(cls)]
    for key in raw:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key '{prefix}{key}'; allowed keys here: {', '.join(allowed)}")


def build_dataclass(cls: type, raw: Any, where: str, prefix: str = "") -> Any:
    """Instantiate dataclass `cls` from a dict, recursively, validating keys and types; a field without a
    default must be given."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: '{prefix.rstrip('.') or 'config'}' must be a mapping, got {_shown(raw)}")
    _check_keys(raw, cls, where, prefix)
    missing = [f.name for f in dataclasses.fields(cls) if f.name not in raw
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ConfigError(f"{where}: missing key '{prefix}{missing[0]}'")
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in raw:
            values[f.name] = _coerce(hints[f.name], raw[f.name], where, f"{prefix}{f.name}")
            bounds = field_bounds(f)
            if bounds is not None:
                _check_bounds(values[f.name], bounds, where, f"{prefix}{f.name}")
    return cls(**values)


def _takes_shape(hint: Any, value: Any) -> bool:
    """Whether `hint` is of the container kind `value` is: a mapping for a dataclass or dict, a list for a list.

    Example:
        >>> _takes_shape(list[int], [1]), _takes_shape(dict[str, int], [1]), _takes_shape(int, 1)
        (True, False, False)
    """
    if isinstance(value, dict):
        return dataclasses.is_dataclass(hint) or typing.get_origin(hint) is dict
    return isinstance(value, list) and typing.get_origin(hint) is list


def _coerce(hint: Any, value: Any, where: str, key: str) -> Any:
    """Check `value` against type `hint` (dataclasses, Optional, lists, scalars)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Union:
        if value is None and type(None) in args:
            return None
        errors = {}
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(arg, value, where, key)
            except ConfigError as err:
                errors[arg] = str(err)
        # A mapping given where a section or a list of them is allowed: the section's own error names the key.
        shaped = [message for arg, message in errors.items() if _takes_shape(arg, value)]
        message = next(iter(errors.values())) if len(errors) == 1 else shaped[0] if len(shaped) == 1 else None
        raise ConfigError(message or f"{where}: key '{key}' has invalid value {_shown(value)}")
    if dataclasses.is_dataclass(hint):
        return build_dataclass(hint, value, where, f"{key}.")
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{where}: key '{key}' must be a list, got {_shown(value)}")
        return [_coerce(args[0], v, where, f"{key}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: key '{key}' must be a mapping, got {_shown(value)}")
        return dict(value)
    if hint is Any:
        return value
    if isinstance(hint, type) and issubclass(hint, Enum):
        if not isinstance(value, str):
            raise ConfigError(f"{where}: key '{key}' must be one of {hint.values()}, got {_shown(value)}")
        # A name outside the set stays a string: `check_values` reports it on the merged config,
        # naming every file and override it came from.
        return hint(value) if value in hint.values() else value
    if hint is float and isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: key '{key}' must be a finite number, got {value}")
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        if abs(value) > 2 ** 53:  # no float key needs it; float() of a 400-digit integer would be infinite
            raise ConfigError(f"{where}: key '{key}' must be a finite number, got {_shown(value)}")
        return float(value)
    if hint is str and isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # run: 13 names a run "13"
    if hint is bool and not isinstance(value, bool):
        raise ConfigError(f"{where}: key '{key}' must be true or false, got {_shown(value)}")
    if hint in (int, float) and isinstance(value, bool):
        raise ConfigError(f"{where}: key '{key}' must be a number, got {_shown(value)}")
    if not isinstance(value, hint):
        raise ConfigError(f"{where}: key '{key}' must be {hint.__name__}, got {_shown(value)}")
    return value
