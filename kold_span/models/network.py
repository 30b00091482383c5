"""The multi-task network: one shared encoder and a linear head per task.

A head reads the pooled text (sequence tasks) or every token's state (span tasks), as the task's
kind says (`kold_span.models.kinds`); the kind also gives its loss and probabilities.
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch import nn

from kold_span.errors import ArgumentError
from kold_span.models.kinds import kind_of
from kold_span.models.tasks import Task


class MultiTaskModel(nn.Module):
    """Shared transformer encoder with one linear head per task."""

    def __init__(self, encoder: nn.Module, tasks: Sequence[Task], dropout: float = 0.1, pooling: str = "first"):
        super().__init__()
        self.encoder = encoder
        self.tasks = list(tasks)
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        hidden = encoder.config.hidden_size
        self.heads = nn.ModuleDict({t.name: nn.Linear(hidden, kind_of(t).num_outputs(t)) for t in self.tasks})
        self.uses_token_types = getattr(encoder.config, "type_vocab_size", 0) > 1

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: Optional[torch.Tensor] = None) -> dict[str, torch.Tensor]:
        """Logits per task: [batch, labels] for sequence tasks, [batch, tokens, 3] for span tasks."""
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if self.uses_token_types and token_type_ids is not None:
            kwargs["token_type_ids"] = token_type_ids
        states = self.dropout(self.encoder(**kwargs).last_hidden_state)
        pooled = pool(states, attention_mask, self.pooling)
        return {t.name: self.heads[t.name](states if kind_of(t).token_level else pooled) for t in self.tasks}

    def losses(self, logits: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Per-task losses; examples without a label for a task do not count for it."""
        return {task.name: task_loss(task, logits[task.name], batch) for task in self.tasks}


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
    """The task's loss: cross-entropy (single, span), binary cross-entropy (multi) or soft cross-entropy."""
    return kind_of(task).loss(task, logits, batch)


def probabilities(task: Task, logits: torch.Tensor) -> torch.Tensor:
    """Logits → probabilities: sigmoid for multi-label, softmax otherwise."""
    return kind_of(task).probabilities(task, logits)
