"""Scores of merged model outputs against gold examples, per task; thresholds tuned on dev.

Scoring is the evaluation layer's part of a task kind. `kold_span.models.kinds` holds what a
kind does up to its predictions, and cannot import `metrics`, which sit a layer above it; so each
kind's scorer is here, in `SCORERS` (keyed by `TaskKind`), and a sequence task's scores by its
label problem in `SEQUENCE_SCORES` (keyed by `Problem`). A new kind adds its scorer here.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from kold_span.config.choices import Problem, SnapMode, TaskKind
from kold_span.data.example import Example, label_set, label_str, spans_to_offsets
from kold_span import metrics
from kold_span.models.kinds import Decoding, MergedExample
from kold_span.models.kinds.problems import soft_distribution
from kold_span.models.kinds.sequence import sequence_prediction
from kold_span.models.kinds.span import span_tags, task_spans
from kold_span.models.tasks import THRESHOLD_GRID, Task, label_thresholds
from kold_span.text.align import spans_to_tags


class TaskScorer(Protocol):
    """How one kind of task is scored, and its thresholds tuned, on gold examples."""

    def scores(self, task: Task, decoding: Decoding, examples: Sequence[Example],
               merged: Sequence[MergedExample]) -> dict[str, float]:
        """The task's metrics as `task/metric` → value."""

    def task_thresholds(self, task: Task, decoding: Decoding, examples: Sequence[Example],
                        merged: Sequence[MergedExample]) -> tuple[tuple[float, ...], dict[str, float]]:
        """The task's thresholds that score best on these (dev) examples, and them by name for a report."""


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
        out.update(SCORERS[task.kind].scores(task, decoding, examples, merged))
    return out


def task_thresholds(task: Task, decoding: Decoding, examples: Sequence[Example],
                    merged: Sequence[MergedExample]) -> tuple[tuple[float, ...], dict[str, float]]:
    """The thresholds of one task chosen on held-out examples, and them by name for a report.

    A multi-label task gets each label's F1-best threshold (`label_thresholds`), reported by label;
    a span task the P(B) + P(I) threshold with the best mean char-F1 (`span_threshold`),
    reported as "inside".
    """
    return SCORERS[task.kind].task_thresholds(task, decoding, examples, merged)


class SequenceScorer:
    """A sequence task's scores, by its problem (`SEQUENCE_SCORES`)."""

    def scores(self, task: Task, decoding: Decoding, examples: Sequence[Example],
               merged: Sequence[MergedExample]) -> dict[str, float]:
        pairs = [(ex, m.sequence_probs[task.name]) for ex, m in zip(examples, merged)]
        return SEQUENCE_SCORES[task.problem](task, pairs)

    def task_thresholds(self, task: Task, decoding: Decoding, examples: Sequence[Example],
                        merged: Sequence[MergedExample]) -> tuple[tuple[float, ...], dict[str, float]]:
        labelled = [(ex, m) for ex, m in zip(examples, merged) if ex.labels.get(task.source) is not None]
        golds = [label_set(ex.labels[task.source]) for ex, _ in labelled]
        thresholds = label_thresholds(task, golds, [m.sequence_probs[task.name] for _, m in labelled])
        return thresholds, dict(zip(task.labels, thresholds))


class SpanScorer:
    """A span task's character F1 (mean, snapped, micro) and seqeval F1 of its tags."""

    def scores(self, task: Task, decoding: Decoding, examples: Sequence[Example],
               merged: Sequence[MergedExample]) -> dict[str, float]:
        golds = [spans_to_offsets(ex.spans.get(task.source, [])) for ex in examples]
        raw = predicted_offsets(task, dataclasses.replace(decoding, snap=SnapMode.NONE), examples, merged)
        out = {f"{task.name}/char_f1": metrics.mean_char_f1(raw, golds)}
        if decoding.snap is not SnapMode.NONE:
            out[f"{task.name}/char_f1_{decoding.snap.value}"] = metrics.mean_char_f1(
                predicted_offsets(task, decoding, examples, merged), golds)
        out[f"{task.name}/char_micro_f1"] = metrics.micro_char_prf(raw, golds)["f1"]
        true_tags, pred_tags = [], []
        for ex, m in zip(examples, merged):
            gold = spans_to_tags(ex.spans.get(task.source, []), m.token_offsets, text=ex.text)
            true_tags.append([_typed(t or "O") for t in gold])
            pred_tags.append([_typed(t) for t in span_tags(task, m.token_probs[task.name])]
                             if len(m.token_offsets) else [])
        if any(true_tags):
            out[f"{task.name}/seqeval_f1"] = metrics.seqeval_prf(true_tags, pred_tags)["f1"]
        return out

    def task_thresholds(self, task: Task, decoding: Decoding, examples: Sequence[Example],
                        merged: Sequence[MergedExample]) -> tuple[tuple[float, ...], dict[str, float]]:
        threshold = span_threshold(task, decoding, examples, merged)
        return (threshold,), {"inside": threshold}


SCORERS: dict[TaskKind, TaskScorer] = {TaskKind.SEQUENCE: SequenceScorer(), TaskKind.SPAN: SpanScorer()}

Pairs = Sequence[tuple[Example, np.ndarray]]  # each example with its probabilities of one task


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


def single_label_scores(task: Task, pairs: Pairs) -> dict[str, float]:
    """accuracy, macro/weighted F1, balanced accuracy; precision, recall, F1 of "true" for a true/false task."""
    labelled = [(ex.labels[task.source], p) for ex, p in pairs if ex.labels.get(task.source) is not None]
    if not labelled:
        return {}
    y_true = [label_str(gold) for gold, _ in labelled]
    y_pred = [task.labels[int(np.argmax(p))] for _, p in labelled]
    report = metrics.classification_report_dict(y_true, y_pred, labels=list(task.labels))
    out = {f"{task.name}/{k}": report[k] for k in ("accuracy", "macro_f1", "weighted_f1", "balanced_accuracy")}
    if task.is_boolean:
        prf = metrics.binary_prf(y_true, y_pred, positive="true")
        out.update({f"{task.name}/{k}": prf[k] for k in ("precision", "recall", "f1")})
    return out


def multi_label_scores(task: Task, pairs: Pairs) -> dict[str, float]:
    """micro/macro F1 of the labels decided at the task's thresholds, and label-ranking average precision."""
    labelled = [(ex.labels[task.source], p) for ex, p in pairs if ex.labels.get(task.source) is not None]
    if not labelled:
        return {}
    y_true = [[label_str(v) for v in gold] for gold, _ in labelled]
    preds = [sequence_prediction(task, p) for _, p in labelled]
    y_pred = [[label_str(v) for v in p["label"]] for p in preds]
    scores = [p["probs"] for p in preds]
    result = metrics.multilabel_scores(y_true, y_pred, labels=list(task.labels), scores=scores)
    return {f"{task.name}/{k}": float(v) for k, v in result.items() if isinstance(v, (int, float))}


def soft_label_scores(task: Task, pairs: Pairs) -> dict[str, float]:
    """Cross-entropy and Manhattan distance to the vote distribution; macro F1 and accuracy of the top labels."""
    items = [(soft_distribution(ex, task.source), p) for ex, p in pairs]
    items = [(gold, p) for gold, p in items if gold]
    if not items:
        return {}
    golds = [[gold.get(label, 0.0) for label in task.labels] for gold, _ in items]
    preds = [list(map(float, p)) for _, p in items]
    hard_true = [task.labels[int(np.argmax(g))] for g in golds]
    hard_pred = [task.labels[int(np.argmax(p))] for p in preds]
    report = metrics.classification_report_dict(hard_true, hard_pred, labels=list(task.labels))
    return {f"{task.name}/cross_entropy": metrics.soft_cross_entropy(preds, golds),
            f"{task.name}/manhattan": metrics.manhattan_distance(preds, golds),
            f"{task.name}/macro_f1": report["macro_f1"], f"{task.name}/accuracy": report["accuracy"]}


SEQUENCE_SCORES: dict[Problem, Callable[[Task, Pairs], dict[str, float]]] = {
    Problem.SINGLE: single_label_scores, Problem.MULTI: multi_label_scores, Problem.SOFT: soft_label_scores}


def predicted_offsets(task: Task, decoding: Decoding, examples: Sequence[Example],
                      merged: Sequence[MergedExample]) -> list[set[int]]:
    """The character offsets of each example's predicted spans of one span task."""
    return [spans_to_offsets((s["start"], s["end"]) for s in task_spans(task, m, ex.text, decoding))
            for ex, m in zip(examples, merged)]


def span_threshold(task: Task, decoding: Decoding, examples: Sequence[Example], merged: Sequence[MergedExample],
                   grid: tuple[float, ...] = THRESHOLD_GRID) -> float:
    """The P(B) + P(I) threshold of a span task that maximises mean char-F1 on held-out examples.

    Spans are decoded as `Predictor` outputs them (`decoding`: snapping, trimming, the task's gate);
    ties go to the threshold nearest 0.5.
    """
    golds = [spans_to_offsets(ex.spans.get(task.source, [])) for ex in examples]

    def mean_f1(threshold: float) -> float:
        trial = dataclasses.replace(task, thresholds=(threshold,))
        return metrics.mean_char_f1(predicted_offsets(trial, decoding, examples, merged), golds)

    return max(grid, key=lambda t: (mean_f1(t), -abs(t - 0.5)))


def _typed(tag: str) -> str:
    """seqeval needs typed IOB2 tags: B → B-SPAN."""
    return tag if tag == "O" else f"{tag}-SPAN"


def format_table(scores: dict[str, Any]) -> str:
    """A readable two-column table of metric → value."""
    width = max((len(k) for k in scores), default=6)
    lines = [f"{'metric':<{width}}  value", f"{'-' * width}  ------"]
    for key in sorted(scores):
        value = scores[key]
        lines.append(f"{key:<{width}}  {value:.4f}" if isinstance(value, float) else f"{key:<{width}}  {value}")
    return "\n".join(lines)
