"""Validated configs read from YAML: experiments split by concern, and one-file configs.

An experiment file names its parts under `defaults:` (`data: kold_sample` reads
`configs/data/kold_sample.yaml`) and overrides keys; `--set a.b=value` overrides
last. Every file is checked against the schema below before any work starts, so a
mistyped key fails with its name, the file and the allowed keys. A config of one file
(pretraining's) is read by the same `load_dataclass`, against its own dataclass.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import reprlib
import typing
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar, Union

import yaml

from kold_span.config.choices import EvasionKind, Problem, SnapMode, Targets, TaskKind
from kold_span.config.schema import CONTEXT_MODES, FUSE_METRICS, POOLINGS, SECTIONS, Config, EvasionConfig
from kold_span.errors import ConfigError

T = TypeVar("T")


class _Yaml12Loader(yaml.SafeLoader):
    """YAML 1.2's core schema for plain scalars, where PyYAML follows YAML 1.1.

    Only true/false are booleans (labels such as OFF, ON, yes, no stay strings); 1e-4 is a number
    (1.1 needs a dot: 1.0e-4); 013 is thirteen, not octal eleven; 12:30 and 2024-01-01 stay strings
    (1.1 reads a base-60 number and a date).
    """


_YAML = "tag:yaml.org,2002:"
_Yaml12Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag not in (f"{_YAML}bool", f"{_YAML}int",
                                                                   f"{_YAML}float", f"{_YAML}timestamp")]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(f"{_YAML}bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                    list("tTfF"))
# Integers before floats: PyYAML takes the first resolver whose pattern matches.
_Yaml12Loader.add_implicit_resolver(f"{_YAML}int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
                                    list("-+0123456789"))
_Yaml12Loader.add_implicit_resolver(
    f"{_YAML}float", re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                                r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+.0123456789"))


def _yaml12_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    text = loader.construct_scalar(node)
    base = {"0o": 8, "0x": 16}.get(text[:2], 10)
    return int(text[2:] if base != 10 else text, base)


def _yaml12_float(loader: yaml.SafeLoader, node: yaml.Node) -> float:
    text = loader.construct_scalar(node).lower()
    return float(text.replace(".inf", "inf").replace(".nan", "nan"))


_Yaml12Loader.add_constructor(f"{_YAML}int", _yaml12_int)
_Yaml12Loader.add_constructor(f"{_YAML}float", _yaml12_float)


# Values a YAML document may hold once its aliases are expanded: far above any config (a few hundred),
# far below what a "billion laughs" alias bomb expands to (a nine-level bomb: 10^9).
MAX_YAML_VALUES = 100_000


class YamlTooLargeError(yaml.YAMLError):
    """A YAML document whose aliases expand to more than `MAX_YAML_VALUES` values."""


def yaml_load(text: str) -> Any:
    r"""Parse YAML text with YAML 1.2's plain scalars (see `_Yaml12Loader`), aliases bounded.

    A document whose aliases expand to more than `MAX_YAML_VALUES` values (an alias bomb, which
    would otherwise be walked, copied and printed until memory runs out) is a `YamlTooLargeError`,
    found on the node graph before anything is built.

    Example:
        >>> yaml_load("{lr: 1e-4, seed: 013, label: OFF, run: 2024-01-01, on: true}")
        {'lr': 0.0001, 'seed': 13, 'label': 'OFF', 'run': '2024-01-01', 'on': True}
        >>> bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        ...     f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(5))
        >>> yaml_load(bomb)
        Traceback (most recent call last):
        ...
        kold_span.config.loading.YamlTooLargeError: its aliases expand to more than 100000 values (an alias bomb?)
    """
    loader = _Yaml12Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_expanded_size(root: yaml.Node) -> None:
    """A `YamlTooLargeError` if the node graph, aliases expanded, holds more than `MAX_YAML_VALUES` values.

    Counted once per distinct node (memoised): the cost is the size of the text, not of the expansion.
    """
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = MAX_YAML_VALUES + 1  # a node inside itself (a recursive alias) expands without end
        if isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(key) + size(value) for key, value in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(item) for item in node.value)
        else:
            total = 1
        sizes[id(node)] = min(total, MAX_YAML_VALUES + 1)
        if total > MAX_YAML_VALUES:
            raise YamlTooLargeError(f"its aliases expand to more than {MAX_YAML_VALUES} values (an alias bomb?)")
        return total

    size(root)


_SHOWN = reprlib.Repr()
_SHOWN.maxstring, _SHOWN.maxother, _SHOWN.maxlist, _SHOWN.maxdict, _SHOWN.maxlevel = 60, 60, 6, 6, 3


def _shown(value: Any) -> str:
    """A config value for a message, cut short: a huge list or mapping never fills the terminal.

    Example:
        >>> _shown(list(range(1000)))
        '[0, 1, 2, 3, 4, 5, ...]'
    """
    return _SHOWN.repr(value)


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


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
    hints = _hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        if f.name not in raw:
            continue
        values[f.name] = _coerce(hints[f.name], raw[f.name], where, f"{prefix}{f.name}")
    return cls(**values)


def _coerce(hint: Any, value: Any, where: str, key: str) -> Any:
    """Check `value` against type `hint` (dataclasses, Optional, lists, scalars)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Union:
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(arg, value, where, key)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{where}: key '{key}' has invalid value {_shown(value)}")
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


def merge_dicts(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge `override` into a copy of `base` (lists and scalars replace)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_dicts(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _normalize_shorthands(raw: dict[str, Any]) -> dict[str, Any]:
    """`context: none` is short for `context: {mode: none}`."""
    if isinstance(raw.get("context"), str) or raw.get("context", 0) is None:
        raw = dict(raw)
        raw["context"] = {"mode": raw["context"] or "none"}
    return raw


def read_yaml(path: Path) -> dict[str, Any]:
    """One YAML file as a mapping; bytes that are not UTF-8, invalid YAML or a non-mapping are a `ConfigError`."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text; save the file as UTF-8") from None
    try:
        raw = yaml_load(text) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: invalid YAML: {err}") from err
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a config file must be a mapping of keys")
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


def parse_override(text: str) -> dict[str, Any]:
    """'trainer.max_epochs=3' → {'trainer': {'max_epochs': 3}} (value parsed as YAML)."""
    if "=" not in text:
        raise ConfigError(f"--set {text!r}: expected KEY=VALUE, e.g. trainer.max_epochs=3")
    key, value = text.split("=", 1)
    parsed = _override_value(value, f"--set {text}") if value != "" else None
    out: dict[str, Any] = parsed
    for part in reversed(key.strip().split(".")):
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


def load_config(path: Union[str, Path], overrides: typing.Iterable[str] = ()) -> Config:
    """Read, merge and validate an experiment config; overrides are `a.b=value` strings."""
    return load_dataclass(Config, path, overrides, check_values, sections=True)


def load_dataclass(cls: type[T], path: Union[str, Path], overrides: typing.Iterable[str] = (),
                   check: Optional[Callable[[T, str], None]] = None, sections: bool = False) -> T:
    """A config of dataclass `cls` from a YAML file and `--set` overrides: how every config file is read.

    The file (and, with `sections`, each file its `defaults:` names) and each override are checked
    against `cls` on their own, so a mistyped key is reported with the source it came from. The
    merged config is then built and handed to `check(config, where)`, `where` naming every source.

    Args:
        cls: the dataclass the YAML describes (`Config`, or e.g. pretraining's).
        path: the YAML file.
        overrides: `a.b=value` strings, applied in order, each value read as YAML 1.2.
        check: value checks that types alone cannot express; raises `ConfigError`.
        sections: the file may name parts under `configs/<section>/` with `defaults:` (experiments).

    Returns:
        An instance of `cls`.

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


# Keys that say where a run is written or how it executes, not what it computes: a finished run
# is reused across them (a grid resumed with another thread count is still the same grid).
REUSE_IGNORED_KEYS = ("output_dir", "trainer.threads", "trainer.progress_bar", "trainer.keep_checkpoints")


def saved_config_changes(saved_path: Union[str, Path], config: Config) -> list[str]:
    """Dotted keys whose values differ between a run's saved config.json and `config`.

    Keys added to the schema since that run was saved take their defaults, so an old run of the
    same settings shows no change; `REUSE_IGNORED_KEYS` are left out.
    """
    saved = json.loads(Path(saved_path).read_text(encoding="utf-8"))
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


def _config_root(path: Path) -> Path:
    """The `configs/` folder that holds the sections, found above the experiment file."""
    for parent in path.resolve().parents:
        if (parent / "data").is_dir() and (parent / "model").is_dir():
            return parent
    return path.resolve().parent


def value_checker(where: str) -> Callable[[bool, str], None]:
    """`need(ok, message)`, raising a `ConfigError` that names `where` unless `ok`: the form of every value check.

    Example:
        >>> need = value_checker("run.yaml + --set lr=-1")
        >>> need(0.1 > 0, "lr must be positive")
        >>> need(-1 > 0, "lr must be positive")
        Traceback (most recent call last):
        ...
        kold_span.errors.ConfigError: run.yaml + --set lr=-1: lr must be positive
    """
    def need(ok: bool, message: str) -> None:
        if not ok:
            raise ConfigError(f"{where}: {message}")
    return need


def check_values(config: Config, where: str) -> None:
    """Value checks that types alone cannot express."""
    need = value_checker(where)
    need(bool(config.tasks), "at least one entry under 'tasks' is required")
    need(0.0 <= config.data.speaker_swap <= 1.0,
         f"data.speaker_swap is the share of training examples to swap, in [0, 1], got {config.data.speaker_swap!r}")
    evasion = config.data.augment.evasion
    if evasion is not None:
        check_evasion(evasion, need)
    names = [t.name for t in config.tasks]
    need(len(set(names)) == len(names), f"task names must be unique, got {names}")
    for i, task in enumerate(config.tasks):  # first, as a task's gate is checked by its kind
        need(isinstance(task.kind, TaskKind),
             f"tasks[{i}].kind must be one of {TaskKind.values()}, got {task.kind!r}")
        need(isinstance(task.problem, Problem),
             f"tasks[{i}].problem must be one of {Problem.values()}, got {task.problem!r}")
    for i, task in enumerate(config.tasks):
        need(bool(task.name), f"tasks[{i}].name is empty")
        need(bool(task.source), f"tasks[{i}].source is empty (a label key or a span type)")
        if task.class_weight is not None:
            need(task.class_weight == "balanced" and task.kind.label_valued(task.problem),
                 f"tasks[{i}].class_weight: only 'balanced' on a single- or multi-label sequence task is supported, "
                 f"got {task.class_weight!r} on a {task.kind} task with problem '{task.problem}'")
        if task.threshold != 0.5:
            need(task.kind.takes_threshold(task.problem),
                 f"tasks[{i}].threshold applies to span tasks and multi-label sequence tasks (problem: multi), "
                 f"not to a {task.kind} task with problem '{task.problem}'")
            numeric = isinstance(task.threshold, (int, float)) and not isinstance(task.threshold, bool)
            need(task.threshold == "dev" or (numeric and 0.0 < task.threshold < 1.0),
                 f"tasks[{i}].threshold must be a number in (0, 1) or 'dev', got {task.threshold!r}")
            need(task.threshold != "dev" or bool(config.data.dev) or config.data.dev_fraction > 0,
                 f"tasks[{i}].threshold: dev needs a dev split (data.dev or data.dev_fraction > 0)")
        if task.fuse_ngram:
            need(task.kind.label_valued(task.problem),
                 f"tasks[{i}].fuse_ngram applies to single- or multi-label sequence tasks, "
                 f"not to a {task.kind} task with problem '{task.problem}'")
            need(bool(config.data.dev) or config.data.dev_fraction > 0,
                 f"tasks[{i}].fuse_ngram needs a dev split to choose the fusion weight "
                 "(data.dev or data.dev_fraction > 0)")
            allowed = FUSE_METRICS.get(task.problem, ())
            need(task.fuse_metric in allowed,
                 f"tasks[{i}].fuse_metric must be one of {allowed} for problem '{task.problem}', "
                 f"got {task.fuse_metric!r}")
        need(task.fuse_ngram or not task.fuse_ngram_train,
             f"tasks[{i}].fuse_ngram_train needs fuse_ngram: true (it is the fused n-gram's extra training data)")
        if task.gate is not None:
            gate = next((t for t in config.tasks if t.name == task.gate), None)
            need(task.kind.gated and gate is not None and gate.kind.single_label(gate.problem),
                 f"tasks[{i}].gate must name a single-label sequence task of this config, got {task.gate!r}")
    tc = config.trainer
    need(tc.lr >= 0, f"trainer.lr must be 0 or more, got {tc.lr!r}")
    need(0.0 <= tc.warmup_ratio < 1.0, f"trainer.warmup_ratio is a share of the steps, in [0, 1), got {tc.warmup_ratio!r}")
    need(tc.weight_decay >= 0, f"trainer.weight_decay must be 0 or more, got {tc.weight_decay!r}")
    need(tc.batch_size >= 1 and tc.eval_batch_size >= 1 and tc.accumulate_grad_batches >= 1,
         "trainer.batch_size, eval_batch_size and accumulate_grad_batches must be at least 1")
    ema = config.trainer.ema_decay
    need(ema is None or 0.0 < ema < 1.0, f"trainer.ema_decay must be in (0, 1) or null, got {ema!r}")
    need(isinstance(config.align.snap, SnapMode),
         f"align.snap must be one of {SnapMode.values()}, got {config.align.snap!r}")
    need(config.context.mode in CONTEXT_MODES,
         f"context.mode must be one of {CONTEXT_MODES}, got {config.context.mode!r}")
    enc = config.model.encoder
    need((enc.name_or_path is None) != (enc.scratch is None),
         "model.encoder needs exactly one of 'name_or_path' (hub id or local directory) or 'scratch'")
    need(config.model.stride < config.model.max_length // 2, "model.stride must be under half of model.max_length")
    need(enc.scratch is None or config.model.max_length <= enc.scratch.max_position,
         f"model.max_length ({config.model.max_length}) is longer than the scratch encoder's position table "
         f"(model.encoder.scratch.max_position: {enc.scratch.max_position if enc.scratch else None})")
    need(config.model.pooling in POOLINGS, f"model.pooling must be one of {', '.join(POOLINGS)}, "
                                           f"got {config.model.pooling!r}")
    need(config.trainer.monitor_mode in ("min", "max"), "trainer.monitor_mode must be 'min' or 'max'")
    # The metric itself is known only once dev is scored; a wrong split or task name is caught here,
    # not after the first epoch.
    monitor = config.trainer.monitor
    forms = ["dev/loss", "train/loss"] + [f"dev/{t.name}_loss" for t in config.tasks]
    need(monitor in forms or any(monitor.startswith(f"dev/{t.name}/") and len(monitor) > len(t.name) + 5
                                 for t in config.tasks),
         f"trainer.monitor {monitor!r} names no metric of this config: use one of {', '.join(forms)} "
         f"or dev/<task>/<metric> with a task of {[t.name for t in config.tasks]} (e.g. dev/{config.tasks[0].name}/"
         f"{config.tasks[0].kind.main_metric})")
    if config.data.perspective is not None:
        need(bool(config.data.perspective.label), "data.perspective.label is empty (the annotation label to predict)")
    negatives = config.data.negatives
    if negatives is not None:
        need(bool(negatives.reader) and bool(negatives.path), "data.negatives needs a reader and a path")
        need(bool(negatives.labels), "data.negatives.labels is empty: say which labels a benign text has, "
                                     "e.g. {toxic: false}")
        need(0.0 <= negatives.holdout_fraction < 1.0,
             f"data.negatives.holdout_fraction is a share, in [0, 1), got {negatives.holdout_fraction!r}")
        need(negatives.limit is None or negatives.limit >= 1,
             f"data.negatives.limit must be at least 1 or null, got {negatives.limit!r}")


def check_evasion(evasion: EvasionConfig, need: Callable[[bool, str], None]) -> None:
    """The values of `data.augment.evasion`: shares in [0, 1], known kinds, at least one."""
    key = "data.augment.evasion"
    for name in ("probability", "word_probability"):
        value = getattr(evasion, name)
        need(0.0 <= value <= 1.0, f"{key}.{name} is a share, in [0, 1], got {value!r}")
    need(bool(evasion.kinds), f"{key}.kinds is empty; name at least one of {EvasionKind.values()}")
    for i, kind in enumerate(evasion.kinds):
        need(isinstance(kind, EvasionKind), f"{key}.kinds[{i}] must be one of {EvasionKind.values()}, got {kind!r}")
    need(isinstance(evasion.targets, Targets),
         f"{key}.targets must be one of {Targets.values()}, got {evasion.targets!r}")
