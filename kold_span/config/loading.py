"""Validated configs read from YAML: experiments split by concern, and one-file configs.

An experiment file names its parts under `defaults:` (`data: kold_sample` reads
`configs/data/kold_sample.yaml`) and overrides keys; `--set a.b=value` overrides
last. Every file is checked against the schema (`config.binding`) before any work starts, so a
mistyped key fails with its name, the file and the allowed keys; the merged config's values are
checked by `config.checks`. A config of one file (pretraining's) is read by the same
`load_dataclass`, against its own dataclass.
"""
from __future__ import annotations

import os
import typing
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar, Union

from kold_span.config.binding import build_dataclass
from kold_span.config.checks import check_pretrain_config, check_values
from kold_span.config.overrides import merge_dicts, parse_override
from kold_span.config.schema import SECTIONS, Config, PretrainConfig
from kold_span.config.yaml12 import read_yaml
from kold_span.errors import ConfigError

T = TypeVar("T")


def _normalize_shorthands(raw: dict[str, Any]) -> dict[str, Any]:
    """`context: none` is short for `context: {mode: none}`."""
    if isinstance(raw.get("context"), str) or raw.get("context", 0) is None:
        raw = dict(raw)
        raw["context"] = {"mode": raw["context"] or "none"}
    return raw


def _validated(raw: dict[str, Any], where: str, cls: type = Config) -> dict[str, Any]:
    """Validate a partial config (one file or one override) against dataclass `cls`."""
    if cls is Config:  # only experiment configs have shorthands
        raw = _normalize_shorthands(raw)
    build_dataclass(cls, raw, where)
    return raw


def _load_file(path: Path, config_root: Path) -> tuple[dict[str, Any], list[Path]]:
    """One YAML file with its `defaults:` parts merged underneath it, and the paths of those parts."""
    raw = read_yaml(path)
    defaults = raw.pop("defaults", {}) or {}
    if not isinstance(defaults, dict):
        raise ConfigError(f"{path}: 'defaults' must map a section to a file name, e.g. data: kold_sample")
    merged: dict[str, Any] = {}
    parts: list[Path] = []
    for section, name in defaults.items():
        if section not in SECTIONS:
            raise ConfigError(f"{path}: unknown section 'defaults.{section}'; allowed: {', '.join(SECTIONS)}")
        part_path = config_root / section / f"{name}.yaml"
        if not part_path.exists():
            raise ConfigError(f"{path}: 'defaults.{section}: {name}' but {part_path} does not exist")
        part = read_yaml(part_path)
        parts.append(part_path)
        # A debug file (e.g. debug/overfit.yaml) overrides keys of any section.
        part = part if section == "debug" else {section: part}
        merged = merge_dicts(merged, _validated(part, str(part_path)))
    return merge_dicts(merged, _validated(raw, str(path))), parts


def load_config(path: Union[str, Path], overrides: typing.Iterable[str] = ()) -> Config:
    """Read, merge and validate an experiment config; overrides are `a.b=value` strings."""
    return load_dataclass(Config, path, overrides, check_values, sections=True)


def load_pretrain_config(path: Union[str, Path], overrides: typing.Iterable[str] = ()) -> PretrainConfig:
    """Read and validate a `kold-span pretrain` config (one file, no `defaults:`); overrides are `encoder.layers=2`."""
    return load_dataclass(PretrainConfig, path, overrides, check_pretrain_config)


def load_dataclass(cls: type[T], path: Union[str, Path], overrides: typing.Iterable[str] = (),
                   check: Optional[Callable[[T, str], None]] = None, sections: bool = False) -> T:
    """A config of dataclass `cls` from a YAML file and `--set` overrides: how every config file is read.

    The file (and, with `sections`, each file its `defaults:` names) and each override are checked
    against `cls` on their own, so a mistyped key is reported with the source it came from. The
    merged config is then built and handed to `check(config, where)` (value checks that types alone cannot express,
    raising `ConfigError`), `where` naming every source. Overrides are `a.b=value` strings, applied in order, each
    value read as YAML 1.2; with `sections`, the file may name parts under `configs/<section>/` (experiments).

    Example:
        >>> import dataclasses, tempfile
        >>> @dataclasses.dataclass
        ... class Run:
        ...     steps: int = 10
        ...     lr: float = 0.1
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = Path(tmp.name) / "run.yaml"
        >>> _ = path.write_text("steps: 20", encoding="utf-8")
        >>> load_dataclass(Run, path, ["lr=1e-3"])
        Run(steps=20, lr=0.001)
        >>> load_dataclass(Run, path, ["step=3"])
        Traceback (most recent call last):
        ...
        kold_span.errors.ConfigError: --set step=3: unknown key 'step'; allowed keys here: steps, lr
        >>> tmp.cleanup()
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    if sections:
        raw, parts = _load_file(path, _config_root(path))
    else:
        raw, parts = _validated(read_yaml(path), str(path), cls), []
    overrides = list(overrides)
    for text in overrides:
        raw = merge_dicts(raw, _validated(parse_override(text), f"--set {text}", cls))
    # Values are checked on the merged config: the message names every source it was merged from.
    sources = [os.path.relpath(part) for part in parts] + [f"--set {text}" for text in overrides]
    where = str(path) + "".join(f" + {source}" for source in sources)
    config = build_dataclass(cls, _normalize_shorthands(raw) if cls is Config else raw, where)
    if check is not None:
        check(config, where)
    return config


def config_from_dict(raw: dict[str, Any], where: str = "config") -> Config:
    """Validate a complete config given as a dict (e.g. saved with a model)."""
    config = build_dataclass(Config, _normalize_shorthands(raw), where)
    check_values(config, where)
    return config


def _config_root(path: Path) -> Path:
    """The `configs/` folder that holds the sections, found above the experiment file."""
    return next((parent for parent in path.resolve().parents if (parent / "data").is_dir()
                 and (parent / "model").is_dir()), path.resolve().parent)
