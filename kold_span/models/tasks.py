"""Training objectives: what each head predicts and how examples become its targets."""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Collection, Optional, Sequence

from kold_span.config.schema import TaskConfig
from kold_span.data.example import Example, label_set, label_str
from kold_span.errors import ConfigError, DataError

SPAN_TAGS = ["O", "B", "I"]


@dataclass
class Task:
    """A configured objective with its label vocabulary fixed."""

    name: str
    kind: str  # "sequence" or "span"
    source: str
    problem: str = "single"
    weight: float = 1.0
    labels: tuple[str, ...] = ()
    gate: Optional[str] = None  # span tasks: a boolean sequence task that must say true
    # single-label: loss weight per label; multi-label: weight of each label's positive term (empty = all 1)
    class_weights: tuple[float, ...] = ()
    # multi-label: decision threshold per label (empty = all 0.5); span tasks: one P(B) + P(I) threshold
    # (empty = the most probable tag per token)
    thresholds: tuple[float, ...] = ()

    @property
    def num_outputs(self) -> int:
        return len(SPAN_TAGS) if self.kind == "span" else len(self.labels)

    @property
    def is_boolean(self) -> bool:
        return set(self.labels) == {"false", "true"}

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["labels"] = list(self.labels)
        d["class_weights"] = list(self.class_weights)
        d["thresholds"] = list(self.thresholds)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Task":
        return cls(**{**d, "labels": tuple(d.get("labels", ())), "class_weights": tuple(d.get("class_weights", ())),
                      "thresholds": tuple(d.get("thresholds", ()))})

    def threshold(self, i: int) -> float:
        """The decision threshold of label `i` (multi-label)."""
        return self.thresholds[i] if self.thresholds else 0.5

    def target(self, example: Example) -> Any:
        """The sequence target: a label index, a multi-hot or a distribution; None when missing."""
        if self.kind != "sequence":
            raise ValueError(f"task {self.name!r} is a span task")
        if self.problem == "soft":
            dist = soft_distribution(example, self.source)
            if dist is None:
                return None
            return [dist.get(label, 0.0) for label in self.labels]
        value = example.labels.get(self.source)
        if value is None:
            return None
        if self.problem == "multi":
            names = label_set(value)
            return [1.0 if label in names else 0.0 for label in self.labels]
        name = label_str(value)
        if name not in self.labels:
            raise DataError(f"example {example.id!r}: label {name!r} of task {self.name!r} was not seen in "
                            f"training; known labels: {list(self.labels)}")
        return self.labels.index(name)

    def decode_label(self, name: str) -> Any:
        """A label string back to the value users see (booleans stay booleans)."""
        return name == "true" if self.is_boolean else name


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


def build_tasks(configs: list[TaskConfig], examples: list[Example]) -> list[Task]:
    """Fix each task's label vocabulary: from the config, else from the training data."""
    tasks = []
    for cfg in configs:
        labels = tuple(cfg.labels) if cfg.labels else ()
        if cfg.kind == "span":
            labels = ()
        elif not labels:
            labels = label_vocabulary(examples, cfg.source, cfg.problem)
            if not labels:
                raise ConfigError(f"task {cfg.name!r}: no example has a label {cfg.source!r}; "
                                  f"check tasks[].source against the reader's label names")
        weights: tuple[float, ...] = ()
        if cfg.class_weight == "balanced":
            weights = (positive_weights(examples, cfg.source, labels) if cfg.problem == "multi"
                       else balanced_weights(examples, cfg.source, labels))
        # A fixed threshold is set here; "dev" is tuned after training (`tune_thresholds`, or
        # `tune_span_threshold` for a span task), the default decoding until then.
        fixed = cfg.threshold not in (0.5, "dev") and (cfg.kind == "span" or cfg.problem == "multi")
        thresholds = (float(cfg.threshold),) * (1 if cfg.kind == "span" else len(labels)) if fixed else ()
        tasks.append(Task(cfg.name, cfg.kind, cfg.source, cfg.problem, cfg.weight, labels, cfg.gate, weights,
                          thresholds))
    by_name = {t.name: t for t in tasks}
    for task in tasks:
        if task.gate and not by_name[task.gate].is_boolean:
            raise ConfigError(f"task {task.name!r}: gate {task.gate!r} must be a true/false task, "
                              f"its labels are {list(by_name[task.gate].labels)}")
    return tasks


def balanced_weights(examples: list[Example], source: str, labels: tuple[str, ...]) -> tuple[float, ...]:
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


def positive_weights(examples: list[Example], source: str, labels: tuple[str, ...]) -> tuple[float, ...]:
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


def label_vocabulary(examples: list[Example], source: str, problem: str = "single") -> tuple[str, ...]:
    """Sorted label names of `source` seen in the data (booleans give ('false', 'true'))."""
    names: set[str] = set()
    for ex in examples:
        if problem == "soft":
            names.update((soft_distribution(ex, source) or {}).keys())
            continue
        value = ex.labels.get(source)
        if value is None:
            continue
        values = value if isinstance(value, list) else [value]
        names.update(label_str(v) for v in values)
        if isinstance(value, bool):
            names.update(("false", "true"))
    return tuple(sorted(names))


THRESHOLD_GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))  # 0.05, 0.10, …, 0.95


def tune_thresholds(task: Task, golds: Sequence[Collection[str]], probs: Sequence[Any],
                    grid: tuple[float, ...] = THRESHOLD_GRID) -> tuple[float, ...]:
    """Each label's decision threshold that maximises its own F1 on held-out (dev) examples.

    Args:
        task: a multi-label sequence task (its `labels` fix the order of `probs`' columns).
        golds: the gold label names of each example.
        probs: each example's probabilities, one per label of `task`.
        grid: the thresholds tried.

    Returns:
        One threshold per label. A label with no gold positive on dev keeps 0.5 (no F1 to
        maximise); ties go to the threshold nearest 0.5.

    Example:
        >>> t = Task("g", "sequence", "g", problem="multi", labels=("a", "b"))
        >>> tune_thresholds(t, [["a"], [], ["a", "b"]], [[0.3, 0.2], [0.1, 0.6], [0.35, 0.9]], grid=(0.2, 0.5, 0.7))
        (0.2, 0.7)
    """
    chosen = []
    for i, label in enumerate(task.labels):
        gold = [label in g for g in golds]
        if not any(gold):
            chosen.append(0.5)
            continue
        scores = [float(p[i]) for p in probs]

        def f1(t: float) -> float:
            tp = sum(1 for g, s in zip(gold, scores) if g and s >= t)
            predicted = sum(1 for s in scores if s >= t)
            return 2 * tp / (predicted + sum(gold))

        chosen.append(max(grid, key=lambda t: (f1(t), -abs(t - 0.5))))
    return tuple(chosen)
