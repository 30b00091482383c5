"""Task kinds: each kind's behaviour in one module, behind one protocol (`base.Kind`).

A kind says how an example becomes its targets, what its loss and probabilities are, how window
outputs merge, and how they decode into labels or character spans. `windows`, `network` and
`decoding` ask `kind_of(task)` instead of testing the kind's name. The kinds are `sequence`
(labels of the text) and `span` (BIO tags of its tokens); `problems` holds a sequence task's
label problems (single, multi, soft).

Adding a kind: a `TaskKind` member (`kold_span.config.choices`, with the facts the config checks),
a module here implementing `Kind` and registered in `KINDS`, and its scorer in
`kold_span.evaluation.task_scores` (scores need the metrics, a layer above this one).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kold_span.config.choices import TaskKind
from kold_span.models.kinds.base import Decoding, Kind
from kold_span.models.kinds.sequence import SequenceKind
from kold_span.models.kinds.span import SpanKind

if TYPE_CHECKING:
    from kold_span.models.tasks import Task

KINDS: dict[TaskKind, Kind] = {TaskKind.SEQUENCE: SequenceKind(), TaskKind.SPAN: SpanKind()}


def kind_of(task: "Task") -> Kind:
    """The behaviour of the task's kind.

    Example:
        >>> from kold_span.models.tasks import Task
        >>> kind_of(Task("OFF_span", "span", "OFF")).token_level, kind_of(Task("OFF", "sequence", "OFF")).token_level
        (True, False)
    """
    return KINDS[task.kind]


__all__ = ["KINDS", "Decoding", "Kind", "kind_of"]
