"""The predictor as the batcher uses it: comments measured in tokens, batches run, the model described.

The batcher must know each comment's windows before it cuts a batch: `shapes` encodes comments and
keeps each one's encoding on its `Item`, which the forward pass runs (`Predicts.run_encoded`): a comment
is tokenized once (for the demo model, a seventh of its time), and a comment refused or failed takes its
windows with it. `shapes` runs on the batcher's measuring thread (the tokenizer and Kiwi, no network);
`run` and `slices` on its model thread, the only one that runs the network.

A comment over the token budget runs in passes of at most the budget (`slices`), whether the batcher
runs other requests' batches between them or `run` runs them in one go: its answer is the same either way.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generator, Optional, Sequence, Union

from kold_span.config.choices import TaskKind
from kold_span.data.example import Example, context_turns
from kold_span.evaluation.operating_points import policy_in_words
from kold_span.inference.outputs import prediction_record
from kold_span.inference.predictor import Predicts
from kold_span.service.batching import Shape


@dataclass(eq=False)
class Item:
    """One comment for the batcher, the annotator traits to predict for (if any), and its encoding once measured."""

    example: Example
    perspective: Optional[dict[str, Any]] = None
    encoded: Any = None


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
    """A `Predictor` (or `Ensemble`) behind the batcher: `shapes`, `run` and `slices` are its callables.

    `max_batch_tokens`: the padded tokens of one forward pass; a comment over it runs in slices (None: whole).
    """

    def __init__(self, predictor: Predicts, max_batch_tokens: Optional[int] = None):
        self.predictor = predictor
        self.max_batch_tokens = max_batch_tokens

    def shapes(self, items: list[Item]) -> list[Shape]:
        """Each comment's windows and longest window, in one tokenizer call (and batched Kiwi calls) per annotator."""
        for chosen in by_perspective(items):
            contexts = self.predictor.contexts_for([c.example.context for c in chosen], chosen[0].perspective)
            for item, encoded in zip(chosen, self.predictor.encode([c.example.text for c in chosen], contexts)):
                item.encoded = encoded
        return [Shape(*self.predictor.window_shape(item.encoded)) for item in items]

    @staticmethod
    def size(item: Item) -> int:
        """A comment's work before it is measured: its characters and its context's (for the turn order)."""
        return len(item.example.text) + sum(map(len, context_turns(item.example.context)))

    def run(self, items: list[Item]) -> list[dict[str, Any]]:
        """Prediction records in order; comments for different annotators go through in separate passes, and a
        comment over the budget in its slices, one after the other."""
        records: dict[int, dict[str, Any]] = {}
        budget = self.max_batch_tokens
        for item in items:
            if budget is not None and Shape(*self.predictor.window_shape(item.encoded)).tokens > budget:
                records[id(item)] = run_through(self.slices(item, budget))
        for chosen in by_perspective([item for item in items if id(item) not in records]):
            # one forward pass: the batcher already bounded its padded tokens
            merged = self.predictor.run_encoded([c.encoded for c in chosen],
                                                sum(self.predictor.window_shape(c.encoded)[0] for c in chosen))
            for item, m in zip(chosen, merged):
                prediction = self.predictor.labels_and_spans(item.example.text, m)
                records[id(item)] = prediction_record(item.example, prediction)
        return [records[id(item)] for item in items]

    def slices(self, item: Item, budget: int) -> Generator[int, None, dict[str, Any]]:
        """One comment's windows as forward passes of at most `budget` padded tokens (a window longer than the
        budget alone), one per `next`; yields the padded tokens of the pass it runs next (the first `next`
        prepares and runs none; the last, 0, merges and decodes), returns the prediction record (`Batcher.slices`).

        An ensemble's members run their passes in turn, and their outputs are averaged at the end.
        """
        predictor = self.predictor
        _windows, longest = predictor.window_shape(item.encoded)
        prepared = predictor.prepare([item.encoded], max(1, budget // longest))
        chunks = prepared if isinstance(prepared, list) else [prepared]  # an ensemble's: one chunk per member
        outputs: list[list[Any]] = []
        for member, chunk in zip(predictor.members, chunks, strict=True):
            outputs.append([])
            for rows, inputs in chunk.batches:
                yield len(rows) * int(inputs[0].shape[1])
                outputs[-1] += member.run_network(replace(chunk, batches=[(rows, inputs)]))
        # Merging and decoding a long comment is a turn of its own (0 tokens: no forward pass), so the
        # other requests wait for it or for a pass, never for both (20,000 characters: ~50 ms).
        yield 0
        [merged] = predictor.merge(prepared, outputs if isinstance(prepared, list) else outputs[0])
        return prediction_record(item.example, predictor.labels_and_spans(item.example.text, merged))

    def describe(self) -> dict[str, Any]:
        """Tasks and how each decides, perspective, encoder, what runs the network, how inputs are normalized."""
        predictor, members = self.predictor, self.predictor.members
        config, settings = members[0].model.encoder.config, members[0].settings
        return {
            "tasks": [{"name": t.name, "kind": t.kind, "source": t.source, "problem": t.problem,
                       "labels": list(t.labels), "gate": t.gate, "decision": decision(t),
                       # the allow / review / remove thresholds and what each promised (docs/THRESHOLDS.md)
                       "policy": t.decision, "policy_in_words": policy_in_words(t.name, t.decision)}
                      for t in predictor.tasks],
            "perspective": predictor.settings.perspective,
            "encoder": {"model_type": config.model_type, "hidden_size": getattr(config, "hidden_size", None),
                        "layers": getattr(config, "num_hidden_layers", None),
                        "max_length": settings.max_length, "stride": settings.stride,
                        "ensemble_members": len(members)},
            # fp32 or bf16 (torch), onnx-fp32 or onnx-int8-dynamic/static: whether int8 is live
            "runtime": [m.precision for m in members],
            # the normalization steps every comment goes through (text.normalize), null: read as written
            "normalize": [list(m.settings.normalize) if m.settings.normalize is not None else None for m in members],
        }


def run_through(steps: Generator[Any, None, Any]) -> Any:
    """Run a generator to its end; its return value.

    Example:
        >>> def steps():
        ...     yield 1
        ...     return "done"
        >>> run_through(steps())
        'done'
    """
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def by_perspective(items: Sequence[Item]) -> list[list[Item]]:
    """The items grouped by the annotator they are predicted for, in order of first appearance."""
    groups: dict[str, list[Item]] = {}
    for item in items:
        groups.setdefault(json.dumps(item.perspective, sort_keys=True), []).append(item)
    return list(groups.values())
