"""Model outputs per window → per-example labels and character spans."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from kold_span.models.tasks import SPAN_TAGS, Task
from kold_span.text.align import OverlapIndex, tags_to_spans


@dataclass
class MergedExample:
    """One example's outputs with overlapping windows merged."""

    sequence_probs: dict[str, np.ndarray] = field(default_factory=dict)
    token_offsets: list[tuple[int, int]] = field(default_factory=list)
    token_probs: dict[str, np.ndarray] = field(default_factory=dict)  # task → [tokens, 3]


def merge_windows(tasks: Sequence[Task], windows: Sequence[dict[str, Any]],
                  probs: Sequence[dict[str, np.ndarray]]) -> MergedExample:
    """Average sequence probabilities over windows; take each token from the window
    where it sits farthest from an edge (most context on both sides)."""
    merged = MergedExample()
    for task in tasks:
        if task.kind == "sequence":
            merged.sequence_probs[task.name] = np.mean([p[task.name] for p in probs], axis=0)
    best: dict[tuple[int, int], tuple[int, int, int]] = {}  # offset → (distance, window, position)
    for w, window in enumerate(windows):
        positions = [i for i, m in enumerate(window["text_mask"]) if m]
        for rank, i in enumerate(positions):
            key = tuple(window["offsets"][i])
            distance = min(rank, len(positions) - 1 - rank)
            if key not in best or distance > best[key][0]:
                best[key] = (distance, w, i)
    order = sorted(best)
    merged.token_offsets = [tuple(k) for k in order]
    for task in tasks:
        if task.kind == "span":
            rows = [probs[best[k][1]][task.name][best[k][2]] for k in order]
            merged.token_probs[task.name] = np.array(rows).reshape(len(order), len(SPAN_TAGS))
    return merged


def sequence_prediction(task: Task, probs: np.ndarray) -> dict[str, Any]:
    """{label, probs} for a sequence task; multi-label gives every label at or over its threshold."""
    named = {label: round(float(p), 6) for label, p in zip(task.labels, probs)}
    if task.problem == "multi":
        label: Any = [task.decode_label(lab) for i, (lab, p) in enumerate(zip(task.labels, probs))
                      if p >= task.threshold(i)]
    else:
        label = task.decode_label(task.labels[int(np.argmax(probs))])
    return {"label": label, "probs": named}


def gate_open(task: Task, tasks: Sequence[Task], merged: MergedExample) -> bool:
    """Whether a span task's gate (a true/false task) predicts true; open without a gate."""
    if not task.gate:
        return True
    gate = next(t for t in tasks if t.name == task.gate)
    return gate.labels[int(np.argmax(merged.sequence_probs[gate.name]))] == "true"


def span_tags(task: Task, probs: np.ndarray) -> list[str]:
    """One BIO tag per token from a span task's [tokens, 3] probabilities (O, B, I).

    Without a threshold each token takes its most probable tag. With one (`task.thresholds`,
    fixed or tuned on dev), a token is inside a span when P(B) + P(I) reaches it, and is B or I
    by whichever of the two is likelier: a token at O 0.4, B 0.35, I 0.25 is O by the most
    probable tag but inside at threshold 0.5.

    Example:
        >>> probs = np.array([[0.4, 0.35, 0.25], [0.7, 0.1, 0.2]])
        >>> t = Task("s", "span", "OFF")
        >>> span_tags(t, probs), span_tags(Task("s", "span", "OFF", thresholds=(0.5,)), probs)
        (['O', 'O'], ['B', 'O'])
    """
    if not task.thresholds:
        return [SPAN_TAGS[int(i)] for i in probs.argmax(-1)]
    threshold = task.thresholds[0]
    return ["O" if b + i < threshold else ("B" if b >= i else "I") for _, b, i in probs]


def task_spans(task: Task, merged: MergedExample, text: str, snap: str = "none",
               trim: bool = True, tasks: Sequence[Task] = ()) -> list[dict[str, Any]]:
    """Character spans of one span task with a confidence score each (none when gated off)."""
    probs = merged.token_probs[task.name]
    if not len(probs) or (task.gate and not gate_open(task, tasks, merged)):
        return []
    spans = tags_to_spans(span_tags(task, probs), merged.token_offsets, text, snap=snap, trim=trim)
    inside = 1.0 - probs[:, 0]
    index = OverlapIndex(merged.token_offsets)
    out = []
    for start, end in spans:
        scores = [inside[i] for i in index.overlapping(start, end)]
        out.append({"type": task.source, "start": start, "end": end, "text": text[start:end],
                    "score": round(float(np.mean(scores)) if scores else 0.0, 6)})
    return out
