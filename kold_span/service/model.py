"""The predictor as the batcher uses it: comments measured in tokens, batches run, the model described.

The batcher must know each comment's windows before it cuts a batch; `RememberedWindows` keeps
the windows it measured so that the forward pass does not tokenize the comment a second time
(for the demo model, tokenizing is about a seventh of a comment's time). Everything here runs on
the batcher's thread, the only one that touches the model and its tokenizer.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from kold_span.config.choices import SnapMode, TaskKind
from kold_span.data.example import Context, Example, context_turns
from kold_span.inference.inputs import prediction_record
from kold_span.service.batching import Shape
from kold_span.text.morphemes import prefetch_for


@dataclass
class Item:
    """One comment for the batcher, with the annotator traits to predict for (if any)."""

    example: Example
    perspective: Optional[dict[str, Any]] = None
    windows: int = 1


def window_key(text: str, context: Context) -> tuple:
    """A hashable key of one (text, context) input.

    Example:
        >>> window_key("바보", ["A", "B"]) == window_key("바보", ("A", "B"))
        True
    """
    return text, tuple(context) if isinstance(context, (list, tuple)) else context


class RememberedWindows:
    """A model's `InputEncoder` that hands back the windows measured for the batcher instead of re-encoding.

    Example:
        >>> class Counting:
        ...     calls = 0
        ...     def encode_many(self, texts, contexts):
        ...         Counting.calls += 1
        ...         return [[{"input_ids": [0] * len(t)}] for t in texts]
        >>> encoder = RememberedWindows(Counting())
        >>> encoder.measure(["가나", "다"], [None, None]) == encoder.encode_many(["다", "가나"], [None, None])[::-1]
        True
        >>> Counting.calls
        1
    """

    def __init__(self, encoder: Any):
        self.encoder = encoder
        self.kept: dict[tuple, list[dict[str, Any]]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.encoder, name)

    def measure(self, texts: Sequence[str], contexts: Sequence[Context]) -> list[list[dict[str, Any]]]:
        """Encode and keep the windows (until `forget`)."""
        windows = self.encoder.encode_many(texts, contexts)
        for text, context, w in zip(texts, contexts, windows):
            self.kept[window_key(text, context)] = w
        return windows

    def encode_many(self, texts: Sequence[str], contexts: Sequence[Context]) -> list[list[dict[str, Any]]]:
        """The kept windows of measured inputs, fresh ones of the others."""
        keys = [window_key(t, c) for t, c in zip(texts, contexts, strict=True)]
        todo = [i for i, key in enumerate(keys) if key not in self.kept]
        fresh = dict(zip(todo, self.encoder.encode_many([texts[i] for i in todo], [contexts[i] for i in todo]))
                     ) if todo else {}
        return [fresh[i] if i in fresh else self.kept[key] for i, key in enumerate(keys)]

    def forget(self, texts: Sequence[str], contexts: Sequence[Context]) -> None:
        """Drop the windows kept for these inputs."""
        for text, context in zip(texts, contexts):
            self.kept.pop(window_key(text, context), None)


@dataclass(frozen=True)
class ModelIdentity:
    """Which model answers: a name, the SHA-256 of its files (weights, config, tokenizer), the package version."""

    name: str
    sha256: str
    version: str

    def header(self) -> str:
        """The `X-Model` response header: `name; sha256=…; kold-span=…`."""
        return f"{self.name}; sha256={self.sha256}; kold-span={self.version}"


def model_name(directories: Sequence[Union[str, Path]]) -> str:
    """A model's name from its directory: the last two parts of the path (`demo/model`), `+` between members.

    Example:
        >>> model_name(["/srv/checkpoints/kold_klue/run3/model"]), model_name(["a/m", "b/m"])
        ('run3/model', 'a/m+b/m')
    """
    return "+".join("/".join(Path(d).parts[-2:]) for d in directories)


def decision(task: Any) -> dict[str, Any]:
    """How a task's probabilities become its answer, as the predictor decodes it (for `/info` and the page).

    A single-label or soft task takes its most probable label (ties go to the label listed first, so a
    true/false task with labels false, true says true when P(true) > 0.5); a multi-label task marks
    each label whose probability reaches its threshold (0.5 where the model records none); a span
    task puts a token in a span when P(B) + P(I) reaches its threshold, else takes the most
    probable tag. An `Ensemble`'s tasks carry its members' averaged thresholds, which it decodes with.

    Example:
        >>> from kold_span.models.tasks import Task
        >>> decision(Task("OFF", "sequence", "OFF", labels=("false", "true")))
        {'rule': 'most probable label'}
        >>> decision(Task("TGT", "sequence", "TGT", problem="multi", labels=("a", "b"), thresholds=(0.35, 0.6)))
        {'rule': 'threshold', 'thresholds': {'a': 0.35, 'b': 0.6}}
        >>> decision(Task("TGT", "sequence", "TGT", problem="multi", labels=("a",)))
        {'rule': 'threshold', 'thresholds': {'a': 0.5}}
        >>> decision(Task("S", "span", "OFF", thresholds=(0.4,))), decision(Task("S", "span", "OFF"))
        ({'rule': 'P(B)+P(I) >= t', 'threshold': 0.4}, {'rule': 'most probable tag'})
    """
    if task.kind is TaskKind.SPAN:
        if task.thresholds:
            return {"rule": "P(B)+P(I) >= t", "threshold": float(task.thresholds[0])}
        return {"rule": "most probable tag"}
    if task.problem.thresholded:
        return {"rule": "threshold",
                "thresholds": {label: float(task.threshold(i)) for i, label in enumerate(task.labels)}}
    return {"rule": "most probable label"}


class ServedModel:
    """A `Predictor` (or `Ensemble`) behind the batcher: `shapes` and `run` are its two callables."""

    def __init__(self, predictor: Any):
        self.predictor = predictor
        self.windows = RememberedWindows(predictor.encoder)
        predictor.encoder = self.windows
        members = getattr(predictor, "members", None)
        if members:  # an ensemble encodes through its members; the first shares the batcher's tokenizer
            members[0].encoder = self.windows

    def shapes(self, items: list[Item]) -> list[Shape]:
        """Each comment's windows and longest window, in one tokenizer call (and one Kiwi call)."""
        texts = [i.example.text for i in items]
        contexts = [i.example.context for i in items]
        prefetch_for(self.windows.tokenizer, texts + [turn for c in contexts for turn in context_turns(c)],
                     snap=SnapMode(self.predictor.snap).uses_morphemes)
        shapes = []
        for item, windows in zip(items, self.windows.measure(texts, contexts)):
            item.windows = len(windows)
            shapes.append(Shape(len(windows), max(len(w["input_ids"]) for w in windows)))
        return shapes

    @staticmethod
    def size(item: Item) -> int:
        """A comment's work before it is measured: its characters and its context's (for the turn order)."""
        return len(item.example.text) + sum(map(len, context_turns(item.example.context)))

    def run(self, items: list[Item]) -> list[dict[str, Any]]:
        """Prediction records in order; comments for different annotators go through in separate passes."""
        groups: dict[str, list[int]] = {}
        for i, item in enumerate(items):
            groups.setdefault(json.dumps(item.perspective, sort_keys=True), []).append(i)
        records: list[Any] = [None] * len(items)
        try:
            for indices in groups.values():
                chosen = [items[i] for i in indices]
                # one forward pass: the batcher already bounded its padded tokens
                outputs = self.predictor.predict([c.example.text for c in chosen],
                                                 [c.example.context for c in chosen],
                                                 batch_size=sum(c.windows for c in chosen),
                                                 perspective=chosen[0].perspective)
                for i, item, output in zip(indices, chosen, outputs):
                    records[i] = prediction_record(item.example, output)
        finally:
            self.windows.forget([i.example.text for i in items], [i.example.context for i in items])
        return records

    def describe(self) -> dict[str, Any]:
        """Tasks and how each decides, perspective, encoder, what runs the network, how inputs are normalized."""
        predictor = self.predictor
        members = getattr(predictor, "members", [predictor])
        config = members[0].model.encoder.config
        return {
            "tasks": [{"name": t.name, "kind": t.kind, "source": t.source, "problem": t.problem,
                       "labels": list(t.labels), "gate": t.gate, "decision": decision(t)} for t in predictor.tasks],
            "perspective": predictor.perspective,
            "encoder": {"model_type": config.model_type, "hidden_size": getattr(config, "hidden_size", None),
                        "layers": getattr(config, "num_hidden_layers", None),
                        "max_length": self.windows.max_length, "stride": self.windows.stride,
                        "ensemble_members": len(members)},
            # fp32 or bf16 (torch), onnx-fp32 or onnx-int8-dynamic/static: whether int8 is live
            "runtime": [m.precision for m in members],
            # the normalization steps every comment goes through (text.normalize), null: read as written
            "normalize": [list(m.normalize) if m.normalize is not None else None for m in members],
        }
