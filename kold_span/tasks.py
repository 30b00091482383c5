"""Training objectives: what each head predicts and how examples become its targets."""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Optional

from kold_span.config import TaskConfig
from kold_span.data import Example

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
    class_weights: tuple[float, ...] = ()  # single-label: loss weight per label (empty = all 1)

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
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Task":
        return cls(**{**d, "labels": tuple(d.get("labels", ())), "class_weights": tuple(d.get("class_weights", ()))})

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
            names = {label_str(v) for v in (value if isinstance(value, list) else [value])}
            return [1.0 if label in names else 0.0 for label in self.labels]
        name = label_str(value)
        if name not in self.labels:
            raise ValueError(f"example {example.id!r}: label {name!r} of task {self.name!r} was not seen in "
                             f"training; known labels: {list(self.labels)}")
        return self.labels.index(name)

    def decode_label(self, name: str) -> Any:
        """A label string back to the value users see (booleans stay booleans)."""
        return name == "true" if self.is_boolean else name


def label_str(value: Any) -> str:
    """Label values as vocabulary strings (True → 'true')."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


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
                raise ValueError(f"task {cfg.name!r}: no example has a label {cfg.source!r}; "
                                 f"check tasks[].source against the reader's label names")
        weights = balanced_weights(examples, cfg.source, labels) if cfg.class_weight == "balanced" else ()
        tasks.append(Task(cfg.name, cfg.kind, cfg.source, cfg.problem, cfg.weight, labels, cfg.gate, weights))
    by_name = {t.name: t for t in tasks}
    for task in tasks:
        if task.gate and not by_name[task.gate].is_boolean:
            raise ValueError(f"task {task.name!r}: gate {task.gate!r} must be a true/false task, "
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


def keep_example(example: Example, data_filter: dict[str, Any]) -> bool:
    """Whether an example passes `data.filter`: every listed label (or `meta.KEY`) equals its value."""
    def value_of(key: str) -> Any:
        return example.meta.get(key[5:]) if key.startswith("meta.") else example.labels.get(key)
    return all(value_of(key) == value for key, value in data_filter.items())
