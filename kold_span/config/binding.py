"""Dataclasses built from plain data: every key known, every value of its declared type, or a `ConfigError`."""
from __future__ import annotations

import dataclasses
import reprlib
import typing
from enum import Enum
from typing import Any, Union

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
    values = {f.name: _coerce(hints[f.name], raw[f.name], where, f"{prefix}{f.name}")
              for f in dataclasses.fields(cls) if f.name in raw}
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
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
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
