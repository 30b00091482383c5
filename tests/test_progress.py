"""Training progress lines when stderr is no terminal: the line, its timing, and when the callback is added."""
import io
import logging
import math
from types import SimpleNamespace

import torch

from kold_span.training.progress import ProgressLog, duration, progress_callbacks, progress_line


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fake_trainer(**values) -> SimpleNamespace:
    defaults = dict(global_step=0, current_epoch=0, max_epochs=4, estimated_stepping_batches=400, is_global_zero=True)
    return SimpleNamespace(**{**defaults, **values})


def test_durations_and_lines_by_hand():
    assert [duration(s) for s in (0, 59.4, 60, 3599, 3600, 86399)] == ["0s", "59s", "1m00s", "59m59s", "1h00m",
                                                                       "23h59m"]
    # 300 of 400 steps left at 2.5 steps/s: 120 s
    assert progress_line(1, 4, 100, 400, 0.5, 2.5) == "epoch 2/4, step 100/400, loss 0.5000, 2.5 steps/s, 2m00s left"
    assert progress_line(0, -1, 7, math.inf, 1.25, 0.0) == "epoch 1, step 7, loss 1.2500, 0.0 steps/s"


def test_a_line_every_interval_with_the_mean_loss_since_the_last_one(caplog):
    clock = Clock()
    callback = ProgressLog(every=30, clock=clock)
    trainer = fake_trainer()
    callback.on_train_start(trainer, None)
    with caplog.at_level(logging.INFO, logger="kold_span.training.progress"):
        for step, (seconds, loss) in enumerate([(10, 1.0), (25, 0.8), (40, 0.6), (50, 0.5), (75, 0.3)], 1):
            clock.now = 1000.0 + seconds
            trainer.global_step = step * 10
            callback.on_train_batch_end(trainer, None, {"loss": torch.tensor(loss)}, None, step)
    # at 40 s: 30 steps in 40 s = 0.75 steps/s, 370 left = 493 s; at 75 s (35 s after): 50 steps, 0.67/s
    assert [r.getMessage() for r in caplog.records] == [
        "epoch 1/4, step 30/400, loss 0.8000, 0.8 steps/s, 8m13s left",
        "epoch 1/4, step 50/400, loss 0.4000, 0.7 steps/s, 8m45s left",
    ]


def test_only_the_main_process_of_a_distributed_run_logs(caplog):
    clock = Clock()
    callback = ProgressLog(every=1, clock=clock)
    trainer = fake_trainer(is_global_zero=False)
    callback.on_train_start(trainer, None)
    clock.now += 5
    with caplog.at_level(logging.INFO, logger="kold_span.training.progress"):
        callback.on_train_batch_end(trainer, None, torch.tensor(0.5), None, 0)
    assert caplog.records == []


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_callback_is_added_when_stderr_is_no_terminal_and_the_run_is_not_quiet():
    assert [type(c) for c in progress_callbacks(quiet=False, stream=io.StringIO())] == [ProgressLog]
    assert progress_callbacks(quiet=False, stream=Terminal()) == []
    assert progress_callbacks(quiet=True, stream=io.StringIO()) == []
