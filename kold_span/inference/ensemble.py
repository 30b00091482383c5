"""Several trained models of the same tasks predicting as one: the mean of their probabilities.

On corpora of a few thousand examples, models that differ only in their seed disagree by several
points of F1; averaging their probabilities removes much of that variance. Usage::

    from kold_span.inference.ensemble import load_predictor
    ensemble = load_predictor(["runs/seed13/model", "runs/seed14/model", "runs/seed15/model"])
    ensemble.predict(["..."])

or `kold-span predict --model DIR1 DIR2 DIR3 ...`. Each member predicts as it would alone (its own
tokenizer, context settings and fused n-gram model); per example, a sequence task's probabilities
and a span task's per-token (O, B, I) probabilities are averaged, then decoded once with the mean
of the members' decision thresholds (a multi-label task's per-label thresholds, a span task's
P(B) + P(I) threshold). Span tasks need members that split texts into the same tokens (the same
tokenizer: seeds of one configuration, or fine-tunings of one pretrained encoder).
"""
from __future__ import annotations

import dataclasses
import hashlib
import logging
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from kold_span.data.example import Context
from kold_span.errors import ArgumentError
from kold_span.inference.pipeline import Encoded, HostProbs, PreparedChunk, RunOptions
from kold_span.inference.predictor import Predictor, Predicts
from kold_span.models.kinds import MergedExample, kind_of
from kold_span.models.tasks import Task

log = logging.getLogger(__name__)


def _shared_decision(task: Task, group: Sequence[Task], names: Sequence[str]) -> Optional[dict[str, Any]]:
    """The members' decision policy when they all carry the same one, else none (said in a warning).

    A policy promised what one model did on its data, nothing about the mean of several.
    """
    if all(member.decision == task.decision for member in group):
        return task.decision
    log.warning("task %r: the members' decision policies differ (%s): the ensemble has none, its rows state no "
                "actions", task.name, ", ".join(names))
    return None


def _signature(task: Task) -> tuple:
    """What members must agree on for a task: what it predicts, not how it was trained."""
    return task.name, task.kind, task.source, task.problem, task.labels, task.gate


class Ensemble(Predicts[tuple[Encoded, ...], list[PreparedChunk], list[list[HostProbs]]]):
    """Predictors of the same tasks whose probabilities are averaged (see the module docstring).

    Each stage is each member's, in turn (`merge` averages them; `window_shape` is the first member's); spans
    are decoded with the first member's `align` settings (snap, trim).
    """

    def __init__(self, members: Sequence[Predictor], names: Sequence[str] = ()):
        members = list(members)
        names = list(names) or [f"member {i}" for i in range(len(members))]
        if len(members) < 2:
            raise ArgumentError(f"an ensemble needs at least two models, got {len(members)}")
        first = members[0]
        for name, member in zip(names[1:], members[1:]):
            if [_signature(t) for t in member.tasks] != [_signature(t) for t in first.tasks]:
                raise ArgumentError(f"{name} predicts other tasks than {names[0]}: "
                                    f"{[t.name for t in member.tasks]} vs {[t.name for t in first.tasks]} "
                                    "(an ensemble's members need the same tasks, sources and label sets)")
            for what, theirs, mine in (("data.perspective", member.settings.perspective, first.settings.perspective),
                                       ("normalize steps", member.settings.normalize, first.settings.normalize)):
                if theirs != mine:
                    raise ArgumentError(f"{name} and {names[0]} differ in {what} ({theirs} vs {mine}); an ensemble's "
                                        "members need the same")
        self._members, self.names = members, names
        self.tasks = [dataclasses.replace(task, thresholds=_mean_thresholds(task, [m.tasks[i] for m in members], names),
                                          decision=_shared_decision(task, [m.tasks[i] for m in members], names))
                      for i, task in enumerate(first.tasks)]
        self.settings = first.settings  # each member reads inputs by its own; perspective and normalize as checked
        self.precision = first.precision  # each member runs its network in its own

    @property
    def members(self) -> Sequence[Predictor]:
        return self._members

    @property
    def identity(self) -> str:
        """The SHA-256 of the members' identities, in order (`Predictor.identity`)."""
        return hashlib.sha256("\n".join(m.identity for m in self.members).encode()).hexdigest()

    def encode(self, texts: Sequence[str], contexts: Sequence[Context]) -> list[tuple[Encoded, ...]]:
        return list(zip(*(member.encode(texts, contexts) for member in self.members)))

    def window_shape(self, encoded: tuple[Encoded, ...]) -> tuple[int, int]:
        return self.members[0].window_shape(encoded[0])

    def prepare(self, encoded: Sequence[tuple[Encoded, ...]], batch_size: int = 32) -> list[PreparedChunk]:
        return [member.prepare([e[i] for e in encoded], batch_size) for i, member in enumerate(self.members)]

    def run_network(self, prepared: list[PreparedChunk]) -> list[list[HostProbs]]:
        return [member.run_network(p) for member, p in zip(self.members, prepared, strict=True)]

    def merge(self, prepared: list[PreparedChunk], outputs: list[list[HostProbs]]) -> list[MergedExample]:
        return self._average([member.merge(p, o) for member, p, o in zip(self.members, prepared, outputs,
                                                                          strict=True)])

    def _average(self, outputs: Sequence[Sequence[MergedExample]]) -> list[MergedExample]:
        """Per example, the mean of the members' probabilities (span tasks: members must share tokens)."""
        merged = []
        for i, group in enumerate(zip(*outputs)):
            out = MergedExample(token_offsets=list(group[0].token_offsets), normalized=group[0].normalized)
            for task in self.tasks:
                kind = kind_of(task)
                if kind.token_level:
                    _check_same_tokens(i, task, group, out.token_offsets, self.names)
                kind.average(task, group, out)
            merged.append(out)
        return merged


def _check_same_tokens(index: int, task: Task, group: Sequence[MergedExample], tokens: list[tuple[int, int]],
                       names: Sequence[str]) -> None:
    """An `ArgumentError` unless every member split text `index` into the first member's tokens (per-token tasks)."""
    for name, member in zip(names[1:], group[1:]):
        if list(member.token_offsets) != tokens:
            raise ArgumentError(f"text {index}: {name} splits it into other tokens than {names[0]}; "
                                f"{task.kind} task {task.name!r} can only be averaged over members that "
                                "share a tokenizer")


def _mean_thresholds(task: Task, versions: Sequence[Task], names: Sequence[str]) -> tuple[float, ...]:
    """The members' thresholds of one task, averaged; none when no member has any.

    Example:
        >>> tuned = Task("g", "sequence", "g", problem="multi", labels=("x", "y"), thresholds=(0.3, 0.5))
        >>> untuned = Task("g", "sequence", "g", problem="multi", labels=("x", "y"))
        >>> _mean_thresholds(tuned, [tuned, untuned], ["m0", "m1"])  # untuned decides at 0.5
        (0.4, 0.5)
    """
    tuned = [bool(v.thresholds) for v in versions]
    if not any(tuned):
        return ()
    implied = kind_of(task).implied_thresholds(task)  # how a member without thresholds decides
    if implied is None and not all(tuned):
        without = [n for n, t in zip(names, tuned) if not t]
        raise ArgumentError(f"{task.kind} task {task.name!r} has a threshold in some members but not in {without}: "
                            "they decode differently (a span task's most probable tag vs P(B) + P(I)); "
                            "train them alike")
    rows = [v.thresholds or implied for v in versions]
    return tuple(float(x) for x in np.mean(rows, axis=0))


def load_predictor(directories: Sequence[Union[str, Path]], options: RunOptions = RunOptions()) -> Predicts:
    """One model directory as a `Predictor`, several as an `Ensemble` (what `--model DIR [DIR ...]` loads).

    `options` gives each network's device, precision and runtime (`Predictor.from_pretrained`), and
    whether each manifest is checked. `predict`, `serve`, `robustness`, the Ray workers and the
    benches load their models through this.

    Example:
        >>> load_predictor(["no/such/model"])
        Traceback (most recent call last):
        ...
        FileNotFoundError: model directory no/such/model does not exist
    """
    members = [Predictor.from_pretrained(d, device=options.device, precision=options.precision,
                                         runtime=options.runtime, verify=options.verify) for d in directories]
    return Ensemble(members, [str(d) for d in directories]) if len(members) > 1 else members[0]
