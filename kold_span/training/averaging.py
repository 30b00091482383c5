"""An exponential moving average (EMA) of the trained weights, validated and exported in their place.

Averaging the weights over the last few hundred optimizer steps gives part of what averaging
several trained models gives, at no extra training time: one copy of the trained parameters
(frozen ones, such as a frozen 250k-row embedding table, are left out) and one fused update a step.

How the two copies move: the training weights stay in the model while it trains; from the start
of each validation until the next training batch the average is swapped in, so dev metrics, early
stopping and the checkpoints (best and last) all see the averaged weights, and the exported model
is the average of the best epoch. The callback's own state holds whichever copy is swapped out,
so `--resume` continues with the same training weights and the same average.
"""
from __future__ import annotations

from typing import Any, Optional

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback

from kold_span.errors import ArgumentError, ConfigError


def ema_decay_at(decay: float, updates: int) -> float:
    """The decay of update number `updates` (0-based): ``min(decay, (1 + n) / (10 + n))``.

    The ramp lets the first updates weigh more, so the average is not anchored to the
    initial (pretrained or random) weights for thousands of steps.

    Example:
        >>> ema_decay_at(0.999, 0)
        0.1
        >>> ema_decay_at(0.999, 90)
        0.91
        >>> ema_decay_at(0.999, 100_000)
        0.999
    """
    return min(decay, (1.0 + updates) / (10.0 + updates))


class WeightEMA(Callback):
    """Keeps ``avg = d * avg + (1 - d) * weights`` after every optimizer step (d from `ema_decay_at`)."""

    def __init__(self, decay: float):
        if not 0.0 < decay < 1.0:
            raise ArgumentError(f"EMA decay must be in (0, 1), got {decay!r}")
        self.decay = decay
        self.updates = 0
        self.swapped = False  # True: the model holds the average, `self.shadow` the training weights
        self.shadow: list[torch.Tensor] = []
        self._last_step: Optional[int] = None

    @property
    def state_key(self) -> str:
        return f"WeightEMA[{self.decay}]"

    def _ready(self, pl_module: pl.LightningModule) -> list[torch.Tensor]:
        """The trained parameters, with the shadow copy made (or moved to their device) on first use."""
        params = [p for p in pl_module.parameters() if p.requires_grad]
        if not self.shadow:
            self.shadow = [p.detach().clone() for p in params]
        elif len(self.shadow) != len(params):
            raise ConfigError(f"WeightEMA holds {len(self.shadow)} tensors but the model trains {len(params)}: "
                              "a checkpoint of another model or another set of frozen weights")
        elif self.shadow[0].device != params[0].device:
            self.shadow = [s.to(p.device) for s, p in zip(self.shadow, params)]
        return params

    @torch.no_grad()
    def _swap(self, pl_module: pl.LightningModule) -> None:
        for param, other in zip(self._ready(pl_module), self.shadow):
            held = param.detach().clone()
            param.copy_(other)
            other.copy_(held)
        self.swapped = not self.swapped

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any,
                             batch_idx: int) -> None:
        if self.swapped:
            self._swap(pl_module)
        self._ready(pl_module)  # the first average is the weights before any step
        if self._last_step is None:
            self._last_step = trainer.global_step

    @torch.no_grad()
    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if trainer.global_step == self._last_step:
            return  # gradients accumulated, no optimizer step yet
        self._last_step = trainer.global_step
        params = self._ready(pl_module)
        weight = 1.0 - ema_decay_at(self.decay, self.updates)
        torch._foreach_lerp_(self.shadow, [p.detach() for p in params], weight)
        self.updates += 1

    def on_validation_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not self.swapped and self.updates:
            self._swap(pl_module)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        # A run without dev (or validating less often) checkpoints here: save the average there too.
        self.on_validation_start(trainer, pl_module)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.on_validation_start(trainer, pl_module)

    def state_dict(self) -> dict[str, Any]:
        return {"decay": self.decay, "updates": self.updates, "swapped": self.swapped,
                "shadow": [s.detach().cpu() for s in self.shadow]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.updates = int(state_dict["updates"])
        self.swapped = bool(state_dict["swapped"])
        self.shadow = [s.clone() for s in state_dict["shadow"]]
