"""The LightningModule: joint loss, AdamW with linear warm-up (`training.optim`), dev metrics per epoch."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np
import pytorch_lightning as pl
import torch

from kold_span.config.schema import TrainerConfig
from kold_span.models.network import MultiTaskModel, probabilities
from kold_span.models.tasks import Task
from kold_span.training.optim import lightning_optimizers

# (window index → task → probabilities) → metrics
Evaluator = Callable[[dict[int, dict[str, np.ndarray]]], dict[str, float]]


class MultiTaskModule(pl.LightningModule):
    """Trains a `MultiTaskModel` on the weighted sum of its task losses.

    Example:
        >>> from kold_span.config.schema import ScratchEncoderConfig
        >>> from kold_span.models.backbones import scratch_encoder
        >>> task = Task("OFF", "sequence", "OFF", labels=("false", "true"))
        >>> encoder = scratch_encoder(ScratchEncoderConfig(hidden_size=8, layers=1, heads=1, intermediate_size=8,
        ...                                                max_position=8), vocab_size=20, pad_id=0)
        >>> module = MultiTaskModule(MultiTaskModel(encoder, [task]), [task], TrainerConfig())
        >>> batch = {"input_ids": torch.tensor([[2, 7, 9, 3]]), "attention_mask": torch.ones(1, 4, dtype=torch.long)}
        >>> module(batch)["OFF"].shape  # one comment, logits of false and true
        torch.Size([1, 2])
    """

    def __init__(self, model: MultiTaskModel, tasks: Sequence[Task], trainer_config: TrainerConfig,
                 dev_evaluator: Optional[Evaluator] = None, perturbed_evaluator: Optional[Evaluator] = None):
        super().__init__()
        self.model = model
        self.tasks = list(tasks)
        self.cfg = trainer_config
        # The dev split, then (data.augment.evasion) its disguised copy: validation loaders 0 and 1,
        # logged as dev/... and dev_perturbed/...
        self.evaluators = {"dev": dev_evaluator, "dev_perturbed": perturbed_evaluator}
        self._outputs: dict[str, dict[int, dict[str, np.ndarray]]] = {"dev": {}, "dev_perturbed": {}}

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return self.model(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))

    def _loss(self, batch: dict[str, torch.Tensor], logits: dict[str, torch.Tensor], split: str) -> torch.Tensor:
        losses = self.model.losses(logits, batch)
        total = sum(task.weight * losses[task.name] for task in self.tasks)
        size = batch["input_ids"].size(0)
        # add_dataloader_idx=False: with a disguised dev beside dev, "dev/loss" keeps its name (and stays monitorable).
        for name, value in losses.items():
            self.log(f"{split}/{name}_loss", value, batch_size=size, sync_dist=split != "train",
                     add_dataloader_idx=False)
        self.log(f"{split}/loss", total, prog_bar=split != "dev_perturbed", batch_size=size,
                 sync_dist=split != "train", add_dataloader_idx=False)
        return total

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._loss(batch, self(batch), "train")

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        split = ("dev", "dev_perturbed")[dataloader_idx]
        logits = self(batch)
        self._loss(batch, logits, split)
        probs = {t.name: probabilities(t, logits[t.name]).float().cpu().numpy() for t in self.tasks}
        for row, index in enumerate(batch["window_index"].tolist()):
            self._outputs[split][index] = {name: p[row] for name, p in probs.items()}

    def on_validation_epoch_end(self) -> None:
        for split, evaluator in self.evaluators.items():
            outputs = self._outputs[split]
            self._outputs[split] = {}
            if evaluator is None or self.trainer.sanity_checking:
                continue
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                gathered: list[Any] = [None] * torch.distributed.get_world_size()
                torch.distributed.all_gather_object(gathered, outputs)
                outputs = {k: v for part in gathered for k, v in part.items()}
            for name, value in evaluator(outputs).items():
                # Every rank computed the same numbers from the gathered outputs.
                self.log(f"{split}/{name}", float(value),
                         prog_bar=split == "dev" and name.endswith(("char_f1", "macro_f1")))

    def configure_optimizers(self) -> dict[str, Any]:
        return lightning_optimizers(self, self.cfg)
