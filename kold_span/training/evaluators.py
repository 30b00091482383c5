"""Scores of a run: dev outputs after each epoch (`dev_evaluator`), a predictor on gold examples, per trait."""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

import numpy as np

from kold_span.data.example import Example
from kold_span.data.perspectives import trait_phrase
from kold_span.evaluation.task_scores import score
from kold_span.models.decoding import merge_windows
from kold_span.models.kinds import Decoding


def dev_evaluator(decoding: Decoding, examples: list[Example], meta: list[dict[str, Any]]):
    """A function scoring dev outputs (window index → task probabilities) as the module logs them after an epoch.

    Example:
        >>> from kold_span.models.tasks import Task
        >>> off = Task("OFF", "sequence", "OFF", labels=("false", "true"))
        >>> gold = [Example(id="1", text="바보냐", labels={"OFF": True}),
        ...         Example(id="2", text="좋아", labels={"OFF": False})]
        >>> meta = [{"example_index": i, "offsets": [(0, 0), (0, 2), (0, 0)], "text_mask": [0, 1, 0]} for i in (0, 1)]
        >>> evaluate = dev_evaluator(Decoding([off], "none", True), gold, meta)
        >>> evaluate({0: {"OFF": np.array([0.2, 0.8])}, 1: {"OFF": np.array([0.4, 0.6])}})["OFF/accuracy"]
        0.5
    """
    owners: dict[int, list[int]] = defaultdict(list)
    for w, m in enumerate(meta):
        owners[m["example_index"]].append(w)

    def evaluate(outputs: dict[int, dict[str, np.ndarray]]) -> dict[str, float]:
        merged = [merge_windows(decoding.tasks, [meta[w] for w in owners[i]], [outputs[w] for w in owners[i]])
                  for i in range(len(examples))]
        return score(decoding, examples, merged)
    return evaluate


def evaluate_predictor(predictor, examples: list[Example], batch_size: int = 64) -> dict[str, float]:
    """Score a predictor on gold examples (all tasks)."""
    merged = predictor.merged_outputs([e.text for e in examples], [e.context for e in examples], batch_size)
    return score(predictor.decoding, examples, merged)


def scores_by_trait(predictor, examples: list[Example], traits: Sequence[str],
                    batch_size: int = 64) -> dict[str, dict[str, dict[str, float]]]:
    """PERSEID-style breakdown: the test scores of each annotator group, per trait."""
    merged = predictor.merged_outputs([e.text for e in examples], [e.context for e in examples], batch_size)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for trait in traits:
        groups: dict[str, list[int]] = defaultdict(list)
        for i, ex in enumerate(examples):
            groups[str(trait_phrase(trait, ex.meta.get("traits", {}).get(trait)))].append(i)
        out[trait] = {value: {"n": len(idx), **score(predictor.decoding, [examples[i] for i in idx],
                                                     [merged[i] for i in idx])}
                      for value, idx in sorted(groups.items())}
    return out
