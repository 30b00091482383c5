"""What changed between a run's saved config.json and a config: whether a finished run can be reused."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Union

from kold_span.config.limits import CONFIG_BYTES, read_bounded
from kold_span.config.loading import config_from_dict
from kold_span.config.schema import Config
from kold_span.errors import ConfigError

# Keys that say where a run is written or how it executes, not what it computes: a finished run
# is reused across them (a grid resumed with another thread count is still the same grid).
REUSE_IGNORED_KEYS = ("output_dir", "trainer.threads", "trainer.progress_bar", "trainer.keep_checkpoints")


def saved_config_changes(saved_path: Union[str, Path], config: Config) -> list[str]:
    """Dotted keys whose values differ between a run's saved config.json and `config`.

    Keys added to the schema since that run was saved take their defaults, so an old run of the
    same settings shows no change; `REUSE_IGNORED_KEYS` are left out.
    """
    saved = json.loads(read_bounded(saved_path, CONFIG_BYTES, ConfigError).decode("utf-8"))
    try:
        saved = config_from_dict(saved, str(saved_path)).to_dict()
    except (ConfigError, ValueError, TypeError):
        pass  # a key since removed or renamed: compare as written, which reports it
    changed = _changed_keys(json.loads(json.dumps(saved)), json.loads(json.dumps(config.to_dict())))
    return [key for key in changed if key not in REUSE_IGNORED_KEYS]


def _changed_keys(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two nested dicts.

    >>> _changed_keys({"a": 1, "b": {"c": 2, "d": 3}}, {"a": 1, "b": {"c": 5}, "e": 0})
    ['b.c', 'b.d', 'e']
    """
    if isinstance(old, dict) and isinstance(new, dict):
        return [k for key in sorted(set(old) | set(new), key=str)
                for k in _changed_keys(old.get(key), new.get(key), f"{prefix}{key}.")]
    return [] if old == new else [prefix.rstrip(".")]
