"""Progress lines for a training run whose stderr is no terminal (`nohup`, a batch scheduler, a pipe).

A progress bar redraws one line of a terminal; written to a file it is either off or a stream of
carriage returns, and a long run under a scheduler showed nothing for hours. `ProgressLog` logs
one line every `every` seconds (30 by default) instead: epoch, optimizer step, the mean training
loss since the last line, steps per second and the time left at that rate, e.g.
`epoch 3/10, step 340/1700, loss 0.4213, 5.7 steps/s, 3m59s left`. `progress_callbacks` adds it
when stderr is not a terminal and the run is not quiet.
"""
from __future__ import annotations

import logging
import math
import sys
import time
from typing import IO, Any, Callable, Optional

import pytorch_lightning as pl
from pytorch_lightning.callbacks import Callback

log = logging.getLogger(__name__)
EVERY_S = 30.0


def duration(seconds: float) -> str:
    """A time span as 45s, 3m58s or 2h05m.

    Example:
        >>> duration(45.2), duration(238), duration(7500)
        ('45s', '3m58s', '2h05m')
    """
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def progress_line(epoch: int, max_epochs: Optional[int], step: int, total_steps: float, loss: Optional[float],
                  steps_per_s: float) -> str:
    """One progress line; what is not known (no epoch limit, no step total, no loss yet) is left out.

    Example:
        >>> progress_line(2, 10, 340, 1700, 0.42128, 5.7)
        'epoch 3/10, step 340/1700, loss 0.4213, 5.7 steps/s, 3m59s left'
        >>> progress_line(0, None, 12, math.inf, None, 0.4)
        'epoch 1, step 12, 0.4 steps/s'
    """
    parts = [f"epoch {epoch + 1}" + (f"/{max_epochs}" if max_epochs and max_epochs > 0 else "")]
    known_total = math.isfinite(total_steps) and total_steps > 0
    parts.append(f"step {step}" + (f"/{int(total_steps)}" if known_total else ""))
    if loss is not None:
        parts.append(f"loss {loss:.4f}")
    parts.append(f"{steps_per_s:.1f} steps/s")
    if known_total and steps_per_s > 0:
        parts.append(f"{duration(max(0.0, total_steps - step) / steps_per_s)} left")
    return ", ".join(parts)


class ProgressLog(Callback):
    """Logs a progress line (see `progress_line`) at most every `every` seconds of training."""

    def __init__(self, every: float = EVERY_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.every, self.clock = every, clock
        self._started = self._last = 0.0
        self._first_step = 0
        self._losses: list[float] = []

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._started = self._last = self.clock()
        self._first_step = trainer.global_step  # a resumed run counts its own rate
        self._losses = []

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if loss is not None:
            self._losses.append(float(loss))
        now = self.clock()
        if now - self._last < self.every or not trainer.is_global_zero:
            return
        steps = trainer.global_step - self._first_step
        rate = steps / (now - self._started) if now > self._started else 0.0
        mean = sum(self._losses) / len(self._losses) if self._losses else None
        log.info(progress_line(trainer.current_epoch, trainer.max_epochs, trainer.global_step,
                               trainer.estimated_stepping_batches, mean, rate))
        self._last, self._losses = now, []


def progress_callbacks(quiet: bool, stream: Optional[IO[str]] = None) -> list[Callback]:
    """[ProgressLog()] when the run is not quiet and `stream` (default stderr) is not a terminal, else [].

    Example:
        >>> import io
        >>> [type(c).__name__ for c in progress_callbacks(quiet=False, stream=io.StringIO())]
        ['ProgressLog']
        >>> progress_callbacks(quiet=True, stream=io.StringIO())
        []
    """
    stream = sys.stderr if stream is None else stream
    terminal = bool(getattr(stream, "isatty", lambda: False)())
    return [] if quiet or terminal else [ProgressLog()]
