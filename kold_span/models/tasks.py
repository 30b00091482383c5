"""Training objectives: a task's name, kind, problem, labels, weights and thresholds.

What a task's kind and problem *do* (targets, loss, decoding) is in `kold_span.models.kinds`, whose
`build_tasks` asks the kind for the label vocabulary and class weights. This module imports nothing
else of `models/`: every other module of the layer may import it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional

from kold_span.config.choices import Problem, TaskKind


@dataclass
class Task:
    """A configured objective with its label vocabulary fixed.

    `kind` and `problem` may be given as their names ("span", "multi", as a saved `config.json`
    has them); they are kept as `TaskKind` and `Problem`.
    """

    name: str
    kind: TaskKind
    source: str
    problem: Problem = Problem.SINGLE
    weight: float = 1.0
    labels: tuple[str, ...] = ()
    gate: Optional[str] = None  # span tasks: a boolean sequence task that must say true
    # single-label: loss weight per label; multi-label: weight of each label's positive term (empty = all 1)
    class_weights: tuple[float, ...] = ()
    # multi-label: decision threshold per label (empty = all 0.5); span tasks: one P(B) + P(I) threshold
    # (empty = the most probable tag per token)
    thresholds: tuple[float, ...] = ()
    # what divides its logits before the softmax or sigmoid, fitted on dev (`models.temperature`); 1 = as trained
    temperature: float = 1.0
    # single-label and soft tasks: the knots ((x, y), ...) of the map of the top label's probability after the
    # temperature, fitted on dev (`models.confidence`); empty = none
    confidence_map: tuple[tuple[float, float], ...] = ()
    # multi-label tasks: one such map per label, in label order, of each label's probability (empty = none)
    label_maps: tuple[tuple[tuple[float, float], ...], ...] = ()
    # the decision policy (`kold-span thresholds`, `decision:` in a config): {"label", "remove", "review"}, each
    # band its threshold and what it promised on the data it was chosen on; None = no action is stated
    decision: Optional[dict[str, Any]] = None

    def __post_init__(self) -> None:
        self.kind = TaskKind.parse(self.kind, f"task {self.name!r}: kind")
        self.problem = Problem.parse(self.problem, f"task {self.name!r}: problem")

    @property
    def is_boolean(self) -> bool:
        return set(self.labels) == {"false", "true"}

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["kind"] = self.kind.value
        d["problem"] = self.problem.value
        d["labels"] = list(self.labels)
        d["class_weights"] = list(self.class_weights)
        d["thresholds"] = list(self.thresholds)
        # Written only when set: a model without them keeps the config.json bytes it always had.
        if self.temperature == 1.0:
            del d["temperature"]
        if self.confidence_map:
            d["confidence_map"] = [list(knot) for knot in self.confidence_map]
        else:
            del d["confidence_map"]
        if self.label_maps:
            d["label_maps"] = [[list(knot) for knot in knots] for knots in self.label_maps]
        else:
            del d["label_maps"]
        if self.decision is None:
            del d["decision"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Task":
        return cls(**{**d, "labels": tuple(d.get("labels", ())), "class_weights": tuple(d.get("class_weights", ())),
                      "thresholds": tuple(d.get("thresholds", ())),
                      "confidence_map": tuple(tuple(knot) for knot in d.get("confidence_map", ())),
                      "label_maps": tuple(tuple(tuple(knot) for knot in knots) for knots in d.get("label_maps", ()))})

    @property
    def map_knots(self) -> int:
        """How many knots the task's confidence map (or its labels' maps) holds; 0 without one."""
        return len(self.confidence_map) + sum(len(knots) for knots in self.label_maps)

    def threshold(self, i: int) -> float:
        """The decision threshold of label `i` (multi-label).

        Example:
            >>> Task("g", "sequence", "g", "multi", labels=("a", "b"), thresholds=(0.3, 0.6)).threshold(1)
            0.6
        """
        return self.thresholds[i] if self.thresholds else 0.5

    def decode_label(self, name: str) -> Any:
        """A label string back to the value users see (booleans stay booleans)."""
        return name == "true" if self.is_boolean else name


THRESHOLD_GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))  # 0.05, 0.10, …, 0.95

