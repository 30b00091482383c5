"""A sequence task's label problem: what its target, loss, probabilities and decoded label are.

One class per `Problem` (single, multi, soft), registered in `PROBLEMS`; `label_problem(problem)`
gives the one to use. The sequence kind (`kold_span.models.kinds.sequence`), the n-gram model and
the label baselines all go through it instead of testing the problem's name.
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Collection, Optional, Protocol, Sequence, Union

import numpy as np

from kold_span import metrics
from kold_span.config.choices import Problem
from kold_span.data.example import Example, label_set, label_str
from kold_span.errors import ConfigError, DataError
from kold_span.metrics import best_on_grid
from kold_span.models.tasks import THRESHOLD_GRID
from kold_span.text.align import IGNORE_INDEX

if TYPE_CHECKING:
    import torch

    from kold_span.models.tasks import Task

Probs = dict[str, float]
Prediction = Union[str, list[str]]
Pairs = Sequence[tuple[Example, np.ndarray]]  # each example with its probabilities of one task


class LabelProblem(Protocol):
    """What one label problem does; `PROBLEMS` holds one per `Problem`."""

    problem: Problem
    exclusive: bool  # the labels' probabilities are one softmax (one label, or a distribution), not a sigmoid each

    def vocabulary(self, examples: Sequence[Example], source: str) -> tuple[str, ...]:
        """The sorted label names of `source` seen in the examples."""

    def class_weights(self, examples: Sequence[Example], source: str, labels: tuple[str, ...]) -> tuple[float, ...]:
        """The loss weights `class_weight: balanced` asks for, one per label."""

    def target(self, task: "Task", example: Example) -> Any:
        """The example's training target; the ignored value when it has no label."""

    def collate(self, task: "Task", targets: Sequence[Any]) -> dict[str, "torch.Tensor"]:
        """The targets of a batch as tensors (`target_<task>`, and `mask_<task>` where some may be missing)."""

    def loss(self, task: "Task", logits: "torch.Tensor", batch: dict[str, "torch.Tensor"]) -> "torch.Tensor":
        """The task's loss over the batch's labelled examples (0 with a gradient when none is)."""

    def probabilities(self, logits: "torch.Tensor") -> "torch.Tensor":
        """Logits → probabilities."""

    def decide(self, task: "Task", probs: np.ndarray) -> Any:
        """The predicted label value(s) users see, from one example's probabilities in label order."""

    def gold_label(self, value: Any) -> Prediction:
        """A gold label value as vocabulary strings: one string, or a sorted list."""

    def decode_probs(self, probs: Probs, threshold: float = 0.5) -> Prediction:
        """``{label: probability}`` → the predicted label string(s), as `gold_label` writes them."""

    def scores(self, task: "Task", pairs: Pairs) -> dict[str, float]:
        """The task's metrics on gold examples as `task/metric` → value."""


class SingleLabel:
    """One label per example: cross-entropy over the labels, softmax, the most probable label."""

    problem = Problem.SINGLE
    exclusive = True

    def vocabulary(self, examples: Sequence[Example], source: str) -> tuple[str, ...]:
        return value_vocabulary(examples, source)

    def class_weights(self, examples: Sequence[Example], source: str, labels: tuple[str, ...]) -> tuple[float, ...]:
        return balanced_weights(examples, source, labels)

    def target(self, task: "Task", example: Example) -> int:
        value = example.labels.get(task.source)
        if value is None:
            return IGNORE_INDEX
        name = label_str(value)
        if name not in task.labels:
            raise DataError(f"example {example.id!r}: label {name!r} of task {task.name!r} was not seen in "
                             f"training; known labels: {list(task.labels)}")
        return task.labels.index(name)

    def collate(self, task: "Task", targets: Sequence[Any]) -> dict[str, "torch.Tensor"]:
        import torch

        return {f"target_{task.name}": torch.tensor(list(targets), dtype=torch.long)}

    def loss(self, task: "Task", logits: "torch.Tensor", batch: dict[str, "torch.Tensor"]) -> "torch.Tensor":
        from torch.nn import functional as F

        target = batch[f"target_{task.name}"]
        if not (target != IGNORE_INDEX).any():
            return logits.sum() * 0.0
        weight = logits.new_tensor(task.class_weights) if task.class_weights else None
        return F.cross_entropy(logits, target, weight=weight, ignore_index=IGNORE_INDEX)

    def probabilities(self, logits: "torch.Tensor") -> "torch.Tensor":
        return logits.softmax(-1)

    def decide(self, task: "Task", probs: np.ndarray) -> Any:
        return task.decode_label(task.labels[int(np.argmax(probs))])

    def gold_label(self, value: Any) -> Prediction:
        return label_str(value)

    def decode_probs(self, probs: Probs, threshold: float = 0.5) -> Prediction:
        """The most probable label; ties go to the smallest name (`threshold` is not used)."""
        return min(probs, key=lambda name: (-probs[name], name))

    def scores(self, task: "Task", pairs: Pairs) -> dict[str, float]:
        """accuracy, macro/weighted F1, balanced accuracy; precision, recall, F1 of "true" for a true/false task."""
        labelled = labelled_pairs(task, pairs)
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


class MultiLabel:
    """Any set of labels per example: binary cross-entropy per label, sigmoid, every label at its threshold."""

    problem = Problem.MULTI
    exclusive = False
    vocabulary = SingleLabel.vocabulary

    def class_weights(self, examples: Sequence[Example], source: str, labels: tuple[str, ...]) -> tuple[float, ...]:
        return positive_weights(examples, source, labels)

    def target(self, task: "Task", example: Example) -> list[float]:
        value = example.labels.get(task.source)
        if value is None:
            return []
        names = label_set(value)
        return [1.0 if label in names else 0.0 for label in task.labels]

    def collate(self, task: "Task", targets: Sequence[Any]) -> dict[str, "torch.Tensor"]:
        return vector_targets(task, targets)

    def loss(self, task: "Task", logits: "torch.Tensor", batch: dict[str, "torch.Tensor"]) -> "torch.Tensor":
        from torch.nn import functional as F

        pos_weight = logits.new_tensor(task.class_weights) if task.class_weights else None
        return masked_mean(task, logits, batch, lambda target: F.binary_cross_entropy_with_logits(
            logits, target, reduction="none", pos_weight=pos_weight).mean(-1))

    def probabilities(self, logits: "torch.Tensor") -> "torch.Tensor":
        import torch

        return torch.sigmoid(logits)

    def decide(self, task: "Task", probs: np.ndarray) -> Any:
        return [task.decode_label(label) for i, (label, p) in enumerate(zip(task.labels, probs))
                if p >= task.threshold(i)]

    def gold_label(self, value: Any) -> Prediction:
        return sorted(label_set(value))

    def decode_probs(self, probs: Probs, threshold: float = 0.5) -> Prediction:
        """The labels whose probability reaches `threshold`, sorted."""
        return sorted(name for name, p in probs.items() if p >= threshold)

    def scores(self, task: "Task", pairs: Pairs) -> dict[str, float]:
        """micro/macro F1 of the labels decided at the task's thresholds, and label-ranking average precision."""
        labelled = labelled_pairs(task, pairs)
        if not labelled:
            return {}
        y_true = [[label_str(v) for v in gold] for gold, _ in labelled]
        preds = [sequence_prediction(task, p) for _, p in labelled]
        y_pred = [[label_str(v) for v in p["label"]] for p in preds]
        result = metrics.multilabel_scores(y_true, y_pred, labels=list(task.labels), scores=[p["probs"] for p in preds])
        return {f"{task.name}/{k}": float(v) for k, v in result.items() if isinstance(v, (int, float))}


class SoftLabel:
    """A distribution over the labels (annotators' vote shares): soft cross-entropy, softmax, the top label."""

    problem = Problem.SOFT
    exclusive = True

    def vocabulary(self, examples: Sequence[Example], source: str) -> tuple[str, ...]:
        names: set[str] = set()
        for ex in examples:
            names.update((soft_distribution(ex, source) or {}).keys())
        return tuple(sorted(names))

    def class_weights(self, examples: Sequence[Example], source: str, labels: tuple[str, ...]) -> tuple[float, ...]:
        raise ConfigError("class weights need label values; a soft task's gold is a distribution of votes")

    def target(self, task: "Task", example: Example) -> list[float]:
        dist = soft_distribution(example, task.source)
        return [] if dist is None else [dist.get(label, 0.0) for label in task.labels]

    def collate(self, task: "Task", targets: Sequence[Any]) -> dict[str, "torch.Tensor"]:
        return vector_targets(task, targets)

    def loss(self, task: "Task", logits: "torch.Tensor", batch: dict[str, "torch.Tensor"]) -> "torch.Tensor":
        from torch.nn import functional as F

        return masked_mean(task, logits, batch, lambda target: -(target * F.log_softmax(logits, dim=-1)).sum(-1))

    probabilities, decide = SingleLabel.probabilities, SingleLabel.decide  # softmax, the top label

    def gold_label(self, value: Any) -> Prediction:
        raise ValueError("a soft task's gold is a distribution of votes, not a label value")

    def decode_probs(self, probs: Probs, threshold: float = 0.5) -> Prediction:
        raise ValueError("a soft task is decoded from its label array (`decide`), not from label strings")

    def scores(self, task: "Task", pairs: Pairs) -> dict[str, float]:
        """Cross-entropy and Manhattan distance to the vote distribution; macro F1 and accuracy of the top labels."""
        items = [(gold, p) for gold, p in ((soft_distribution(ex, task.source), p) for ex, p in pairs) if gold]
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


PROBLEMS: dict[Problem, LabelProblem] = {p.problem: p for p in (SingleLabel(), MultiLabel(), SoftLabel())}


def label_problem(problem: Problem) -> LabelProblem:
    """The behaviour of a `Problem` (or its name).

    Example:
        >>> label_problem("multi").decode_probs({"a": 0.7, "b": 0.2, "c": 0.5})
        ['a', 'c']
    """
    return PROBLEMS[Problem.parse(problem, "problem")]


def sequence_prediction(task: "Task", probs: np.ndarray) -> dict[str, Any]:
    """{label, probs} for a sequence task; multi-label gives every label at or over its threshold.

    Example:
        >>> from kold_span.models.tasks import Task
        >>> sequence_prediction(Task("g", "sequence", "g", problem="multi", labels=("a", "b")), np.array([0.7, 0.2]))
        {'label': ['a'], 'probs': {'a': 0.7, 'b': 0.2}}
    """
    named = {label: round(float(p), 6) for label, p in zip(task.labels, probs)}
    return {"label": label_problem(task.problem).decide(task, probs), "probs": named}


def labelled_pairs(task: "Task", pairs: Pairs) -> list[tuple[Any, np.ndarray]]:
    """The gold label value of each example that has one, with its probabilities."""
    return [(ex.labels[task.source], p) for ex, p in pairs if ex.labels.get(task.source) is not None]


def label_thresholds(task: "Task", golds: Sequence[Collection[str]], probs: Sequence[Any],
                     grid: tuple[float, ...] = THRESHOLD_GRID) -> tuple[float, ...]:
    """Each label's decision threshold that maximises its own F1 on held-out (dev) examples, in the order of the
    multi-label `task`'s `labels` (`probs`' columns). A label with no gold positive on dev keeps 0.5 (no F1 to
    maximise); ties go to the threshold nearest 0.5 (`metrics.best_on_grid`).

    Example:
        >>> from kold_span.models.tasks import Task
        >>> t = Task("g", "sequence", "g", problem="multi", labels=("a", "b"))
        >>> label_thresholds(t, [["a"], [], ["a", "b"]], [[0.3, 0.2], [0.1, 0.6], [0.35, 0.9]], grid=(0.2, 0.5, 0.7))
        (0.2, 0.7)
    """
    chosen = []
    for i, label in enumerate(task.labels):
        gold = [label in g for g in golds]
        scores = [float(p[i]) for p in probs]

        def f1(t: float) -> float:
            tp = sum(1 for g, s in zip(gold, scores) if g and s >= t)
            return 2 * tp / (sum(1 for s in scores if s >= t) + sum(gold))

        chosen.append(best_on_grid(grid, f1) if any(gold) else 0.5)
    return tuple(chosen)


def vector_targets(task: "Task", targets: Sequence[Any]) -> dict[str, "torch.Tensor"]:
    """One float vector per example (zeros where missing) and a mask of the examples that have one."""
    import torch

    return {f"target_{task.name}": torch.tensor([t or [0.0] * len(task.labels) for t in targets], dtype=torch.float),
            f"mask_{task.name}": torch.tensor([1.0 if t else 0.0 for t in targets])}


def masked_mean(task: "Task", logits: "torch.Tensor", batch: dict[str, "torch.Tensor"],
                per_example: Callable[["torch.Tensor"], "torch.Tensor"]) -> "torch.Tensor":
    """The mean of `per_example(target)` over the examples whose mask is set (0 with a gradient when none is)."""
    mask = batch[f"mask_{task.name}"]
    if not mask.any():
        return logits.sum() * 0.0
    return (per_example(batch[f"target_{task.name}"]) * mask).sum() / mask.sum()


def value_vocabulary(examples: Sequence[Example], source: str) -> tuple[str, ...]:
    """Sorted label names of `source` seen in the data (booleans give ('false', 'true')).

    Example:
        >>> value_vocabulary([Example("1", "t", labels={"y": True}), Example("2", "t", labels={"y": ["b"]})], "y")
        ('b', 'false', 'true')
    """
    names: set[str] = set()
    for ex in examples:
        value = ex.labels.get(source)
        if value is None:
            continue
        values = value if isinstance(value, list) else [value]
        names.update(label_str(v) for v in values)
        if isinstance(value, bool):
            names.update(("false", "true"))
    return tuple(sorted(names))


def soft_distribution(example: Example, source: str) -> Optional[dict[str, float]]:
    """The vote distribution of `source`: a dict label, or the annotators' votes."""
    value = example.labels.get(f"{source}_soft", example.labels.get(source))
    if isinstance(value, dict):
        total = sum(value.values())
        return {label_str(k): v / total for k, v in value.items()} if total else None
    votes = Counter(label_str(a.labels[source]) for a in example.annotations
                    if a.labels.get(source) is not None and not isinstance(a.labels[source], list))
    total = sum(votes.values())
    return {k: n / total for k, n in votes.items()} if total else None


def balanced_weights(examples: Sequence[Example], source: str, labels: tuple[str, ...]) -> tuple[float, ...]:
    """n / (k × n_c) for each of the k labels, n_c its count among the n labelled training examples.

    A label with no training example (fixed in the config) gets weight 1: no target carries it.

    Example:
        >>> exs = [Example(id=str(i), text="t", labels={"y": y}) for i, y in enumerate("aaab")]
        >>> balanced_weights(exs, "y", ("a", "b"))
        (0.6666666666666666, 2.0)
    """
    counts = Counter(label_str(ex.labels[source]) for ex in examples if ex.labels.get(source) is not None)
    n = sum(counts[label] for label in labels)
    return tuple(n / (len(labels) * counts[label]) if counts[label] else 1.0 for label in labels)


def positive_weights(examples: Sequence[Example], source: str, labels: tuple[str, ...]) -> tuple[float, ...]:
    """Multi-label: negatives / positives of each label among the labelled training examples.

    Used as the positive-class weight of each label's binary cross-entropy, so a rare label's few
    positives count as much as its many negatives. A label with no positive (or no negative) gets 1.

    Example:
        >>> exs = [Example(id=str(i), text="t", labels={"g": g}) for i, g in enumerate([["a"], ["a", "b"], [], []])]
        >>> positive_weights(exs, "g", ("a", "b", "c"))
        (1.0, 3.0, 1.0)
    """
    sets = [label_set(ex.labels[source]) for ex in examples if ex.labels.get(source) is not None]
    weights = []
    for label in labels:
        positives = sum(label in s for s in sets)
        negatives = len(sets) - positives
        weights.append(negatives / positives if positives and negatives else 1.0)
    return tuple(weights)
