"""Task kinds: each kind's behaviour in one module, behind one protocol (`base.Kind`).

A kind says how an example becomes its targets, what its loss and probabilities are, how window
outputs merge, how they decode into labels or character spans, how they score against gold and
which thresholds score best on dev. `windows`, `network` and
`decoding` ask `kind_of(task)` instead of testing the kind's name; `build_tasks` asks it for each
configured task's labels and class weights. The kinds are `sequence`
(labels of the text) and `span` (BIO tags of its tokens); `problems` holds a sequence task's
label problems (single, multi, soft).

Adding a kind: a `TaskKind` member (`kold_span.config.choices`, with the facts the config checks)
and a module here implementing `Kind`, added to `KINDS` (a `config.registry.Registry`).
"""
from __future__ import annotations

import logging
from typing import Sequence

from kold_span.config.choices import TaskKind
from kold_span.config.registry import Registry
from kold_span.config.schema import TaskConfig
from kold_span.data.example import Example
from kold_span.errors import ConfigError
from kold_span.models.kinds.base import Decoding, Kind, MergedExample
from kold_span.models.kinds.sequence import SequenceKind
from kold_span.models.kinds.span import SpanKind
from kold_span.models.tasks import Task

log = logging.getLogger(__name__)

KINDS: Registry[Kind] = Registry("task kind", "kinds")
KINDS.add(TaskKind.SEQUENCE, SequenceKind())
KINDS.add(TaskKind.SPAN, SpanKind())


def kind_of(task: Task) -> Kind:
    """The behaviour of the task's kind.

    Example:
        >>> from kold_span.models.tasks import Task
        >>> kind_of(Task("OFF_span", "span", "OFF")).token_level, kind_of(Task("OFF", "sequence", "OFF")).token_level
        (True, False)
    """
    return KINDS.get(task.kind)


def apply_calibration(tasks: Sequence[Task], merged: Sequence[MergedExample]) -> None:
    """Calibrate, in place, every task's probabilities in `merged` that has a temperature other than 1 or a
    confidence map (`models.temperature`, `models.confidence`)."""
    for task in tasks:
        if task.temperature != 1.0 or task.map_knots:
            for m in merged:
                kind_of(task).calibrate(task, m)


def build_tasks(configs: list[TaskConfig], examples: list[Example]) -> list[Task]:
    """Fix each task's label vocabulary: from the config, else from the training data."""
    tasks = []
    for cfg in configs:
        task = Task(cfg.name, cfg.kind, cfg.source, cfg.problem, cfg.weight, gate=cfg.gate)
        kind = kind_of(task)
        task.labels = kind.labels(task, cfg.labels or (), examples)
        if cfg.class_weight == "balanced":
            task.class_weights = kind.class_weights(task, examples)
        # A fixed threshold is set here; "dev" is tuned after training (the kind's `tune_thresholds`),
        # the default decoding until then.
        if cfg.threshold not in (0.5, "dev") and task.kind.takes_threshold(task.problem):
            task.thresholds = (float(cfg.threshold),) * kind.threshold_count(task)
        tasks.append(task)
    by_name = {t.name: t for t in tasks}
    for task in tasks:
        spans = kind_of(task).token_level  # a span task reads the examples' spans, a sequence task their labels
        if not any(task.source in (ex.spans if spans else ex.labels) for ex in examples):
            where = "spans" if spans else "labels"
            log.warning("task %r: no training example has %s of %r; it learns nothing from this corpus (check "
                        "tasks[].source against the reader's names)", task.name, where, task.source)
        if task.gate and not by_name[task.gate].is_boolean:
            raise ConfigError(f"task {task.name!r}: gate {task.gate!r} must be a true/false task, "
                              f"its labels are {list(by_name[task.gate].labels)}")
    return tasks


__all__ = ["KINDS", "Decoding", "Kind", "MergedExample", "apply_calibration", "build_tasks", "kind_of"]
