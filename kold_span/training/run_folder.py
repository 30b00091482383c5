"""Where a run lives: `<output_dir>/<experiment>/<run>`, the lock on that folder, and which process owns it.

Example:
    >>> from kold_span.config.schema import Config
    >>> run_directory(Config(experiment="demo", run="seed13", output_dir="out"), resume=False).as_posix()
    'out/demo/seed13'
"""
from __future__ import annotations

import os
import time
from contextlib import nullcontext
from pathlib import Path
from typing import ContextManager

from kold_span.config.schema import Config
from kold_span.data.atomic import output_lock

# What a launcher (Lightning's DDP processes, torchrun, SLURM) sets in the processes it starts beside the first.
RANK_VARIABLES = ("RANK", "LOCAL_RANK", "NODE_RANK", "GROUP_RANK", "SLURM_PROCID")


def launched_worker() -> bool:
    """Whether this process is one a launcher started beside the first of a distributed run (a rank above 0)."""
    return any(os.environ.get(name, "0").strip() not in ("", "0") for name in RANK_VARIABLES)


def run_lock(run_dir: Path) -> ContextManager[None]:
    """The lock on a run folder (`data.atomic.output_lock`), held by the first process of a run; the others,
    started by a launcher into the same folder, take none."""
    return nullcontext() if launched_worker() else output_lock(run_dir)


def run_directory(config: Config, resume: bool) -> Path:
    """checkpoints/<experiment>/<run>; with --resume and no run name, the newest run."""
    base = Path(config.output_dir) / config.experiment
    if config.run:
        last = base / config.run / "checkpoints" / "last.ckpt"
        if resume and not last.exists():
            raise FileNotFoundError(f"--resume: {last} does not exist (a mistyped run name, a run that never "
                                    "finished an epoch nor reached trainer.checkpoint_every_n_steps, or one trained "
                                    "with trainer.keep_checkpoints: false)")
        return base / config.run
    if resume:
        runs = sorted((p for p in base.glob("*") if (p / "checkpoints" / "last.ckpt").exists()),
                      key=lambda p: p.stat().st_mtime)
        if not runs:
            raise FileNotFoundError(f"--resume: no run with checkpoints/last.ckpt under {base}")
        return runs[-1]
    return base / time.strftime("%Y%m%d-%H%M%S")
