"""Ablation grids: `kold-span ablate CONFIG --vary KEY=v1,v2 --seeds 3 --out DIR`.

Every combination of the `--vary` values (a cell) is trained once per seed, each run
an ordinary `train` run under `DIR/runs/<experiment>/<cell id>-seed<N>`. The path reads
top to bottom: `--vary` texts → `plan.plan_grid` (every run's config, all validated before
anything trains) → `run_planned` here (train, or reuse a run whose metrics.json exists) →
one row of test metrics per run → `summary.summarize` (mean ± std per cell, difference to the
reference cell: the first value of every `--vary`) → `results.write_results`: results.csv,
results.md (`markdown`) and results.png (`plot`).

Example:
    >>> rows = run_grid("configs/experiment/demo.yaml", {"context": ["auto", "none"]},
    ...                 seeds=3, out_dir="out/context")  # doctest: +SKIP
    >>> command_line("demo.yaml", {"context": ["auto", None]}, 3, "out/context")
    'kold-span ablate demo.yaml --vary context=auto,null --seeds 3 --out out/context'
"""
from __future__ import annotations

import json
import logging
import shlex
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from kold_span.config.limits import FILE_BYTES, read_bounded
from kold_span.errors import ArgumentError, DataError
from kold_span.experiments.plan import PlannedRun, plan_grid, value_text
from kold_span.experiments.results import write_results
from kold_span.training.run import train

logger = logging.getLogger(__name__)


def finished_metrics(run: PlannedRun) -> Optional[dict[str, Any]]:
    """What a finished run wrote to its metrics.json; None while it has yet to train or finish."""
    metrics_path = run.run_dir / "metrics.json"
    if not metrics_path.exists():
        return None
    return json.loads(read_bounded(metrics_path, FILE_BYTES, DataError).decode("utf-8"))


def train_planned(run: PlannedRun, retrain: bool = False) -> dict[str, Any]:
    """Train one planned run and return its metrics; an interrupted run goes on from its last checkpoint.

    `retrain` starts over even where a checkpoint is left (told to, as `kold-span train --overwrite` is).
    """
    resume = not retrain and run.last_checkpoint.exists()
    return train(run.config, resume=resume, quiet=True, overwrite=retrain).metrics


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

    `vary` maps config keys to values (YAML texts such as "none" or Python values such as None), applied after
    `overrides`; each cell runs `seeds` times, with seeds config.seed, config.seed + 1, …; the runs go to
    `out_dir/runs`. `metrics` are the test metrics of the table and plot (default: `choose_metrics`). Returns one
    row per run: cell, the varied values, seed, every test metric, seconds.
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
