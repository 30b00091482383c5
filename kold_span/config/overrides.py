"""`--set KEY=VALUE` overrides: parsed as YAML 1.2 and deep-merged over what the files say."""
from __future__ import annotations

import copy
from typing import Any

import yaml

from kold_span.config.yaml12 import MAX_YAML_DEPTH, yaml_load
from kold_span.errors import ConfigError


def merge_dicts(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge `override` into a copy of `base` (lists and scalars replace)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_dicts(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_override(text: str) -> dict[str, Any]:
    """'trainer.max_epochs=3' → {'trainer': {'max_epochs': 3}} (value parsed as YAML).

    Example:
        >>> merge_dicts({"trainer": {"lr": 0.1, "max_epochs": 10}}, parse_override("trainer.max_epochs=3"))
        {'trainer': {'lr': 0.1, 'max_epochs': 3}}
    """
    if "=" not in text:
        raise ConfigError(f"--set {text!r}: expected KEY=VALUE, e.g. trainer.max_epochs=3")
    key, value = text.split("=", 1)
    parts = key.strip().split(".")
    if len(parts) > MAX_YAML_DEPTH:
        raise ConfigError(f"--set {text[:80]!r}: a key of more than {MAX_YAML_DEPTH} parts")
    out: dict[str, Any] = _override_value(value, f"--set {text}")  # "" (key=) is null
    for part in reversed(parts):
        out = {part: out}
    return out


def parse_key_value(text: str, flag: str = "--set") -> tuple[str, Any]:
    """'min_annotators=2' → ('min_annotators', 2), the value parsed as YAML."""
    if "=" not in text:
        raise ConfigError(f"{flag} {text!r}: expected KEY=VALUE")
    key, value = text.split("=", 1)
    return key, _override_value(value, f"{flag} {text}")


def _override_value(value: str, where: str) -> Any:
    """A command-line value parsed as YAML; invalid YAML is a `ConfigError` naming the argument."""
    try:
        return yaml_load(value)
    except yaml.YAMLError as err:
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError(f"{where}: invalid YAML value ({problem}); quote it to pass a string") from None
