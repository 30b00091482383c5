"""The sequence kind: labels of the whole text, read from the pooled encoder state.

Every window of an example carries the example's target; the example's probabilities come from
its windows' (`windows_merged`: the surest window for a true/false or multi-label task, else the
mean). What the target, loss, probabilities and decoded label are depends on the task's problem
(single, multi, soft): `kold_span.models.kinds.problems`, which scores it too.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from kold_span.config.choices import Problem
from kold_span.data.example import Example, label_set
from kold_span.errors import ConfigError
from kold_span.models.confidence import remap, remap_labels
from kold_span.models.kinds.base import Decoding, MergedExample
from kold_span.models.kinds.problems import label_problem, label_thresholds, sequence_prediction
from kold_span.models.temperature import temper

if TYPE_CHECKING:
    import torch

    from kold_span.models.tasks import Task


def windows_merged(task: "Task", probs: np.ndarray) -> np.ndarray:
    """A text's probabilities of a sequence task from its windows' ([windows, labels]).

    A comment is offensive (ironic, toxic) when any part of it is: a true/false task takes P(true)
    of its surest window, and P(false) the rest; a multi-label task each label's highest, as the
    label is there when one window finds it. The mean would let the benign pages of a long comment
    outvote the one window that holds an insult, and gate its spans off. A task of other labels
    (a target type, BEEP!'s none / offensive / hate) or of vote shares (soft) says what the whole
    text is, not whether something is in it: it averages its windows.

    Example:
        >>> from kold_span.models.tasks import Task
        >>> off = Task("OFF", "sequence", "OFF", labels=("false", "true"))
        >>> windows_merged(off, np.array([[0.9, 0.1], [0.2, 0.8]])).round(6).tolist()  # the mean would be 0.45
        [0.2, 0.8]
    """
    if len(probs) == 1:
        return probs[0]
    if task.problem is Problem.MULTI:
        return probs.max(axis=0)
    if task.problem is Problem.SINGLE and task.is_boolean:
        true = task.labels.index("true")
        out = np.empty_like(probs[0])
        out[true] = probs[:, true].max()
        out[1 - true] = 1 - out[true]
        return out
    return probs.mean(axis=0)


class SequenceKind:
    """`Kind` of sequence tasks (see the module docstring).

    Example:
        >>> from kold_span.models.tasks import Task
        >>> off = Task("OFF", "sequence", "OFF", labels=("false", "true"))
        >>> merged = [MergedExample({"OFF": np.array([0.3, 0.7])})]
        >>> SequenceKind().scores(off, Decoding([off]), [Example("1", "바보냐", labels={"OFF": True})], merged)["OFF/f1"]
        1.0
    """

    token_level = False

    def labels(self, task: "Task", configured: Sequence[str], examples: Sequence[Example]) -> tuple[str, ...]:
        if configured:
            return tuple(configured)
        labels = label_problem(task.problem).vocabulary(examples, task.source)
        if not labels:
            raise ConfigError(f"task {task.name!r}: no example has a label {task.source!r}; "
                             f"check tasks[].source against the reader's label names")
        return labels

    def class_weights(self, task: "Task", examples: Sequence[Example]) -> tuple[float, ...]:
        return label_problem(task.problem).class_weights(examples, task.source, task.labels)

    def num_outputs(self, task: "Task") -> int:
        return len(task.labels)

    def threshold_count(self, task: "Task") -> int:
        return len(task.labels)  # one per label

    def add_targets(self, task: "Task", example: Example, windows: Sequence[dict[str, Any]]) -> None:
        target = label_problem(task.problem).target(task, example)
        for window in windows:
            window[f"target_{task.name}"] = target

    def collate(self, task: "Task", windows: Sequence[dict[str, Any]]) -> dict[str, "torch.Tensor"]:
        key = f"target_{task.name}"
        return {} if key not in windows[0] else label_problem(task.problem).collate(task, [w[key] for w in windows])

    def loss(self, task: "Task", logits: "torch.Tensor", batch: dict[str, "torch.Tensor"]) -> "torch.Tensor":
        return label_problem(task.problem).loss(task, logits, batch)

    def probabilities(self, task: "Task", logits: "torch.Tensor") -> "torch.Tensor":
        return label_problem(task.problem).probabilities(logits)

    def merge(self, task: "Task", window_probs: Sequence[dict[str, np.ndarray]],
              picks: Sequence[tuple[int, int]], merged: "MergedExample") -> None:
        merged.sequence_probs[task.name] = windows_merged(task, np.stack([p[task.name] for p in window_probs]))

    def average(self, task: "Task", members: Sequence["MergedExample"], merged: "MergedExample") -> None:
        merged.sequence_probs[task.name] = np.mean([m.sequence_probs[task.name] for m in members], axis=0)

    def calibrate(self, task: "Task", merged: "MergedExample") -> None:
        probs = temper(merged.sequence_probs[task.name], task.temperature, self.exclusive(task))
        if task.confidence_map and self.exclusive(task):
            probs = remap(probs, task.confidence_map)
        elif task.label_maps and not self.exclusive(task):
            probs = remap_labels(probs, task.label_maps)
        merged.sequence_probs[task.name] = probs

    def outcomes(self, task: "Task", example: Example, merged: "MergedExample") -> tuple[np.ndarray, np.ndarray]:
        probs = np.asarray(merged.sequence_probs[task.name], dtype=np.float64).reshape(1, -1)
        target = label_problem(task.problem).target(task, example)
        columns = len(task.labels)
        if isinstance(target, list) and not target or isinstance(target, int) and target < 0:  # no gold
            return probs[:0], np.zeros((0, columns))
        if isinstance(target, int):  # a single label's index
            target = np.eye(columns)[target]
        return probs, np.asarray(target, dtype=np.float64).reshape(1, -1)

    def decision_score(self, task: "Task", merged: "MergedExample", text: str, decoding: Decoding,
                       label: Optional[str]) -> Optional[float]:
        # rounded as predictions show it, and as `evaluation.operating_points` counts it when it chooses thresholds
        return round(float(merged.sequence_probs[task.name][task.labels.index(label or "true")]), 6)

    def exclusive(self, task: "Task") -> bool:
        return label_problem(task.problem).exclusive

    def implied_thresholds(self, task: "Task") -> Optional[tuple[float, ...]]:
        return (0.5,) * len(task.labels)  # a multi-label task without thresholds decides at 0.5

    def add_prediction(self, task: "Task", merged: "MergedExample", text: str, decoding: Decoding,
                       prediction: dict[str, Any]) -> None:
        prediction["labels"][task.name] = sequence_prediction(task, merged.sequence_probs[task.name])

    def scores(self, task: "Task", decoding: Decoding, examples: Sequence[Example],
               merged: Sequence[MergedExample]) -> dict[str, float]:
        pairs = [(ex, m.sequence_probs[task.name]) for ex, m in zip(examples, merged)]
        return label_problem(task.problem).scores(task, pairs)

    def tune_thresholds(self, task: "Task", decoding: Decoding, examples: Sequence[Example],
                        merged: Sequence[MergedExample]) -> tuple[tuple[float, ...], dict[str, float]]:
        labelled = [(ex, m) for ex, m in zip(examples, merged) if ex.labels.get(task.source) is not None]
        golds = [label_set(ex.labels[task.source]) for ex, _ in labelled]
        thresholds = label_thresholds(task, golds, [m.sequence_probs[task.name] for _, m in labelled])
        return thresholds, dict(zip(task.labels, thresholds))


__all__ = ["SequenceKind", "sequence_prediction"]
