"""A grid's runs, planned: `--vary` texts → cells (varied key → value text) → one validated config per seed.

Every run's config is loaded and checked before anything trains (`plan_grid`); `plan_cell` plans one
cell with its own seeds and run name, as bench/quality.py does.

Example:
    >>> split_values("0,[1, 2],null")
    ['0', '[1, 2]', 'null']
    >>> cell_id({"context": "none", "trainer.max_epochs": "3"}), cell_id({"data.filter": "a b"})
    ('context=none__trainer.max_epochs=3', 'data.filter=a_b-bcbcf184')
"""
from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, Union

from kold_span.config.loading import load_config
from kold_span.config.saved import saved_config_changes
from kold_span.config.schema import Config
from kold_span.config.yaml12 import yaml_load
from kold_span.data.jsonl import json_text
from kold_span.errors import ArgumentError, ConfigError
from kold_span.training.run_folder import run_directory

# Keys the grid sets itself for every run.
GRID_KEYS = ("seed", "output_dir", "run")
MAX_ID_CHARS = 120
_OPENERS = {"[": "]", "{": "}", "(": ")"}


@dataclass
class PlannedRun:
    """One run of the grid: a cell (varied key → value text) and a seed, with its validated config."""

    cell: dict[str, str]
    cell_id: str
    seed: int
    config: Config

    @property
    def run_dir(self) -> Path:
        return run_directory(self.config, resume=False)

    @property
    def last_checkpoint(self) -> Path:
        """Where an interrupted run left its last checkpoint (it may not exist)."""
        return self.run_dir / "checkpoints" / "last.ckpt"


def split_values(text: str) -> list[str]:
    """Split `--vary` values on the commas outside brackets and quotes: "a,[1, 2]" → ["a", "[1, 2]"]; an empty value
    or unbalanced brackets / quotes are an `ArgumentError`."""
    values, current, stack, quote = [], [], [], None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"" and (stack or not "".join(current).strip()):
            quote = ch  # a YAML quoted scalar; an apostrophe inside a word is just a character
        elif ch in _OPENERS:
            stack.append(_OPENERS[ch])
        elif ch in _OPENERS.values():
            if not stack or stack.pop() != ch:
                raise ArgumentError(f"--vary value {text!r}: unbalanced {ch!r}")
        elif ch == "," and not stack:
            values.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    if quote or stack:
        raise ArgumentError(f"--vary value {text!r}: unclosed {quote or 'bracket'}")
    values.append("".join(current).strip())
    if any(v == "" for v in values):
        raise ArgumentError(f"--vary value {text!r}: empty value (write null for a missing one)")
    return values


def parse_vary(texts: Iterable[str]) -> dict[str, list[str]]:
    """`["context=auto,none", "trainer.lr=1e-3,3e-4"]` → {key: [value texts]}, keys in the given order."""
    vary: dict[str, list[str]] = {}
    for text in texts:
        if "=" not in text:
            raise ArgumentError(f"--vary {text!r}: expected KEY=v1,v2, e.g. context=auto,none")
        key, values = text.split("=", 1)
        key = key.strip()
        if key in vary:
            raise ArgumentError(f"--vary {key}: given twice; list all its values in one --vary")
        vary[key] = split_values(values)
    return vary


def value_text(value: Any) -> str:
    """The override text of a value: strings as written (YAML), anything else as JSON (None → null)."""
    return value if isinstance(value, str) else json_text(value, what="a --vary value")


def cell_id(cell: Mapping[str, str]) -> str:
    """A readable, filesystem-safe name of a cell: "context=none__trainer.max_epochs=3".

    Characters other than letters, digits and `._=+-` become `_`; a name that had to be
    changed (or cut to MAX_ID_CHARS) ends in a short hash of the exact values, so two
    cells never share a name.
    """
    exact = "__".join(f"{key}={value}" for key, value in cell.items())
    safe = re.sub(r"[^A-Za-z0-9._=+-]", "_", exact)
    if safe == exact and len(safe) <= MAX_ID_CHARS:
        return safe
    digest = hashlib.sha1(exact.encode("utf-8")).hexdigest()[:8]
    return f"{safe[:MAX_ID_CHARS - 9]}-{digest}"


def grid_cells(vary: Mapping[str, Sequence[Any]]) -> list[dict[str, str]]:
    """The cartesian product of the varied values; the first cell (first values) is the reference."""
    if not vary:
        raise ArgumentError("ablate: give at least one --vary KEY=v1,v2")
    texts = {key: [value_text(v) for v in values] for key, values in vary.items()}
    for key, values in texts.items():
        if key in GRID_KEYS:
            raise ArgumentError(f"--vary {key}: the grid sets {', '.join(GRID_KEYS)} itself (use --seeds for seeds)")
        if not values:
            raise ArgumentError(f"--vary {key}: no values")
        parsed = [yaml_load(v) for v in values]  # 0 and 0.0 are one value written twice
        if any(parsed[i] == parsed[j] for i in range(len(parsed)) for j in range(i)):
            raise ArgumentError(f"--vary {key}: a value is repeated in {values}")
    return [dict(zip(texts, combo)) for combo in itertools.product(*texts.values())]


def plan_grid(config_path: Union[str, Path], vary: Mapping[str, Sequence[Any]], seeds: int,
              out_dir: Union[str, Path], overrides: Sequence[str] = ()) -> list[PlannedRun]:
    """Every run of the grid with its validated config; a bad key or value fails before anything trains.

    A run directory that already holds a config.json trained with other settings is an
    error too (its metrics would be reused for the wrong config).
    """
    if seeds < 1:
        raise ArgumentError(f"--seeds must be at least 1, got {seeds}")
    planned = []
    for cell in grid_cells(vary):
        cell_overrides = [*overrides, *(f"{key}={value}" for key, value in cell.items())]
        base_seed = load_config(config_path, cell_overrides).seed
        planned += plan_cell(config_path, cell, range(base_seed, base_seed + seeds), Path(out_dir) / "runs",
                             cell_id(cell), overrides)
    for run in planned:
        check_saved_config(run)
    return planned


def plan_cell(config_path: Union[str, Path], cell: Mapping[str, str], seeds: Sequence[int],
              runs_dir: Union[str, Path], name: str, overrides: Sequence[str] = ()) -> list[PlannedRun]:
    """One cell's runs, one per seed, each config validated: the grid's unit, for callers that name their own.

    `cell` maps varied keys to value texts, applied after `overrides` (empty for a single configuration); the runs
    go to `runs_dir/<experiment>/<name>-seed<N>`. Saved configs of earlier runs are not compared here: see
    `check_saved_config`.

    Example:
        >>> runs = plan_cell("configs/experiment/demo.yaml", {}, [13, 14], "out/runs", "demo")  # doctest: +SKIP
        >>> runs[1].run_dir  # doctest: +SKIP
        PosixPath('out/runs/demo/demo-seed14')
    """
    if not seeds:
        raise ArgumentError(f"{name}: no seeds to run")
    cell_overrides = [*overrides, *(f"{key}={value}" for key, value in cell.items())]
    output_dir = json_text(str(runs_dir))
    planned = []
    for seed in seeds:
        config = load_config(config_path, [*cell_overrides, f"seed={seed}", f"output_dir={output_dir}",
                                           f"run={json_text(f'{name}-seed{seed}')}"])
        if not (config.data.test or config.data.test_fraction > 0):
            raise ConfigError(f"{config_path}: the grid compares test metrics, but the config has no test "
                              "split; set data.test or data.test_fraction")
        planned.append(PlannedRun(dict(cell), name, seed, config))
    return planned


def check_saved_config(run: PlannedRun) -> None:
    """A `ValueError` naming the keys when the run's directory holds a config.json trained with other settings."""
    saved_path = run.run_dir / "config.json"
    if not saved_path.exists():
        return
    changed = saved_config_changes(saved_path, run.config)
    if changed:
        raise ConfigError(f"{run.run_dir} was trained with other settings ({', '.join(changed[:5])} differ); "
                          "remove that folder or choose another --out")
