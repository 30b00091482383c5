"""Prediction as three overlapped stages: CPU preparation ahead of the network, decoding behind it.

A stream of examples is cut into chunks (`CHUNK_BATCHES` batches each). For every chunk a
predictor does three things, each a method of it (`Predictor.prepare`, `run_network`, `merge`):

1. prepare (CPU): Kiwi morphemes in one batched call, tokenization, windows, length-sorted
   batches collated into tensors (pinned on a CUDA device);
2. run the network: every batch under autocast (`precision`), each batch's probabilities of all
   tasks gathered into one tensor and copied to the host once;
3. merge and decode (CPU): windows merged, n-gram companions fused, labels and spans decoded,
   and what the caller renders from each prediction (a JSON line, say).

`Pipeline.run` prepares the next chunk in a background thread while the network runs the current
one, and decodes the previous chunk in another: the network never waits for a chunk that could
have been prepared. Chunks and their order are those of the sequential path, so the outputs are
the same, byte for byte in float32; at most four chunks are held at a time, so memory stays flat
on any input size.
"""
from __future__ import annotations

import contextlib
import logging
import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, TypeVar

import numpy as np
import torch

from kold_span.config.choices import Precision
from kold_span.data.example import Context, Example, context_problem, text_problem
from kold_span.errors import ArgumentError
from kold_span.models.network import probabilities
from kold_span.models.tasks import Task

T = TypeVar("T")
log = logging.getLogger(__name__)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
# A chunk is this many batches of examples: few enough to keep memory flat. A resumed `kold-span predict`
# restarts at a chunk boundary, so that every text is padded with the same neighbours as in an uninterrupted run.
CHUNK_BATCHES = 8
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo flags of CPUs with bf16 instructions


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


def cpu_has_bf16(flags: Optional[str] = None) -> bool:
    """Whether this CPU (or the /proc/cpuinfo `flags` line given) has bf16 instructions (AVX512-BF16, AMX).

    Example:
        >>> cpu_has_bf16("fpu sse2 avx2 avx512f avx512_bf16"), cpu_has_bf16("fpu sse2 fma avx2")
        (True, False)
    """
    if flags is None:
        try:
            text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        flags = next((line.partition(":")[2] for line in text.splitlines() if line.startswith("flags")), "")
    return any(flag in flags.split() for flag in CPU_BF16_FLAGS)


def resolve_precision(precision: str, device: torch.device) -> str:
    """The precision ("bf16", "fp16" or "fp32") the network runs in on `device`: `precision`, or for "auto" its default.

    "auto" gives bf16 on a CUDA device that supports it (fp16 on older ones) and fp32 on every CPU, so
    that one model gives the same labels and spans on every machine of a kind: bf16 on a CPU with
    bf16 instructions is faster but changes labels and spans (docs/PREDICTING.md), so it is the
    user's choice ("bf16"), never a default. On a CPU without bf16 instructions it is emulated and
    many times slower, and a warning says so.

    Example:
        >>> resolve_precision("fp32", torch.device("cuda")), resolve_precision("bf16", torch.device("cpu"))
        ('fp32', 'bf16')
        >>> resolve_precision("auto", torch.device("cpu"))
        'fp32'
        >>> resolve_precision("half", torch.device("cpu"))
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: precision must be one of ('auto', 'bf16', 'fp16', 'fp32'), got 'half'
    """
    if Precision.parse(precision, "precision") is not Precision.AUTO:
        if device.type == "cpu" and precision != "fp32" and not cpu_has_bf16():
            log.warning("precision %s on a CPU without bf16 instructions: emulated, and usually slower than fp32",
                        precision)
        return str(Precision(precision))
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "fp32"


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The autocast context of a resolved precision (none for fp32).

    Example:
        >>> with autocast(torch.device("cpu"), "bf16"):
        ...     (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
        torch.bfloat16
    """
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=DTYPES[precision])


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
    """One chunk after the CPU work before the network: its windows and their collated batches."""

    texts: list[str]
    contexts: list[Context]
    windows: list[dict[str, Any]] = field(default_factory=list)
    owners: list[int] = field(default_factory=list)  # the text of each window
    batches: list[tuple[list[int], tuple[torch.Tensor, ...]]] = field(default_factory=list)  # (windows, inputs)
    normalized: Optional[list[Any]] = None  # each text's `Normalized` when the model normalizes; texts are its text


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
    """A predictor's stages overlapped over a stream of examples (see the module docstring).

    Args:
        predictor: a `Predictor` (or an `Ensemble`): anything with `prepare`, `run_network`,
            `merge` and `format`, and `contexts_for` for an annotator's perspective.
        batch_size: windows per forward pass.
        perspective: an annotator's traits, for annotator-conditioned models.

    Example:
        >>> Pipeline(predictor=None, batch_size=0)
        Traceback (most recent call last):
        ...
        kold_span.errors.ArgumentError: batch_size must be a whole number of at least 1, got 0
    """

    def __init__(self, predictor: Any, batch_size: int = 32, perspective: Optional[dict[str, Any]] = None):
        check_batch_size(batch_size)
        self.predictor = predictor
        self.batch_size = batch_size
        self.perspective = perspective

    def run(self, examples: Iterable[Example],
            render: Optional[Callable[[Example, dict[str, Any]], Any]] = None) -> Iterator[tuple[Example, Any]]:
        """(example, prediction) per example in input order; `render(example, prediction)` in place of the prediction.

        `render` runs in the decoding thread (a JSON line, say), so that its cost overlaps the network's.
        A bad input row's error is raised after the predictions of every chunk before it.
        """
        render = render or (lambda _example, prediction: prediction)
        prepared = ahead(self._prepare(chunks(examples, self.batch_size * CHUNK_BATCHES)))
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

    def _prepare(self, stream: Iterator[list[Example]]) -> Iterator[tuple[list[Example], PreparedChunk]]:
        """Each chunk with its CPU work done (run ahead of the network by `ahead`)."""
        for chunk in stream:
            for example in chunk:
                check_example(example)
            contexts = self.predictor.contexts_for([e.context for e in chunk], self.perspective)
            yield chunk, self.predictor.prepare([e.text for e in chunk], contexts, self.batch_size)

    def _decode(self, chunk: list[Example], prepared: Any, outputs: Any,
                render: Callable[[Example, dict[str, Any]], Any]) -> list[tuple[Example, Any]]:
        """The chunk's predictions, each with its id first, rendered."""
        merged = self.predictor.merge(prepared, outputs)
        return [(example, render(example, {"id": example.id, **self.predictor.format(example.text, m)}))
                for example, m in zip(chunk, merged)]
