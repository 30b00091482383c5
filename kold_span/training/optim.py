"""The optimizer and learning-rate schedule of every training loop: fine-tuning and pretraining.

AdamW, with weight decay on the parameters of two or more dimensions only (matrices and
embeddings; not biases, nor LayerNorm gains and shifts, whatever a model names them), and a
learning rate that rises linearly over the warm-up steps, then falls linearly to 0 at the
last step. Fine-tuning (`training.module`) and pretraining (`training.pretrain`) both take them from
`lightning_optimizers`, and Lightning steps the schedule.

Example:
    >>> [round(lr_factor(step, total=10, warmup=4), 3) for step in (0, 3, 4, 9)]
    [0.2, 0.8, 1.0, 0.167]
"""
from __future__ import annotations

import time
from typing import Any, Iterable, Optional

import torch

from kold_span.config.schema import TrainerConfig


def decay_groups(parameters: Iterable[torch.nn.Parameter], weight_decay: float) -> list[dict[str, Any]]:
    """The trainable parameters as two optimizer groups: with `weight_decay` (2 or more dimensions), without.

    Pulling a LayerNorm gain or a bias towards 0 is no regularisation, and such parameters are the
    vectors; reading the shape instead of the name also covers norms named other than LayerNorm.
    Frozen parameters (`requires_grad` off) are left out. Returns `[{"params": decayed, "weight_decay":
    weight_decay}, {"params": the rest, "weight_decay": 0.0}]`, each in the order given.

    Example:
        >>> layer = torch.nn.Linear(3, 2)
        >>> decayed, plain = decay_groups(layer.parameters(), 0.01)
        >>> [p.shape for p in decayed["params"]], [p.shape for p in plain["params"]], plain["weight_decay"]
        ([torch.Size([2, 3])], [torch.Size([2])], 0.0)
    """
    trained = [p for p in parameters if p.requires_grad]
    return [{"params": [p for p in trained if p.dim() >= 2], "weight_decay": weight_decay},
            {"params": [p for p in trained if p.dim() < 2], "weight_decay": 0.0}]


def adamw(parameters: Iterable[torch.nn.Parameter], lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW over `decay_groups(parameters, weight_decay)` at learning rate `lr`."""
    return torch.optim.AdamW(decay_groups(parameters, weight_decay), lr=lr)


def warmup_steps(total: int, warmup_ratio: float) -> int:
    """The number of warm-up steps: `warmup_ratio` of `total`, rounded down.

    Example:
        >>> warmup_steps(30, 0.06), warmup_steps(10, 0.25), warmup_steps(100, 0.0)
        (1, 2, 0)
    """
    return int(total * warmup_ratio)


def lr_factor(step: float, total: int, warmup: int) -> float:
    """The share of the peak learning rate at optimizer step `step` (counted from 0) of `total`.

    During the `warmup` steps (`warmup_steps`) it rises by `1 / (warmup + 1)` a step, so the first step already
    learns; after them it falls linearly from 1 at step `warmup` to `1 / (total - warmup)` at
    the last step (no step is spent at 0) and is 0 from step `total` on. A fractional `step`
    lies between (pretraining's time limit counts elapsed time as steps).

    Example:
        >>> [round(lr_factor(s, total=6, warmup=2), 3) for s in range(7)]
        [0.333, 0.667, 1.0, 0.75, 0.5, 0.25, 0.0]
    """
    return (step + 1) / (warmup + 1) if step < warmup else max(0.0, (total - step) / max(1, total - warmup))


def warmup_schedule(optimizer: torch.optim.Optimizer, total: int, warmup_ratio: float,
                    minutes: Optional[float] = None) -> torch.optim.lr_scheduler.LambdaLR:
    """A per-step scheduler multiplying each group's learning rate by `lr_factor`.

    With a time limit of `minutes`, the time spent counts as steps when it is further along
    than the steps taken, so a run stopped by the clock still ends with the learning rate at 0.

    Example:
        >>> optimizer = adamw(torch.nn.Linear(2, 2).parameters(), lr=0.1, weight_decay=0.0)
        >>> schedule = warmup_schedule(optimizer, total=4, warmup_ratio=0.5)
        >>> rates = []
        >>> for _ in range(4):
        ...     rates.append(round(optimizer.param_groups[0]["lr"], 4)); optimizer.step(); schedule.step()
        >>> rates
        [0.0333, 0.0667, 0.1, 0.05]
    """
    warmup = warmup_steps(total, warmup_ratio)
    started = time.monotonic()

    # A plain function, not a partial: LambdaLR checkpoints the attributes of callable objects.
    def factor(step: int) -> float:
        position = max(step, (time.monotonic() - started) / (minutes * 60) * total) if minutes else step
        return lr_factor(position, total, warmup)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def lightning_optimizers(module: Any, trainer_config: TrainerConfig, minutes: Optional[float] = None) -> dict[str, Any]:
    """`configure_optimizers`' answer: `adamw` and the warm-up schedule over the steps Lightning will take."""
    optimizer = adamw(module.parameters(), trainer_config.lr, trainer_config.weight_decay)
    scheduler = warmup_schedule(optimizer, max(1, int(module.trainer.estimated_stepping_batches)),
                                trainer_config.warmup_ratio, minutes)
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
