"""Ablation grids: `kold-span ablate CONFIG --vary KEY=v1,v2 --seeds 3 --out DIR`.

Every combination of the `--vary` values (a cell) is trained once per seed, each run
an ordinary `train` run under `DIR/runs/<experiment>/<cell id>-seed<N>`. The path reads
top to bottom: `--vary` texts → `plan_grid` (every run's config, all validated before
anything trains; `plan_cell` plans one cell with its own seeds and run name, as
bench/quality.py does) → `run_planned` (train, or reuse a run whose metrics.json exists) →
one row of test metrics per run → `summarize` (mean ± std per cell, difference to the
reference cell: the first value of every `--vary`) → results.csv, results.md and
results.png.

Example:
    >>> rows = run_grid("configs/experiment/demo.yaml", {"context": ["auto", "none"]},
    ...                 seeds=3, out_dir="out/context")  # doctest: +SKIP
    >>> split_values("0,[1, 2],null")
    ['0', '[1, 2]', 'null']
"""
from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import logging
import math
import re
import shlex
import statistics
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterable, Mapping, Optional, Sequence, Union

import yaml

from kold_span.config.limits import FILE_BYTES, read_bounded
from kold_span.config.loading import load_config
from kold_span.config.saved import saved_config_changes
from kold_span.config.schema import Config
from kold_span.config.yaml12 import yaml_load
from kold_span.data.atomic import atomic_write, write_text_atomic
from kold_span.data.jsonl import json_text
from kold_span.errors import ArgumentError, ConfigError, DataError, needs_extra
from kold_span.training.run import run_directory, train

logger = logging.getLogger(__name__)

# Metrics shown by default, in this order of preference (headline scores first).
DEFAULT_METRIC_KINDS = ("macro_f1", "char_f1", "f1", "balanced_accuracy", "accuracy")
MAX_METRIC_COLUMNS = 6
# Keys the grid sets itself for every run.
GRID_KEYS = ("seed", "output_dir", "run")
MAX_ID_CHARS = 120
FILES = ("results.csv", "results.md", "results.png")
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


# --------------------------------------------------------------------------- the grid


def split_values(text: str) -> list[str]:
    """Split `--vary` values on the commas outside brackets and quotes: "a,[1, 2]" → ["a", "[1, 2]"].

    Raises:
        ArgumentError: an empty value or unbalanced brackets / quotes.
    """
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

    Args:
        config_path: the experiment YAML every run starts from.
        cell: varied key → value text, applied after `overrides` (empty for a single configuration).
        seeds: the seeds to run, in order.
        runs_dir: where the runs go, as `runs_dir/<experiment>/<name>-seed<N>`.
        name: the cell's name in its run folders.
        overrides: `a.b=value` overrides applied before the cell's values.

    Returns:
        One `PlannedRun` per seed. Saved configs of earlier runs are not compared here: see
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


def finished_metrics(run: PlannedRun) -> Optional[dict[str, Any]]:
    """What a finished run wrote to its metrics.json; None while it has yet to train or finish."""
    metrics_path = run.run_dir / "metrics.json"
    if not metrics_path.exists():
        return None
    return json.loads(read_bounded(metrics_path, FILE_BYTES, DataError).decode("utf-8"))


def train_planned(run: PlannedRun, retrain: bool = False) -> dict[str, Any]:
    """Train one planned run and return its metrics; an interrupted run goes on from its last checkpoint.

    `retrain` starts over even where a checkpoint is left.
    """
    resume = not retrain and run.last_checkpoint.exists()
    return train(run.config, resume=resume, quiet=True).metrics


def run_planned(planned: Sequence[PlannedRun]) -> list[dict[str, Any]]:
    """Train each run (or reuse its metrics.json); one row per run: cell, varied values, seed, test metrics, seconds.

    Each run's progress is logged (INFO).
    """
    rows = []
    for i, run in enumerate(planned, 1):
        where = f"[{i}/{len(planned)}] {run.cell_id} seed {run.seed}"
        metrics = finished_metrics(run)
        if metrics is not None:
            state = "reused"
        else:
            logger.info("%s: %s …", where, "resuming" if run.last_checkpoint.exists() else "training")
            metrics = train_planned(run)
            state = "trained"
        logger.info("%s: %s (%.1f s)", where, state, metrics.get("seconds", float("nan")))
        rows.append({"cell": run.cell_id, **run.cell, "seed": run.seed, **metrics.get("test", {}),
                     "seconds": metrics.get("seconds")})
    return rows


# --------------------------------------------------------------------------- summaries


def metric_names(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every `task/metric` column of the rows, in order of first appearance."""
    return list(dict.fromkeys(key for row in rows for key in row if "/" in key))


def choose_metrics(names: Sequence[str], requested: Optional[Sequence[str]] = None) -> list[str]:
    """The metrics of the table and plot: the requested ones, or the headline ones (at most MAX_METRIC_COLUMNS).

    The default keeps names ending in one of DEFAULT_METRIC_KINDS, ordered by that
    preference and then by task order, so the first (the plotted one) is a macro F1 or a
    span char F1 when the tasks have one.
    """
    if requested:
        missing = [m for m in requested if m not in names]
        if missing:
            raise ArgumentError(f"--metric {', '.join(missing)}: not among the test metrics {', '.join(names)}")
        return list(dict.fromkeys(requested))
    kinds = {kind: rank for rank, kind in enumerate(DEFAULT_METRIC_KINDS)}
    chosen = [n for n in names if n.rsplit("/", 1)[-1] in kinds]
    chosen.sort(key=lambda n: kinds[n.rsplit("/", 1)[-1]])  # stable: task order within a kind
    return chosen[:MAX_METRIC_COLUMNS]


def mean_std(values: Iterable[Any]) -> tuple[Optional[float], Optional[float], int]:
    """Mean, sample standard deviation (n − 1; None below 2 values) and count of the numbers among `values`."""
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not math.isnan(v)]
    if not numbers:
        return None, None, 0
    return statistics.mean(numbers), statistics.stdev(numbers) if len(numbers) > 1 else None, len(numbers)


def summarize(rows: Sequence[Mapping[str, Any]], keys: Sequence[str],
              metrics: Sequence[str]) -> list[dict[str, Any]]:
    """One entry per cell (in row order): values, runs, and per metric mean, std and mean − reference mean.

    The reference is the first cell of the rows (run_grid puts the first value of every
    `--vary` first).
    """
    cells: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        cells.setdefault(row["cell"], []).append(row)
    summary = []
    for name, group in cells.items():
        stats = {m: mean_std(row.get(m) for row in group) for m in metrics}
        summary.append({"cell": name, "values": {k: group[0][k] for k in keys}, "runs": len(group),
                        "mean": {m: s[0] for m, s in stats.items()}, "std": {m: s[1] for m, s in stats.items()}})
    reference = summary[0]["mean"] if summary else {}
    for entry in summary:
        entry["diff"] = {m: None if entry["mean"][m] is None or reference[m] is None
                         else entry["mean"][m] - reference[m] for m in metrics}
    return summary


def render_markdown(summary: Sequence[Mapping[str, Any]], keys: Sequence[str], metrics: Sequence[str],
                    command: str) -> str:
    """results.md: the command, a mean ± std table and a table of differences to the reference cell."""
    reference = ", ".join(f"`{k}={v}`" for k, v in summary[0]["values"].items()) if summary else "n/a"
    head = [*keys, "runs"]
    lines = ["# Ablation results", "", "```", command, "```", "",
             f"Test metrics over seeds: mean ± sample std (n − 1). Reference cell: {reference}.", "",
             "## Mean ± std", "", _md_row([*head, *metrics]), _md_row(["---"] * (len(head) + len(metrics)))]
    for entry in summary:
        lines.append(_md_row([*entry["values"].values(), str(entry["runs"]),
                              *(_fmt_mean_std(entry["mean"][m], entry["std"][m]) for m in metrics)]))
    lines += ["", "## Difference to the reference cell", "", _md_row([*head, *(f"Δ {m}" for m in metrics)]),
              _md_row(["---"] * (len(head) + len(metrics)))]
    for i, entry in enumerate(summary):
        diffs = ["ref" if i == 0 else _fmt_diff(entry["diff"][m]) for m in metrics]
        lines.append(_md_row([*entry["values"].values(), str(entry["runs"]), *diffs]))
    lines += ["", "Per-run scores of every test metric: `results.csv`; runs: `runs/`.", ""]
    return "\n".join(lines)


def _md_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _fmt_mean_std(mean: Optional[float], std: Optional[float]) -> str:
    if mean is None:
        return "n/a"
    return f"{mean:.3f}" if std is None else f"{mean:.3f} ± {std:.3f}"


def _fmt_diff(diff: Optional[float]) -> str:
    return "n/a" if diff is None else f"{diff:+.3f}"


def value_label(key: str, text: str) -> str:
    """A plot label of one value: `key=value`, but a list of tasks reads as its heads joined by " + ".

    Example:
        >>> value_label("tasks", "[{name: T, kind: sequence, source: T, weight: 0.5}, {name: S, kind: span, source: OFF}]")
        'T (weight=0.5) + S'
        >>> value_label("context", "none")
        'context=none'
    """
    if key == "tasks":
        try:
            tasks = yaml_load(text)
        except yaml.YAMLError:
            tasks = None
        if isinstance(tasks, list) and tasks and all(isinstance(t, dict) and "name" in t for t in tasks):
            def one(task: dict[str, Any]) -> str:
                extra = ", ".join(f"{k}={v}" for k, v in task.items() if k not in ("name", "kind", "source"))
                return f"{task['name']} ({extra})" if extra else str(task["name"])
            return " + ".join(one(t) for t in tasks)
    return f"{key}={text}"


def plot_main_metric(summary: Sequence[Mapping[str, Any]], keys: Sequence[str], metric: str,
                     target: Union[Path, IO[bytes]], reference: bool = True, title: Optional[str] = None) -> None:
    """Grouped bars of one metric: groups are the first key's values, bars the other keys' combinations.

    `reference` draws the first entry's mean as a dashed line; `title` replaces the default one.
    """
    import numpy as np
    with needs_extra("plots"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

    first, rest = keys[0], list(keys[1:])
    groups = list(dict.fromkeys(e["values"][first] for e in summary))
    series = list(dict.fromkeys(tuple(e["values"][k] for k in rest) for e in summary))
    width = 0.8 / len(series)
    fig = Figure(figsize=(max(5.0, 1.2 * len(groups) * len(series) ** 0.5 + 2), 4), dpi=90)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for j, combo in enumerate(series):
        bars = [(i, e) for i, group in enumerate(groups) for e in summary
                if e["values"][first] == group and tuple(e["values"][k] for k in rest) == combo
                and e["mean"][metric] is not None]
        label = ", ".join(f"{k}={v}" for k, v in zip(rest, combo)) or None
        ax.bar(np.array([i for i, _ in bars]) + (j - (len(series) - 1) / 2) * width,
               [e["mean"][metric] for _, e in bars], width, label=label, capsize=3,
               yerr=[e["std"][metric] or 0.0 for _, e in bars])
    if reference and summary and summary[0]["mean"][metric] is not None:
        ax.axhline(summary[0]["mean"][metric], color="#555555", linestyle="--", linewidth=0.8, label="reference")
    ax.set_xticks(range(len(groups)), [textwrap.fill(value_label(first, g), 28) for g in groups],
                  rotation=20 if len(groups) > 4 else 0, fontsize=8)
    ax.set_ylabel(f"test {metric}")
    runs = sorted({e["runs"] for e in summary})
    ax.set_title(title or f"{metric}: mean ± std over {'/'.join(map(str, runs))} seed(s)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(target, format="png")


def write_results(rows: Sequence[Mapping[str, Any]], keys: Sequence[str], out_dir: Union[str, Path],
                  metrics: Optional[Sequence[str]] = None, command: str = "") -> list[Path]:
    """Write results.csv (every run, every test metric), results.md and results.png into `out_dir`.

    All three are rendered before the first is written, and each is written whole or not at all
    (`atomic_write`): a failure leaves the previous results as they were.
    """
    out = Path(out_dir)
    names = metric_names(rows)
    chosen = choose_metrics(names, metrics)
    paths = [out / name for name in FILES]
    table = io.StringIO(newline="")
    writer = csv.DictWriter(table, fieldnames=["cell", *keys, "seed", *names, "seconds"], restval="")
    writer.writeheader()
    writer.writerows(rows)
    summary = summarize(rows, keys, chosen)
    markdown = render_markdown(summary, keys, chosen, command)
    plot = io.BytesIO()
    plot_main_metric(summary, keys, chosen[0], plot)
    with atomic_write(paths[0], newline="") as f:
        f.write(table.getvalue())
    write_text_atomic(paths[1], markdown)
    with atomic_write(paths[2], "wb") as f:
        f.write(plot.getvalue())
    return paths


def command_line(config_path: Union[str, Path], vary: Mapping[str, Sequence[Any]], seeds: int,
                 out_dir: Union[str, Path], overrides: Sequence[str] = (),
                 metrics: Optional[Sequence[str]] = None) -> str:
    """The `kold-span ablate` command that runs this grid."""
    parts = ["kold-span", "ablate", str(config_path)]
    for key, values in vary.items():
        parts += ["--vary", f"{key}={','.join(value_text(v) for v in values)}"]
    parts += ["--seeds", str(seeds), "--out", str(out_dir)]
    for text in overrides:
        parts += ["--set", text]
    for metric in metrics or ():
        parts += ["--metric", metric]
    return shlex.join(parts)


def run_grid(config_path: Union[str, Path], vary: Mapping[str, Sequence[Any]], seeds: int,
             out_dir: Union[str, Path], overrides: Sequence[str] = (),
             metrics: Optional[Sequence[str]] = None) -> list[dict[str, Any]]:
    """Train (or reuse) every cell × seed of the grid and write results.csv, results.md and results.png.

    Args:
        config_path: the experiment YAML every run starts from.
        vary: config key → values (YAML texts such as "none" or Python values such as None).
        seeds: runs per cell, with seeds config.seed, config.seed + 1, …
        out_dir: where the results and the runs (`out_dir/runs`) go.
        overrides: `a.b=value` overrides applied to every run before the varied keys.
        metrics: test metrics of the table and plot (default: the headline ones, see choose_metrics).

    Returns:
        One row per run: cell, the varied values, seed, every test metric, seconds.
    """
    planned = plan_grid(config_path, vary, seeds, out_dir, overrides)
    task_names = {task.name for run in planned for task in run.config.tasks}
    unknown = [m for m in metrics or () if m.split("/", 1)[0] not in task_names]
    if unknown:
        raise ArgumentError(f"--metric {', '.join(unknown)}: expected TASK/METRIC with a task among "
                            f"{', '.join(sorted(task_names))}, e.g. {sorted(task_names)[0]}/macro_f1")
    rows = run_planned(planned)
    write_results(rows, list(vary), out_dir, metrics,
                  command_line(config_path, vary, seeds, out_dir, overrides, metrics))
    return rows
