"""A run killed after a checkpoint (between epochs, or inside one with trainer.checkpoint_every_n_steps) and
resumed ends as the same run uninterrupted."""
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from conftest import FIXTURE, ROOT, TINY, child_env
from safetensors.torch import load_file

# Dropout and random (not length-grouped) batches: both draw from the generators a resume must restore.
SETTINGS = ["trainer.max_epochs=4", "data.limit=48", "data.dev_fraction=0.25", "model.dropout=0.1",
            "trainer.batch_size=8", "trainer.threads=1"]


def train_command(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "kold_span.cli", "train", str(TINY), *extra, "--set", f"output_dir={out}",
            f"data.train={FIXTURE}", "run=r", *SETTINGS]


def first_checkpoint_epoch(path: Path) -> int:
    """The epoch stored in a complete checkpoint file, or -1 while there is none readable."""
    try:
        return int(torch.load(path, weights_only=False, map_location="cpu")["epoch"])
    except Exception:  # absent or still being written
        return -1


@pytest.mark.slow
def test_killed_and_resumed_run_equals_the_uninterrupted_run(tmp_path):
    env = child_env()
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    done = subprocess.run(train_command(whole), cwd=ROOT, env=env, capture_output=True, encoding="utf-8", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    process = subprocess.Popen(train_command(broken), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    last = broken / "tiny" / "r" / "checkpoints" / "last.ckpt"
    deadline = time.monotonic() + 600
    while first_checkpoint_epoch(last) < 0 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    process.kill()
    process.wait()
    killed_at = first_checkpoint_epoch(last)
    if killed_at < 0 or killed_at >= 3:
        pytest.fail(f"the run was not killed between epochs (last checkpoint epoch {killed_at})")
    assert not (broken / "tiny" / "r" / "metrics.json").exists()

    resumed = subprocess.run(train_command(broken, "--resume"), cwd=ROOT, env=env, capture_output=True,
                             encoding="utf-8", timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    weights = [load_file(str(d / "tiny" / "r" / "model" / "model.safetensors")) for d in (whole, broken)]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    metrics = [json.loads((d / "tiny" / "r" / "metrics.json").read_text()) for d in (whole, broken)]
    assert metrics[0]["dev"] == metrics[1]["dev"]


class Killed(Exception):
    """Stands for a kill: raised at the start of a step, after the step checkpoint before it was written."""


def mid_epoch_kill(trainer_for):
    """`run.trainer_for` with a callback that fails the run at the first step checkpoint inside its second epoch."""
    from pytorch_lightning.callbacks import Callback

    class KillMidEpoch(Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            if trainer.current_epoch == 1 and batch_idx > 0 and trainer.global_step % 2 == 0:
                raise Killed(f"step {trainer.global_step}")

    def patched(tc, run_dir, quiet=False, callbacks=(), latest=None, **options):
        return trainer_for(tc, run_dir, quiet, [*callbacks, KillMidEpoch()], latest, **options)
    return patched


def step_losses(run: Path) -> dict[int, float]:
    """train/loss by step, over every session's metrics.csv of a run."""
    losses: dict[int, float] = {}
    for csv_path in sorted((run / "logs").glob("version_*/metrics.csv")):
        for row in csv.DictReader(csv_path.open(encoding="utf-8")):
            if row.get("train/loss"):
                assert int(row["step"]) not in losses, f"step {row['step']} logged twice"
                losses[int(row["step"])] = float(row["train/loss"])
    return losses


@pytest.mark.slow
@pytest.mark.parametrize("extra", [
    [],  # random batches
    ["trainer.group_by_length=true"],
    # 5 batches an epoch, a step every 2, an average of the weights
    ["trainer.batch_size=4", "trainer.accumulate_grad_batches=2", "trainer.ema_decay=0.9"],
], ids=["random", "grouped", "accumulated-ema"])
def test_run_killed_inside_an_epoch_resumes_exactly(tmp_path, monkeypatch, extra):
    from kold_span.config.loading import load_config
    from kold_span.training import run as run_module

    def config(out: Path):
        return load_config(TINY, [f"output_dir={out}", f"data.train={FIXTURE}", "run=r", *SETTINGS,
                                  "trainer.checkpoint_every_n_steps=2", *extra])

    whole = run_module.train(config(tmp_path / "whole"), quiet=True)
    assert sorted(p.name for p in (whole.run_dir / "checkpoints").iterdir()) == ["best.ckpt", "last.ckpt"]
    with monkeypatch.context() as patch:
        patch.setattr(run_module, "trainer_for", mid_epoch_kill(run_module.trainer_for))
        with pytest.raises(Killed):
            run_module.train(config(tmp_path / "broken"), quiet=True)
    run = tmp_path / "broken" / "tiny" / "r"
    saved = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)
    served = saved["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]["batches"]
    progress = saved["loops"]["fit_loop"]["epoch_loop.batch_progress"]
    assert saved["epoch"] == 1 and saved["global_step"] % 2 == 0 and served > 0
    assert progress["current"]["processed"] == served and not progress["is_last_batch"]  # inside the epoch
    assert not (run / "metrics.json").exists()

    resumed = run_module.train(config(tmp_path / "broken"), resume=True, quiet=True)
    weights = [load_file(str(r.model_dir / "model.safetensors")) for r in (whole, resumed)]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert whole.metrics["dev"] == resumed.metrics["dev"]
    assert step_losses(whole.run_dir) == step_losses(run)


@pytest.mark.slow
def test_a_run_without_dev_killed_between_epochs_resumes_exactly(tmp_path, monkeypatch):
    """Without validation last.ckpt is written at the epoch's end (pretraining needed `EpochEndCheckpoint` for
    the same case): the resumed run must start the next epoch, not replay a batch of the finished one."""
    from pytorch_lightning.callbacks import Callback

    from kold_span.config.loading import load_config
    from kold_span.training import run as run_module

    class KillAtSecondEpoch(Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            if trainer.current_epoch == 1:
                raise Killed(f"step {trainer.global_step}")

    def config(out: Path):
        settings = [s for s in SETTINGS if not s.startswith("data.dev_fraction")] + ["data.dev_fraction=0"]
        return load_config(TINY, [f"output_dir={out}", f"data.train={FIXTURE}", "run=r", *settings,
                                  "trainer.max_epochs=3"])

    def killing(tc, run_dir, quiet=False, callbacks=(), latest=None, **options):
        return trainer_for(tc, run_dir, quiet, [*callbacks, KillAtSecondEpoch()], latest, **options)

    trainer_for = run_module.trainer_for
    whole = run_module.train(config(tmp_path / "whole"), quiet=True)
    with monkeypatch.context() as patch:
        patch.setattr(run_module, "trainer_for", killing)
        with pytest.raises(Killed):
            run_module.train(config(tmp_path / "broken"), quiet=True)
    run = tmp_path / "broken" / "tiny" / "r"
    saved = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True)
    steps_per_epoch = torch.load(whole.run_dir / "checkpoints" / "last.ckpt", weights_only=True)["global_step"] // 3
    assert saved["epoch"] == 0 and saved["global_step"] == steps_per_epoch  # the first epoch, whole

    resumed = run_module.train(config(tmp_path / "broken"), resume=True, quiet=True)
    weights = [load_file(str(r.model_dir / "model.safetensors")) for r in (whole, resumed)]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert step_losses(whole.run_dir) == step_losses(run)


def checkpoint_triggers(trainer) -> list[tuple[str, str, int, int]]:
    from pytorch_lightning.callbacks import ModelCheckpoint

    return sorted((type(c).__name__, Path(c.dirpath).name + "/" + c.filename, c._every_n_epochs, c._every_n_train_steps)
                  for c in trainer.callbacks if isinstance(c, ModelCheckpoint))


def test_without_checkpoint_every_n_steps_last_ckpt_is_written_per_epoch_only(tmp_path):
    from kold_span.config.schema import TrainerConfig
    from kold_span.training.run import trainer_for

    plain = trainer_for(TrainerConfig(accelerator="cpu", devices=1), tmp_path, quiet=True)
    assert checkpoint_triggers(plain) == [("ModelCheckpoint", "checkpoints/last", 1, 0)]
    stepped = trainer_for(TrainerConfig(accelerator="cpu", devices=1, checkpoint_every_n_steps=500), tmp_path,
                          quiet=True)
    assert checkpoint_triggers(stepped) == [("ModelCheckpoint", "checkpoints/last", 1, 0),
                                            ("StepCheckpoint", "checkpoints/last", 0, 500)]
