"""The protocol every task kind implements, from a task's gold to its part of a prediction, and the types it
speaks: `Decoding` (what decoding needs) and `MergedExample` (one example's outputs, windows merged)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Protocol, Sequence

import numpy as np

from kold_span.config.choices import SnapMode
from kold_span.data.example import Example

if TYPE_CHECKING:
    import torch

    from kold_span.models.tasks import Task


@dataclass(frozen=True)
class Decoding:
    """How outputs become a prediction: the model's tasks (a span task's gate is one of them) and `align`.

    Example:
        >>> Decoding(tasks=[]).snap, Decoding(tasks=[], snap="morpheme").snap.value
        (<SnapMode.NONE: 'none'>, 'morpheme')
    """

    tasks: Sequence["Task"]
    snap: SnapMode = SnapMode.NONE
    trim: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "snap", SnapMode.parse(self.snap, "snap"))


@dataclass
class MergedExample:
    """One example's outputs with overlapping windows merged."""

    sequence_probs: dict[str, np.ndarray] = field(default_factory=dict)
    token_offsets: list[tuple[int, int]] = field(default_factory=list)
    token_probs: dict[str, np.ndarray] = field(default_factory=dict)  # task → [tokens, 3]
    # The input's normalization (text.normalize.Normalized) when the model normalizes: the offsets
    # above are on its normalized text, and predictions map spans back to the original.
    normalized: Any = None


class Kind(Protocol):
    """What one task kind does; `kold_span.models.kinds.KINDS` holds one per `TaskKind`.

    Windows are the dicts `kold_span.models.windows.InputEncoder` makes; a kind adds its targets
    to them under keys with the task's name, and reads them back from the collated batch.
    """

    token_level: bool  # the head reads each token's state and scores each token, not the pooled text

    def labels(self, task: "Task", configured: Sequence[str], examples: Sequence[Example]) -> tuple[str, ...]:
        """The task's label vocabulary: the configured labels, else the training examples'."""

    def class_weights(self, task: "Task", examples: Sequence[Example]) -> tuple[float, ...]:
        """The loss weights `class_weight: balanced` asks for."""

    def num_outputs(self, task: "Task") -> int:
        """The width of the task's head."""

    def threshold_count(self, task: "Task") -> int:
        """How many thresholds a fixed `threshold` sets."""

    def add_targets(self, task: "Task", example: Example, windows: Sequence[dict[str, Any]]) -> None:
        """Attach the example's targets for the task to each of its windows."""

    def collate(self, task: "Task", windows: Sequence[dict[str, Any]]) -> dict[str, "torch.Tensor"]:
        """The task's targets of a batch of windows as tensors (none when the windows carry none)."""

    def loss(self, task: "Task", logits: "torch.Tensor", batch: dict[str, "torch.Tensor"]) -> "torch.Tensor":
        """The task's loss over the batch."""

    def probabilities(self, task: "Task", logits: "torch.Tensor") -> "torch.Tensor":
        """Logits → probabilities."""

    def merge(self, task: "Task", window_probs: Sequence[dict[str, np.ndarray]],
              picks: Sequence[tuple[int, int]], merged: "MergedExample") -> None:
        """Store the task's probabilities of one example from those of its windows.

        `picks` names, for each of the example's tokens in text order, the (window, position)
        that scores it.
        """

    def average(self, task: "Task", members: Sequence["MergedExample"], merged: "MergedExample") -> None:
        """Store in `merged` the mean of several models' probabilities of the task for one example."""

    def calibrate(self, task: "Task", merged: "MergedExample") -> None:
        """Replace the task's probabilities in `merged` by them at the task's temperature (`models.temperature`),
        then through its confidence map, if it has one (`models.confidence`)."""

    def outcomes(self, task: "Task", example: Example, merged: "MergedExample") -> tuple[np.ndarray, np.ndarray]:
        """The task's probability rows of one example and their gold targets (one-hot, multi-hot or a distribution),
        [rows, columns] each; no rows when the example has no gold for the task. What temperature is fitted on."""

    def decision_score(self, task: "Task", merged: "MergedExample", text: str, decoding: Decoding,
                       label: Optional[str]) -> Optional[float]:
        """What a decision policy's thresholds cut: the text is flagged at a threshold the score reaches (P(label) of
        a sequence task, the highest threshold that decodes a span of a span task); None: flagged at none."""

    def exclusive(self, task: "Task") -> bool:
        """Whether a row of the task's probabilities is one softmax (else a sigmoid per column)."""

    def implied_thresholds(self, task: "Task") -> Optional[tuple[float, ...]]:
        """The thresholds that decode as the task does without any; None when no threshold does."""

    def add_prediction(self, task: "Task", merged: "MergedExample", text: str, decoding: Decoding,
                       prediction: dict[str, Any]) -> None:
        """Add the task's part to one example's prediction `{"labels": {...}, "spans": [...]}`."""

    def scores(self, task: "Task", decoding: Decoding, examples: Sequence[Example],
               merged: Sequence["MergedExample"]) -> dict[str, float]:
        """The task's metrics on gold examples (spans decoded as `decoding` says) as `task/metric` → value."""

    def tune_thresholds(self, task: "Task", decoding: Decoding, examples: Sequence[Example],
                        merged: Sequence["MergedExample"]) -> tuple[tuple[float, ...], dict[str, float]]:
        """The task's thresholds that score best on these (dev) examples, and them by name for a report."""
