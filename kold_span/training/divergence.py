"""Training stops at the first loss or gradient norm that is NaN or infinite, saying after how many steps.

A diverged run (a learning rate far too high, an encoder whose config or weights produce NaN) would
otherwise train on, export NaN weights and report plausible metrics; every later prediction would
be NaN. `StopOnNonFinite` is one callback of every Lightning trainer the package builds
(`training.run.trainer_for`: `train` and `pretrain`).
"""
from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch

from kold_span.errors import NonFiniteError

ADVICE = ("lower trainer.lr (or set trainer.gradient_clip_val), and check that the encoder's weights and config "
          "(e.g. layer_norm_eps) give finite outputs")


class StopOnNonFinite(pl.Callback):
    """Raises `NonFiniteError` when a training loss, before its backward pass, or the gradients' total norm, before
    the optimizer steps (and before clipping, which would hide an infinite norm), is not finite. Under 16-mixed
    precision the norm is left to the gradient scaler, which skips such steps by design.

    Example:
        >>> guard = StopOnNonFinite()
        >>> guard.check(torch.tensor(0.5), "the loss", 3)
        >>> guard.check(torch.tensor(float("nan")), "the loss", 3)
        Traceback (most recent call last):
        ...
        kold_span.errors.NonFiniteError: training stopped: the loss is nan after 3 optimizer steps; lower trainer.lr ...
    """

    def check(self, value: torch.Tensor, what: str, steps: int) -> None:
        """A `NonFiniteError` naming `what` and the steps taken unless `value` is finite."""
        if not bool(torch.isfinite(value).all()):
            raise NonFiniteError(f"training stopped: {what} is {value.float().item():g} after {steps} optimizer "
                                 f"step{'' if steps == 1 else 's'}; {ADVICE}")

    def on_before_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule, loss: torch.Tensor) -> None:
        self.check(loss.detach(), "the loss", trainer.global_step)

    def on_before_optimizer_step(self, trainer: pl.Trainer, pl_module: pl.LightningModule, optimizer: Any) -> None:
        if getattr(trainer.precision_plugin, "scaler", None) is not None:
            # float16 with a gradient scaler (16-mixed): an infinite norm is the scaler's to handle; it skips the
            # step and lowers its scale. A loss that is not finite still stops the run.
            return
        grads = [p.grad for p in pl_module.parameters() if p.grad is not None]
        if grads:
            norm = torch.nn.utils.get_total_norm(grads, error_if_nonfinite=False)
            self.check(norm, "the gradients' norm", trainer.global_step)
