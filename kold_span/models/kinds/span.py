"""The span kind: a BIO tag per token of one span type, decoded into character spans.

Targets are the gold spans as tags of each window's tokens (`kold_span.text.align.spans_to_tags`);
the head scores every token (O, B, I) with cross-entropy; a token scored by several windows takes
the window where it sits farthest from an edge; decoding turns tags back into end-exclusive
character spans, snapped and trimmed as `align` says, each with the mean P(B) + P(I) of its tokens.
Scores are character F1 (mean, snapped, micro) and the seqeval F1 of the tags; the P(B) + P(I)
threshold is tuned for the best mean character F1.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from kold_span import metrics
from kold_span.config.choices import SnapMode
from kold_span.data.example import Example, spans_to_offsets
from kold_span.models.kinds.base import Decoding, MergedExample
from kold_span.models.tasks import THRESHOLD_GRID
from kold_span.models.temperature import temper
from kold_span.text.align import IGNORE_INDEX, OverlapIndex, spans_to_tags, tags_to_spans

if TYPE_CHECKING:
    import torch

    from kold_span.models.tasks import Task

SPAN_TAGS = ["O", "B", "I"]


class SpanKind:
    """`Kind` of span tasks (see the module docstring)."""

    token_level = True

    def labels(self, task: "Task", configured: Sequence[str], examples: Sequence[Example]) -> tuple[str, ...]:
        return ()  # the tags are fixed: SPAN_TAGS

    def class_weights(self, task: "Task", examples: Sequence[Example]) -> tuple[float, ...]:
        return ()

    def num_outputs(self, task: "Task") -> int:
        return len(SPAN_TAGS)

    def threshold_count(self, task: "Task") -> int:
        return 1  # on P(B) + P(I)

    def add_targets(self, task: "Task", example: Example, windows: Sequence[dict[str, Any]]) -> None:
        for window in windows:
            window[f"tags_{task.name}"] = span_targets(task, example, window)

    def collate(self, task: "Task", windows: Sequence[dict[str, Any]]) -> dict[str, "torch.Tensor"]:
        import torch

        key = f"tags_{task.name}"
        if key not in windows[0]:
            return {}
        length = max(len(w["input_ids"]) for w in windows)
        return {key: torch.tensor([list(w[key]) + [IGNORE_INDEX] * (length - len(w[key])) for w in windows],
                                  dtype=torch.long)}

    def loss(self, task: "Task", logits: "torch.Tensor", batch: dict[str, "torch.Tensor"]) -> "torch.Tensor":
        from torch.nn import functional as F

        target = batch[f"tags_{task.name}"]
        if not (target != IGNORE_INDEX).any():
            return logits.sum() * 0.0
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=IGNORE_INDEX)

    def probabilities(self, task: "Task", logits: "torch.Tensor") -> "torch.Tensor":
        return logits.softmax(-1)

    def merge(self, task: "Task", window_probs: Sequence[dict[str, np.ndarray]],
              picks: Sequence[tuple[int, int]], merged: "MergedExample") -> None:
        rows = [window_probs[w][task.name][i] for w, i in picks]
        merged.token_probs[task.name] = np.array(rows).reshape(len(picks), len(SPAN_TAGS))

    def average(self, task: "Task", members: Sequence["MergedExample"], merged: "MergedExample") -> None:
        merged.token_probs[task.name] = np.mean([m.token_probs[task.name] for m in members], axis=0)

    def calibrate(self, task: "Task", merged: "MergedExample") -> None:
        probs = merged.token_probs[task.name]
        if len(probs):
            merged.token_probs[task.name] = temper(probs, task.temperature, exclusive=True)

    def outcomes(self, task: "Task", example: Example, merged: "MergedExample") -> tuple[np.ndarray, np.ndarray]:
        probs = np.asarray(merged.token_probs[task.name], dtype=np.float64).reshape(-1, len(SPAN_TAGS))
        if not len(probs):
            return probs, np.zeros((0, len(SPAN_TAGS)))
        # a text without gold spans of the type is all O, as `evaluation.task_scores` scores it
        tags = spans_to_tags(example.spans.get(task.source, []), merged.token_offsets, text=example.text)
        return probs, np.eye(len(SPAN_TAGS))[[SPAN_TAGS.index((t or "O")[0]) for t in tags]].reshape(-1, 3)

    def decision_score(self, task: "Task", merged: "MergedExample", text: str, decoding: Decoding,
                       label: Optional[str]) -> Optional[float]:
        return span_decision_score(task, merged, text, decoding)

    def exclusive(self, task: "Task") -> bool:
        return True

    def implied_thresholds(self, task: "Task") -> Optional[tuple[float, ...]]:
        return None  # the most probable tag is no threshold on P(B) + P(I)

    def add_prediction(self, task: "Task", merged: "MergedExample", text: str, decoding: Decoding,
                       prediction: dict[str, Any]) -> None:
        prediction["spans"] += task_spans(task, merged, text, decoding)

    def scores(self, task: "Task", decoding: Decoding, examples: Sequence[Example],
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

    def tune_thresholds(self, task: "Task", decoding: Decoding, examples: Sequence[Example],
                        merged: Sequence[MergedExample]) -> tuple[tuple[float, ...], dict[str, float]]:
        threshold = span_threshold(task, decoding, examples, merged)
        return (threshold,), {"inside": threshold}


def span_targets(task: "Task", example: Example, window: dict[str, Any]) -> list[int]:
    """BIO tag ids of one span task for one window (ignore index outside the text)."""
    tags = spans_to_tags(example.spans.get(task.source, []), [tuple(o) for o in window["offsets"]],
                         segment_mask=[bool(m) for m in window["text_mask"]], text=example.text)
    return [IGNORE_INDEX if t is None else SPAN_TAGS.index(t[0]) for t in tags]


def gate_open(task: "Task", tasks: Sequence["Task"], merged: "MergedExample") -> bool:
    """Whether a span task's gate (a true/false task) predicts true; open without a gate."""
    if not task.gate:
        return True
    gate = next(t for t in tasks if t.name == task.gate)
    return gate.labels[int(np.argmax(merged.sequence_probs[gate.name]))] == "true"


def span_tags(task: "Task", probs: np.ndarray) -> list[str]:
    """One BIO tag per token from a span task's [tokens, 3] probabilities (O, B, I).

    Without a threshold each token takes its most probable tag. With one (`task.thresholds`,
    fixed or tuned on dev), a token is inside a span when P(B) + P(I) reaches it, and is B or I
    by whichever of the two is likelier: a token at O 0.4, B 0.35, I 0.25 is O by the most
    probable tag but inside at threshold 0.5.

    Example:
        >>> from kold_span.models.tasks import Task
        >>> probs = np.array([[0.4, 0.35, 0.25], [0.7, 0.1, 0.2]])
        >>> t = Task("s", "span", "OFF")
        >>> span_tags(t, probs), span_tags(Task("s", "span", "OFF", thresholds=(0.5,)), probs)
        (['O', 'O'], ['B', 'O'])
    """
    if not task.thresholds:
        return [SPAN_TAGS[int(i)] for i in probs.argmax(-1)]
    threshold = task.thresholds[0]
    # in float64 whatever the network gave: P(B) + P(I) meets a threshold as the JSON number it is
    # (`span_decision_score` names the highest one, and the service's page compares it as a double)
    return ["O" if b + i < threshold else ("B" if b >= i else "I") for _, b, i in np.asarray(probs, dtype=np.float64)]


def task_spans(task: "Task", merged: "MergedExample", text: str,
               decoding: Decoding = Decoding(tasks=())) -> list[dict[str, Any]]:
    """Character spans of one span task with a confidence score each (none when gated off by `decoding.tasks`)."""
    probs = merged.token_probs[task.name]
    if not len(probs) or (task.gate and not gate_open(task, decoding.tasks, merged)):
        return []
    spans = tags_to_spans(span_tags(task, probs), merged.token_offsets, text, snap=decoding.snap, trim=decoding.trim)
    inside = 1.0 - probs[:, 0]
    out = []
    for (start, end), tokens in zip(spans, OverlapIndex(merged.token_offsets).overlapping_many(spans)):
        scores = inside[tokens]
        out.append({"type": task.source, "start": start, "end": end, "text": text[start:end],
                    "score": round(float(scores.mean()) if scores.size else 0.0, 6)})
    return out


def span_decision_score(task: "Task", merged: "MergedExample", text: str,
                        decoding: Decoding = Decoding(tasks=())) -> Optional[float]:
    """The highest P(B) + P(I) threshold at which a span task decodes a span on this text (as `task_spans` decodes,
    gate, snapping and trimming included); None when none does.

    The text is flagged at a threshold t (a span decoded at t) exactly when this score reaches t: a lower
    threshold only adds tokens to spans (a property test checks it), so the thresholds that decode a span
    are those up to the highest token score that does: the top score, or one found by bisection.

    Example:
        >>> from kold_span.models.tasks import Task
        >>> merged = MergedExample(token_offsets=[(0, 2), (2, 3), (3, 5)],
        ...                        token_probs={"s": np.array([[0.6, 0.3, 0.1], [0.1, 0.5, 0.4], [0.2, 0.3, 0.5]])})
        >>> span_decision_score(Task("s", "span", "OFF"), merged, "너는 바보")  # the space alone (0.9) is trimmed
        0.8
    """
    probs = merged.token_probs[task.name]
    if not len(probs) or (task.gate and not gate_open(task, decoding.tasks, merged)):
        return None
    scores = sorted({float(b + i) for _, b, i in np.asarray(probs, dtype=np.float64)})

    def decodes(k: int) -> bool:
        return bool(task_spans(dataclasses.replace(task, thresholds=(scores[k],), gate=None), merged, text, decoding))

    if decodes(len(scores) - 1):  # the usual case, one decoding: the likeliest token makes a span by itself
        return scores[-1]
    if not decodes(0):
        return None
    low, high = 0, len(scores) - 2  # decodes(low) holds; find the highest k that decodes
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if decodes(middle) else (low, middle - 1)
    return scores[low]


def predicted_offsets(task: "Task", decoding: Decoding, examples: Sequence[Example],
                      merged: Sequence[MergedExample]) -> list[set[int]]:
    """The character offsets of each example's predicted spans of one span task."""
    return [spans_to_offsets((s["start"], s["end"]) for s in task_spans(task, m, ex.text, decoding))
            for ex, m in zip(examples, merged)]


def span_threshold(task: "Task", decoding: Decoding, examples: Sequence[Example], merged: Sequence[MergedExample],
                   grid: tuple[float, ...] = THRESHOLD_GRID) -> float:
    """The P(B) + P(I) threshold of a span task that maximises mean char-F1 on held-out examples.

    Spans are decoded as `Predictor` outputs them (`decoding`: snapping, trimming, the task's gate);
    ties go to the threshold nearest 0.5 (`metrics.best_on_grid`).
    """
    golds = [spans_to_offsets(ex.spans.get(task.source, [])) for ex in examples]

    def mean_f1(threshold: float) -> float:
        trial = dataclasses.replace(task, thresholds=(threshold,))
        return metrics.mean_char_f1(predicted_offsets(trial, decoding, examples, merged), golds)

    return metrics.best_on_grid(grid, mean_f1)


def _typed(tag: str) -> str:
    """seqeval needs typed IOB2 tags: B → B-SPAN."""
    return tag if tag == "O" else f"{tag}-SPAN"
