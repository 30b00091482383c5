"""Exact resume: the random generators travel in the checkpoint and are restored before training goes on.

Lightning restores the weights, the optimizer, the schedule and the loop counters from `last.ckpt`,
but not the random generators, which `seed_everything` resets when the process starts. Yet the
next epoch draws from them: the shuffled order of a random sampler, dropout masks, the seeds of
loader workers. A run killed and resumed therefore trained its later epochs on other batches
than the same run uninterrupted. `RandomState` saves Python's, NumPy's and torch's generators
(every CUDA device's too) with each checkpoint and puts them back when training restarts, after
the checkpoint is loaded and before the first batch is drawn, so the resumed run draws what the
uninterrupted one drew. The samplers need nothing: their orders are seeded by the epoch.

Inside an epoch (`trainer.checkpoint_every_n_steps`, `StepCheckpoint`), the training loader
(`sampling.ResumableLoader`) also saves how many batches of the epoch it served, and the resumed
run skips them: the rest of the epoch's order, then the next epochs, as uninterrupted.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback, ModelCheckpoint


def capture_random_state() -> dict[str, Any]:
    """The state of every random generator a training step can draw from, as tensors and plain values.

    Plain values, because Lightning reads checkpoints back with `weights_only=True`, which refuses
    NumPy arrays.
    """
    kind, keys, position, has_gauss, cached = np.random.get_state()
    numpy_state = {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "position": int(position),
                   "has_gauss": int(has_gauss), "cached_gaussian": float(cached)}
    state = {"python": random.getstate(), "numpy": numpy_state, "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_random_state(state: dict[str, Any]) -> None:
    """Put back what `capture_random_state` returned (CUDA states only where CUDA is in use).

    Example:
        >>> state = capture_random_state()
        >>> first = (random.random(), float(np.random.rand()), float(torch.rand(1)))
        >>> restore_random_state(state)
        >>> (random.random(), float(np.random.rand()), float(torch.rand(1))) == first
        True
    """
    random.setstate(state["python"])
    numpy_state = state["numpy"]
    np.random.set_state((numpy_state["kind"], numpy_state["keys"].numpy().astype(np.uint32),
                         numpy_state["position"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class RandomState(Callback):
    """Saves the random generators with every checkpoint; restores them when a run is resumed."""

    def __init__(self) -> None:
        self._pending: Optional[dict[str, Any]] = None

    def state_dict(self) -> dict[str, Any]:
        return {"random_state": capture_random_state()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        # Applied at on_train_start: between loading and training, Lightning still builds the loaders.
        self._pending = state_dict.get("random_state")

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._pending is not None:
            restore_random_state(self._pending)
            self._pending = None


class LoaderPosition(Callback):
    """Saves how many batches of the epoch the training loader served; a resumed run skips them.

    Lightning saves a stateful loader's state itself, but does not give it back when the loader
    was built before the checkpoint was read, as it is to count the schedule's steps: so the
    state travels here, under a key of its own, and reaches the loader before its first batch.
    """

    KEY = "train_loader_position"

    def __init__(self) -> None:
        self._pending: Optional[dict[str, Any]] = None

    def on_save_checkpoint(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        loader = trainer.train_dataloader
        if loader is not None and hasattr(loader, "load_state_dict"):
            checkpoint[self.KEY] = loader.state_dict()

    def on_load_checkpoint(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        self._pending = checkpoint.get(self.KEY)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        loader = trainer.train_dataloader
        if self._pending is not None and hasattr(loader, "load_state_dict"):
            loader.load_state_dict(self._pending)
        self._pending = None


class EpochEndCheckpoint(Callback):
    """Writes `path` (a run's last.ckpt) after the last batch of every epoch, for a run without validation.

    Lightning's ModelCheckpoint saves such a run at `on_train_epoch_end`, once the epoch loop has
    counted its last batch done; Lightning 2.6 resumes that checkpoint inside the finished epoch
    (one more batch, then the next epoch's order an epoch late). Saved at the last batch's end, as
    a run with validation is saved at validation's end, it resumes at the next epoch's first batch.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if trainer.fit_loop.epoch_loop.batch_progress.is_last_batch:
            trainer.save_checkpoint(self.path)


class StepCheckpoint(ModelCheckpoint):
    """A ModelCheckpoint that saves every `every_n_train_steps` steps, but not at an epoch's last batch.

    The epoch's own checkpoint follows that batch (after validation, when there is a dev split):
    saved before validation instead, a resume would continue from a finished epoch whose dev score
    was never taken.
    """

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if not trainer.fit_loop.epoch_loop.batch_progress.is_last_batch:
            super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)
