"""Scores of merged model outputs against gold examples, per task; thresholds tuned on dev.

Each task kind scores itself and tunes its thresholds (`Kind.scores`, `Kind.tune_thresholds` in
`kold_span.models.kinds`); this module asks the kind of each task, and scores predictions of benign texts.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from kold_span import metrics
from kold_span.config.choices import Problem, TaskKind
from kold_span.data.example import Example, label_set, label_str
from kold_span.models.kinds import Decoding, MergedExample, kind_of
from kold_span.models.tasks import Task


def score(decoding: Decoding, examples: Sequence[Example], merged: Sequence[MergedExample]) -> dict[str, float]:
    """Every task's metrics (`decoding.tasks`, spans decoded as `decoding` says) as a flat dict `task/metric` → value.

    Example:
        >>> off = Task("OFF", "sequence", "OFF", labels=("false", "true"))
        >>> gold = [Example(id="1", text="바보냐", labels={"OFF": True}),
        ...         Example(id="2", text="좋네", labels={"OFF": False})]
        >>> merged = [MergedExample({"OFF": np.array([0.2, 0.8])}), MergedExample({"OFF": np.array([0.3, 0.7])})]
        >>> scores = score(Decoding([off]), gold, merged)  # both predicted true
        >>> scores["OFF/accuracy"], scores["OFF/precision"], scores["OFF/recall"]
        (0.5, 0.5, 1.0)
    """
    out: dict[str, float] = {}
    for task in decoding.tasks:
        out.update(kind_of(task).scores(task, decoding, examples, merged))
        probs, _targets = task_outcomes(task, examples, merged)
        if len(probs):
            out[f"{task.name}/ece"] = calibration_error(task, examples, merged)
    return out


def task_outcomes(task: Task, examples: Sequence[Example],
                  merged: Sequence[MergedExample]) -> tuple[np.ndarray, np.ndarray]:
    """One task's probability rows over `examples` and their gold targets, stacked ([rows, columns] each).

    A sequence task gives a row per labelled example, a span task a row per token (O, B, I).
    """
    kind = kind_of(task)
    pairs = [kind.outcomes(task, ex, m) for ex, m in zip(examples, merged)]
    columns = len(task.labels) if not kind.token_level else 3
    if not pairs:
        return np.zeros((0, columns)), np.zeros((0, columns))
    return (np.concatenate([p for p, _ in pairs]).reshape(-1, columns),
            np.concatenate([t for _, t in pairs]).reshape(-1, columns))


def calibration_error(task: Task, examples: Sequence[Example], merged: Sequence[MergedExample],
                      bins: int = metrics.ECE_BINS) -> float:
    """Expected calibration error of one task's probabilities (equal-mass `bins`).

    A softmax task (single, soft, a span task's tokens) is judged on its top label's probability
    (a hit when it is the gold's top label); a multi-label task on every label's probability (a hit
    when the gold has the label).

    Example:
        >>> off = Task("OFF", "sequence", "OFF", labels=("false", "true"))
        >>> gold = [Example(id=str(i), text="t", labels={"OFF": v}) for i, v in enumerate([True, True, False, False])]
        >>> merged = [MergedExample({"OFF": np.array(p)}) for p in ([0.2, 0.8], [0.4, 0.6], [0.9, 0.1], [0.3, 0.7])]
        >>> # top-label confidences 0.8 hit, 0.6 hit, 0.9 hit, 0.7 miss; bins of 2: {0.6, 0.7} 1/2, {0.8, 0.9} 2/2
        >>> round(calibration_error(off, gold, merged, bins=2), 6)  # (|0.5 - 0.65| + |1 - 0.85|) / 2
        0.15
    """
    return metrics.expected_calibration_error(*confidence_hits(task, examples, merged), bins)


def confidence_hits(task: Task, examples: Sequence[Example],
                    merged: Sequence[MergedExample]) -> tuple[np.ndarray, np.ndarray]:
    """What a task's calibration is judged on (`calibration_error`): each score and whether it was right."""
    probs, targets = task_outcomes(task, examples, merged)
    if kind_of(task).exclusive(task):
        top = probs.argmax(axis=-1)
        return probs[np.arange(len(probs)), top], (top == targets.argmax(axis=-1)).astype(float)
    return probs.reshape(-1), targets.reshape(-1)


def task_thresholds(task: Task, decoding: Decoding, examples: Sequence[Example],
                    merged: Sequence[MergedExample]) -> tuple[tuple[float, ...], dict[str, float]]:
    """The thresholds of one task chosen on held-out examples, and them by name for a report.

    A multi-label task gets each label's F1-best threshold (`label_thresholds`), reported by label;
    a span task the P(B) + P(I) threshold with the best mean char-F1 (`span_threshold`),
    reported as "inside".
    """
    return kind_of(task).tune_thresholds(task, decoding, examples, merged)


def benign_scores(tasks: Sequence[Task], examples: Sequence[Example],
                  predictions: Sequence[dict[str, Any]]) -> dict[str, float]:
    """How often a model flags texts known to be benign: a span, or a label other than the benign one given.

    `predictions` are rows as `Predictor.predict` gives them, one per example; an example's labels hold
    the benign value of each task's source (tasks whose source it lacks are not judged).

    Example:
        >>> tasks = [Task("toxic", "sequence", "toxic", labels=("false", "true")), Task("OFF_span", "span", "OFF")]
        >>> examples = [Example(id=str(i), text="fine", labels={"toxic": False}) for i in range(4)]
        >>> rows = [{"labels": {"toxic": {"label": False}}, "spans": []},
        ...         {"labels": {"toxic": {"label": True}}, "spans": []},
        ...         {"labels": {"toxic": {"label": False}}, "spans": [{"type": "OFF", "start": 0, "end": 4}]},
        ...         {"labels": {"toxic": {"label": True}}, "spans": [{"type": "OFF", "start": 0, "end": 2}]}]
        >>> benign_scores(tasks, examples, rows)
        {'examples': 4, 'flagged': 0.75, 'with_span': 0.5, 'other_label': 0.5}
    """
    judged = [t for t in tasks if t.kind is TaskKind.SEQUENCE and t.problem is not Problem.SOFT]
    with_span = other_label = flagged = 0
    for example, row in zip(examples, predictions, strict=True):
        spanned = bool(row["spans"])
        relabelled = any(_label_key(row["labels"][t.name]["label"]) != _label_key(example.labels[t.source])
                         for t in judged if t.source in example.labels and t.name in row["labels"])
        with_span += spanned
        other_label += relabelled
        flagged += spanned or relabelled
    n = max(len(examples), 1)
    return {"examples": len(examples), "flagged": flagged / n, "with_span": with_span / n,
            "other_label": other_label / n}


def _label_key(value: Any) -> Any:
    """A label comparable across spellings: a set of strings for label lists, else its string."""
    return frozenset(label_set(value)) if isinstance(value, (list, tuple, set)) else label_str(value)


def format_table(scores: dict[str, Any]) -> str:
    """A readable two-column table of metric → value."""
    width = max((len(k) for k in scores), default=6)
    lines = [f"{'metric':<{width}}  value", f"{'-' * width}  ------"]
    lines += [f"{key:<{width}}  {value:.4f}" if isinstance(value, float) else f"{key:<{width}}  {value}"
              for key, value in sorted(scores.items())]
    return "\n".join(lines)
