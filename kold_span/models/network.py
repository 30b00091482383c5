"""The multi-task network: one shared encoder, a first-token head per sequence task
and a BIO token head per span type."""
from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from kold_span.errors import ArgumentError
from kold_span.models.tasks import Task
from kold_span.text.align import IGNORE_INDEX


class MultiTaskModel(nn.Module):
    """Shared transformer encoder with one linear head per task."""

    def __init__(self, encoder: nn.Module, tasks: Sequence[Task], dropout: float = 0.1, pooling: str = "first"):
        super().__init__()
        self.encoder = encoder
        self.tasks = list(tasks)
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        hidden = encoder.config.hidden_size
        self.heads = nn.ModuleDict({t.name: nn.Linear(hidden, t.num_outputs) for t in self.tasks})
        self.uses_token_types = getattr(encoder.config, "type_vocab_size", 0) > 1

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: Optional[torch.Tensor] = None) -> dict[str, torch.Tensor]:
        """Logits per task: [batch, labels] for sequence tasks, [batch, tokens, 3] for span tasks."""
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if self.uses_token_types and token_type_ids is not None:
            kwargs["token_type_ids"] = token_type_ids
        states = self.dropout(self.encoder(**kwargs).last_hidden_state)
        pooled = pool(states, attention_mask, self.pooling)
        return {t.name: self.heads[t.name](states if t.kind == "span" else pooled) for t in self.tasks}

    def losses(self, logits: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Per-task losses; examples without a label for a task do not count for it."""
        out = {}
        for task in self.tasks:
            out[task.name] = task_loss(task, logits[task.name], batch)
        return out


def pool(states: torch.Tensor, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """[batch, tokens, hidden] -> [batch, hidden]: the first token, or the mean over unpadded tokens.

    Example:
        >>> states = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [50.0, 60.0]]])
        >>> mask = torch.tensor([[1, 1, 0]])  # the third token is padding
        >>> pool(states, mask, "first").tolist(), pool(states, mask, "mean").tolist()
        ([[1.0, 2.0]], [[2.0, 3.0]])
    """
    if pooling == "first":
        return states[:, 0]
    if pooling == "mean":
        mask = attention_mask.unsqueeze(-1).to(states.dtype)
        return (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)
    raise ArgumentError(f"unknown pooling {pooling!r} (first or mean)")


def task_loss(task: Task, logits: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Cross-entropy (single, span), binary cross-entropy (multi) or soft cross-entropy."""
    if task.kind == "span":
        target = batch[f"tags_{task.name}"]
        if (target != IGNORE_INDEX).any():
            return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1),
                                   ignore_index=IGNORE_INDEX)
        return logits.sum() * 0.0
    target = batch[f"target_{task.name}"]
    if task.problem == "single":
        if (target != IGNORE_INDEX).any():
            weight = logits.new_tensor(task.class_weights) if task.class_weights else None
            return F.cross_entropy(logits, target, weight=weight, ignore_index=IGNORE_INDEX)
        return logits.sum() * 0.0
    mask = batch[f"mask_{task.name}"]
    if not mask.any():
        return logits.sum() * 0.0
    if task.problem == "multi":
        pos_weight = logits.new_tensor(task.class_weights) if task.class_weights else None
        per_item = F.binary_cross_entropy_with_logits(logits, target, reduction="none",
                                                      pos_weight=pos_weight).mean(-1)
    else:
        per_item = -(target * F.log_softmax(logits, dim=-1)).sum(-1)
    return (per_item * mask).sum() / mask.sum()


def probabilities(task: Task, logits: torch.Tensor) -> torch.Tensor:
    """Logits → probabilities: sigmoid for multi-label, softmax otherwise."""
    return torch.sigmoid(logits) if task.problem == "multi" and task.kind == "sequence" else logits.softmax(-1)
