"""Scores of merged model outputs against gold examples, per task."""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from kold_span.data.example import Example, label_str, spans_to_offsets
from kold_span.evaluation import metrics
from kold_span.models.decoding import (MergedExample, sequence_prediction, span_tags, task_spans)
from kold_span.models.tasks import THRESHOLD_GRID, Task, soft_distribution
from kold_span.text.align import spans_to_tags


def score(tasks: Sequence[Task], examples: Sequence[Example], merged: Sequence[MergedExample],
          snap: str = "morpheme", trim: bool = True) -> dict[str, float]:
    """Every task's metrics as a flat dict `task/metric` → value.

    Example:
        >>> off = Task("OFF", "sequence", "OFF", labels=("false", "true"))
        >>> gold = [Example(id="1", text="바보냐", labels={"OFF": True}),
        ...         Example(id="2", text="좋네", labels={"OFF": False})]
        >>> merged = [MergedExample({"OFF": np.array([0.2, 0.8])}), MergedExample({"OFF": np.array([0.3, 0.7])})]
        >>> scores = score([off], gold, merged)  # both predicted true
        >>> scores["OFF/accuracy"], scores["OFF/precision"], scores["OFF/recall"]
        (0.5, 0.5, 1.0)
    """
    out: dict[str, float] = {}
    for task in tasks:
        if task.kind == "span":
            out.update(_span_scores(task, tasks, examples, merged, snap, trim))
        else:
            out.update(_sequence_scores(task, examples, merged))
    return out


def _sequence_scores(task: Task, examples: Sequence[Example], merged: Sequence[MergedExample]) -> dict[str, float]:
    pairs = [(ex, m.sequence_probs[task.name]) for ex, m in zip(examples, merged)]
    if task.problem == "soft":
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
    labelled = [(ex.labels[task.source], p) for ex, p in pairs if ex.labels.get(task.source) is not None]
    if not labelled:
        return {}
    if task.problem == "multi":
        y_true = [[label_str(v) for v in gold] for gold, _ in labelled]
        preds = [sequence_prediction(task, p) for _, p in labelled]
        y_pred = [[label_str(v) for v in p["label"]] for p in preds]
        scores = [p["probs"] for p in preds]
        result = metrics.multilabel_scores(y_true, y_pred, labels=list(task.labels), scores=scores)
        return {f"{task.name}/{k}": float(v) for k, v in result.items() if isinstance(v, (int, float))}
    y_true = [label_str(gold) for gold, _ in labelled]
    y_pred = [task.labels[int(np.argmax(p))] for _, p in labelled]
    report = metrics.classification_report_dict(y_true, y_pred, labels=list(task.labels))
    out = {f"{task.name}/accuracy": report["accuracy"], f"{task.name}/macro_f1": report["macro_f1"],
           f"{task.name}/weighted_f1": report["weighted_f1"],
           f"{task.name}/balanced_accuracy": report["balanced_accuracy"]}
    if task.is_boolean:
        prf = metrics.binary_prf(y_true, y_pred, positive="true")
        out.update({f"{task.name}/precision": prf["precision"], f"{task.name}/recall": prf["recall"],
                    f"{task.name}/f1": prf["f1"]})
    return out


def _span_scores(task: Task, tasks: Sequence[Task], examples: Sequence[Example],
                 merged: Sequence[MergedExample], snap: str, trim: bool) -> dict[str, float]:
    golds = [spans_to_offsets(ex.spans.get(task.source, [])) for ex in examples]
    raw = predicted_offsets(task, tasks, examples, merged, "none", trim)
    out = {f"{task.name}/char_f1": metrics.mean_char_f1(raw, golds)}
    if snap != "none":
        out[f"{task.name}/char_f1_{snap}"] = metrics.mean_char_f1(
            predicted_offsets(task, tasks, examples, merged, snap, trim), golds)
    micro = metrics.micro_char_prf(raw, golds)
    out[f"{task.name}/char_micro_f1"] = micro["f1"]
    true_tags, pred_tags = [], []
    for ex, m in zip(examples, merged):
        gold = spans_to_tags(ex.spans.get(task.source, []), m.token_offsets, text=ex.text)
        true_tags.append([_typed(t or "O") for t in gold])
        pred_tags.append([_typed(t) for t in span_tags(task, m.token_probs[task.name])]
                         if len(m.token_offsets) else [])
    if any(true_tags):
        prf = metrics.seqeval_prf(true_tags, pred_tags)
        out[f"{task.name}/seqeval_f1"] = prf["f1"]
    return out


def predicted_offsets(task: Task, tasks: Sequence[Task], examples: Sequence[Example],
                      merged: Sequence[MergedExample], snap: str, trim: bool) -> list[set[int]]:
    """The character offsets of each example's predicted spans of one span task."""
    return [spans_to_offsets((s["start"], s["end"]) for s in task_spans(task, m, ex.text, snap, trim, tasks))
            for ex, m in zip(examples, merged)]


def tune_span_threshold(task: Task, tasks: Sequence[Task], examples: Sequence[Example],
                        merged: Sequence[MergedExample], snap: str = "none", trim: bool = True,
                        grid: tuple[float, ...] = THRESHOLD_GRID) -> float:
    """The P(B) + P(I) threshold of a span task that maximises mean char-F1 on held-out examples.

    Spans are decoded as `Predictor` outputs them (`snap`, `trim`, the task's gate); ties go to
    the threshold nearest 0.5.
    """
    golds = [spans_to_offsets(ex.spans.get(task.source, [])) for ex in examples]

    def mean_f1(threshold: float) -> float:
        trial = dataclasses.replace(task, thresholds=(threshold,))
        return metrics.mean_char_f1(predicted_offsets(trial, tasks, examples, merged, snap, trim), golds)

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
