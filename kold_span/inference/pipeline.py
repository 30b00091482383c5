"""Prediction as stages, each a public, typed call of a predictor (`Stages`), and their overlap (`Pipeline`).

The stages, which `Pipeline`, the service's batcher, the spaCy component and Ray all call:
1. encode (CPU, per text): normalization, Kiwi morphemes in one batched call, tokenization,
   windows (`Encoded`: a batcher measures texts by their windows before it cuts a batch);
2. prepare (CPU): the windows in length-sorted batches collated into tensors (pinned on CUDA);
3. run the network: every batch under autocast (`runtimes`), each batch's probabilities of all
   tasks gathered into one tensor and copied to the host once;
4. merge (CPU): windows merged, n-gram companions fused; then labels_and_spans: decoded,
   and what the caller renders from each prediction (a JSON line, say).

`Pipeline.run` cuts a stream of examples into chunks (`CHUNK_BATCHES` batches each), prepares the
next chunk in a background thread while the network runs the current one, and decodes the previous
chunk in another: the network never waits for a chunk that could have been prepared. Chunks and
their order are those of the sequential path, so the outputs are the same, byte for byte in
float32; at most four chunks are held at a time, so memory stays flat on any input size.
"""
from __future__ import annotations

import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Callable, Iterable, Iterator, Optional, Protocol, Sequence, TypeVar

import numpy as np
import torch

from kold_span.data.example import Context, Example, context_problem, text_problem
from kold_span.errors import ArgumentError
from kold_span.models.kinds import MergedExample
from kold_span.models.network import probabilities
from kold_span.models.tasks import Task

T = TypeVar("T")
E = TypeVar("E")  # one text encoded: an `Encoded` (an ensemble's: one per member)
C = TypeVar("C")  # one chunk prepared: a `PreparedChunk` (an ensemble's: one per member)
O = TypeVar("O")  # one chunk's network outputs: a `HostProbs` per batch (an ensemble's: per member)
# A chunk is this many batches of examples: few enough to keep memory flat. A resumed `kold-span predict`
# restarts at a chunk boundary, so that every text is padded with the same neighbours as in an uninterrupted run.
CHUNK_BATCHES = 8


@dataclass(frozen=True)
class RunOptions:
    """The options of a prediction run, together from the command line to `load_predictor` and the `Pipeline`."""

    batch_size: int = 32  # windows per forward pass
    perspective: Optional[dict[str, Any]] = None  # an annotator's traits (annotator-conditioned models)
    device: str = "cpu"
    precision: str = "auto"  # the network's (`runtimes.resolve_precision`)
    runtime: str = "auto"  # what runs it: torch, onnx or auto (`runtimes.choose_runtime`)
    verify: bool = True  # check each model file against its manifest at load

    def __post_init__(self) -> None:
        check_batch_size(self.batch_size)

    @property
    def chunk_size(self) -> int:
        """Examples per chunk: what the pipeline prepares at a time, and where a resumed output restarts."""
        return self.batch_size * CHUNK_BATCHES


@dataclass(eq=False)
class Encoded:
    """One text as a model reads it: normalized (`normalized`, when the model normalizes) and cut into windows."""

    text: str  # the text the model reads (normalized, when it normalizes)
    context: Context
    normalized: Any  # the text's `text.normalize.Normalized`, or None
    windows: list[dict[str, Any]]  # as `models.windows.InputEncoder` makes them


class Stages(Protocol[E, C, O]):
    """A predictor's stages (see the module docstring), what `Pipeline` and the service's batcher call."""

    def contexts_for(self, contexts: Sequence[Context], perspective: Optional[dict[str, Any]]) -> list[Context]:
        """The contexts with an annotator's traits added (annotator-conditioned models), else as given."""

    def encode(self, texts: Sequence[str], contexts: Sequence[Context]) -> list[E]:
        """Each text encoded (CPU): normalized, its morphemes fetched, cut into windows."""

    def window_shape(self, encoded: E) -> tuple[int, int]:
        """One encoded text's windows and the longest one's tokens: what it adds to a forward pass."""

    def prepare(self, encoded: Sequence[E], batch_size: int) -> C:
        """Encoded texts as length-sorted, collated batches of at most `batch_size` windows (CPU)."""

    def run_network(self, prepared: C) -> O:
        """Every batch of a prepared chunk through the network."""

    def merge(self, prepared: C, outputs: O) -> list[MergedExample]:
        """Per text of the chunk: its windows' outputs merged (CPU)."""

    def labels_and_spans(self, text: str, merged: MergedExample) -> dict[str, Any]:
        """One text's labels and spans, on `text` as given."""


def check_batch_size(batch_size: Any) -> None:
    """An `ArgumentError` unless `batch_size` is a whole number of at least 1.

    Example:
        >>> check_batch_size(0)
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: batch_size must be a whole number of at least 1, got 0
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ArgumentError(f"batch_size must be a whole number of at least 1, got {batch_size!r}")


def check_example(example: Any) -> None:
    """An `ArgumentError` naming the example unless it is an `Example` with a text and a valid context.

    Example:
        >>> check_example(Example(id="7", text=None))
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: example '7': text expected a string, got None
    """
    if not isinstance(example, Example):
        raise ArgumentError(f"expected an Example, got {type(example).__name__}")
    if problem := text_problem(example.text):
        raise ArgumentError(f"example {example.id!r}: text {problem}")
    if problem := context_problem(example.context):
        raise ArgumentError(f"example {example.id!r}: context {problem}")


@dataclass
class HostProbs:
    """One batch's probabilities of every task, side by side in one host array (one copy from the device).

    `layout` names each task's columns and the shape of one row's probabilities ([labels] for a
    sequence task, [tokens, 3] for a span task); `ready` is the copy's CUDA event (None on the host).
    """

    values: torch.Tensor  # [batch, all tasks' columns], float32, on the host (pinned when copied)
    layout: list[tuple[str, int, int, tuple[int, ...]]]  # (task, first column, end column, row shape)
    ready: Optional[Any] = None

    def rows(self) -> list[dict[str, np.ndarray]]:
        """Per window of the batch: task → its probabilities (waits for the copy first).

        Example:
            >>> task = Task("OFF", "sequence", "OFF", labels=("false", "true"))
            >>> host = to_host([task], {"OFF": torch.tensor([[0.0, 0.0], [0.0, 2.0]])})
            >>> [[round(float(p), 3) for p in row["OFF"]] for row in host.rows()]
            [[0.5, 0.5], [0.119, 0.881]]
        """
        if self.ready is not None:
            self.ready.synchronize()
        values = self.values.numpy()
        return [{name: values[i, start:end].reshape(shape) for name, start, end, shape in self.layout}
                for i in range(values.shape[0])]


def to_host(tasks: Sequence[Task], logits: dict[str, torch.Tensor]) -> HostProbs:
    """Every task's probabilities of one batch, gathered on the device and copied to the host once.

    Logits computed under autocast are taken to float32 before the softmax or sigmoid. On a CUDA
    device the copy goes, without blocking, into pinned host memory; `HostProbs.rows` waits for it.
    """
    parts, layout, column = [], [], 0
    for task in tasks:
        probs = probabilities(task, logits[task.name].float())
        flat = probs.reshape(probs.shape[0], -1)
        layout.append((task.name, column, column + flat.shape[1], tuple(probs.shape[1:])))
        column += flat.shape[1]
        parts.append(flat)
    values = torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]
    if values.device.type == "cpu":
        return HostProbs(values, layout)
    host = torch.empty(values.shape, dtype=values.dtype, pin_memory=values.device.type == "cuda")
    host.copy_(values, non_blocking=True)
    ready = None
    if values.device.type == "cuda":
        ready = torch.cuda.Event()
        ready.record()
    return HostProbs(host, layout, ready)


@dataclass
class PreparedChunk:
    """One chunk after the CPU work before the network: its texts encoded, their windows in collated batches."""

    encoded: list[Encoded]
    windows: list[dict[str, Any]] = field(default_factory=list)
    owners: list[int] = field(default_factory=list)  # the text of each window
    batches: list[tuple[list[int], tuple[torch.Tensor, ...]]] = field(default_factory=list)  # (windows, inputs)


_END = object()


def ahead(items: Iterable[T], depth: int = 1) -> Iterator[T]:
    """Iterate `items` in a background thread, at most `depth` items ahead of the consumer.

    An exception raised by `items` is raised here, after every item produced before it; closing
    this iterator early stops the thread.

    Example:
        >>> list(ahead(x * x for x in range(4)))
        [0, 1, 4, 9]
    """
    buffer: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                buffer.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
        except BaseException as err:  # noqa: BLE001 - handed to the consumer, which raises it
            put((_END, err))
            return
        put((_END, None))

    thread = threading.Thread(target=produce, name="kold-span-prepare", daemon=True)
    thread.start()
    try:
        while True:
            item, err = buffer.get()
            if item is _END:
                if err is not None:
                    raise err
                return
            yield item
    finally:
        stop.set()
        thread.join()


def chunks(examples: Iterable[Example], size: int) -> Iterator[list[Example]]:
    """Consecutive lists of `size` examples (the last one shorter).

    Example:
        >>> [[e.id for e in c] for c in chunks([Example(id=str(i), text="x") for i in range(5)], 2)]
        [['0', '1'], ['2', '3'], ['4']]
    """
    iterator = iter(examples)
    while chunk := list(islice(iterator, size)):
        yield chunk


class Pipeline:
    """A predictor's stages (a `Predictor` or an `Ensemble`: any `Stages`) overlapped over a stream of examples (see
    the module docstring)."""

    def __init__(self, predictor: Stages[Any, Any, Any], options: RunOptions = RunOptions()):
        self.predictor, self.options = predictor, options

    def run(self, examples: Iterable[Example],
            render: Optional[Callable[[Example, dict[str, Any]], Any]] = None) -> Iterator[tuple[Example, Any]]:
        """(example, prediction) per example in input order; `render(example, prediction)` in place of the prediction.

        `render` runs in the decoding thread (a JSON line, say), so that its cost overlaps the network's.
        A bad input row's error is raised after the predictions of every chunk before it.
        """
        render = render or (lambda _example, prediction: prediction)
        prepared = ahead(self._prepare(chunks(examples, self.options.chunk_size)))
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kold-span-decode") as decoder:
            pending: Optional[Future] = None
            try:
                for chunk, ready in prepared:
                    outputs = self.predictor.run_network(ready)
                    future = decoder.submit(self._decode, chunk, ready, outputs, render)
                    if pending is not None:
                        yield from pending.result()
                    pending = future
            except Exception:
                if pending is not None:
                    yield from pending.result()  # what was predicted before the error is written
                raise
            finally:
                prepared.close()
            if pending is not None:
                yield from pending.result()

    def _prepare(self, stream: Iterator[list[Example]]) -> Iterator[tuple[list[Example], Any]]:
        """Each chunk with its CPU work done (run ahead of the network by `ahead`)."""
        stages = self.predictor
        for chunk in stream:
            for example in chunk:
                check_example(example)
            contexts = stages.contexts_for([e.context for e in chunk], self.options.perspective)
            yield chunk, stages.prepare(stages.encode([e.text for e in chunk], contexts), self.options.batch_size)

    def _decode(self, chunk: list[Example], prepared: Any, outputs: Any,
                render: Callable[[Example, dict[str, Any]], Any]) -> list[tuple[Example, Any]]:
        """The chunk's predictions, each with its id first, rendered."""
        merged = self.predictor.merge(prepared, outputs)
        return [(example, render(example, {"id": example.id, **self.predictor.labels_and_spans(example.text, m)}))
                for example, m in zip(chunk, merged)]
