"""Model outputs per window → per-example probabilities → labels and character spans.

The part of each step that depends on a task's kind is the kind's (`kold_span.models.kinds`):
`merge_windows` finds which window scores each token, and each kind merges its probabilities;
`prediction` collects each kind's part of an example's prediction.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from kold_span.models.kinds import Decoding, MergedExample, kind_of
from kold_span.models.tasks import Task


def merge_windows(tasks: Sequence[Task], windows: Sequence[dict[str, Any]],
                  probs: Sequence[dict[str, np.ndarray]]) -> MergedExample:
    """One example's probabilities from those of its windows.

    Each token is taken from the window where it sits farthest from an edge (most context on both
    sides); each task's kind merges its probabilities (a sequence task: `kinds.sequence.windows_merged`, the
    surest window for a true/false or multi-label task, else the mean).

    Example:
        >>> off = Task("OFF", "sequence", "OFF", labels=("false", "true"))
        >>> first = {"offsets": [(0, 0), (0, 2), (3, 6), (0, 0)], "text_mask": [0, 1, 1, 0]}
        >>> second = {"offsets": [(0, 0), (3, 6), (7, 9), (0, 0)], "text_mask": [0, 1, 1, 0]}
        >>> merged = merge_windows([off], [first, second], [{"OFF": np.array([0.2, 0.8])},
        ...                                                 {"OFF": np.array([0.4, 0.6])}])
        >>> merged.token_offsets, merged.sequence_probs["OFF"].round(2).tolist()  # P(true): the surer window's
        ([(0, 2), (3, 6), (7, 9)], [0.2, 0.8])
    """
    merged = MergedExample()
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
    picks = [best[k][1:] for k in order]
    for task in tasks:
        kind_of(task).merge(task, probs, picks, merged)
    return merged


def prediction(decoding: Decoding, merged: MergedExample, text: str) -> dict[str, Any]:
    """One example's labels with probabilities, and its spans `{type, start, end, text, score}` in text order.

    Example:
        >>> span = Task("OFF_span", "span", "OFF")
        >>> merged = MergedExample(token_offsets=[(0, 2), (3, 6), (7, 9)],
        ...                        token_probs={"OFF_span": np.array([[0.9, 0.05, 0.05], [0.1, 0.8, 0.1],
        ...                                                           [0.3, 0.1, 0.6]])})
        >>> prediction(Decoding([span]), merged, "너는 바보다 정말")["spans"]
        [{'type': 'OFF', 'start': 3, 'end': 9, 'text': '바보다 정말', 'score': 0.8}]
    """
    out: dict[str, Any] = {"labels": {}, "spans": []}
    for task in decoding.tasks:
        kind_of(task).add_prediction(task, merged, text, decoding, out)
    out["spans"].sort(key=lambda s: (s["start"], s["type"]))
    deciding = [task for task in decoding.tasks if task.decision]
    scores = {task.name: kind_of(task).decision_score(task, merged, text, decoding, task.decision.get("label"))
              for task in deciding}
    if scores:  # only a model with a decision policy states actions: the others' rows stay as they were
        out["actions"] = {task.name: action(task.decision, scores[task.name]) for task in deciding}
        # unrounded: the service's page cuts them at other thresholds and must find the actions above at these
        out["action_scores"] = scores
    return out


def action(policy: dict[str, Any], score: Optional[float]) -> str:
    """What a decision policy does with a text of this decision score (`Kind.decision_score`): remove when it
    reaches the `remove` threshold, else review when it reaches the `review` threshold, else allow (a band the
    policy lacks never applies, nor does any to a text without a score).

    Example:
        >>> policy = {"label": "true", "remove": {"threshold": 0.9}, "review": {"threshold": 0.5}}
        >>> [action(policy, score) for score in (0.95, 0.9, 0.6, 0.2, None)]
        ['remove', 'remove', 'review', 'allow', 'allow']
    """
    for band in ("remove", "review"):
        chosen = policy.get(band)
        if chosen and score is not None and score >= chosen["threshold"]:
            return band
    return "allow"
