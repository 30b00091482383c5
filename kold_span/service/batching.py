"""Requests that arrive together become one forward pass: a bounded queue and a batching thread.

Handlers `submit` comments (one job each) and await their futures; one worker thread takes the
waiting jobs, measures them together (one tokenizer call: the model's tokens are what a batch
is cut by), and cuts a batch, in arrival order, when the next job would push the batch's padded
tokens (windows × the longest window) over the token budget, or when the first job of the batch
has waited `max_wait` seconds. Only the worker touches the model and its tokenizer, so the event
loop stays free for health checks and rejections while a batch runs.

The queue counts comments, not requests: past `max_queue` waiting comments `submit` raises
`QueueFull` (an HTTP 429) and the backlog never grows without bound.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from kold_span.errors import KoldSpanError

log = logging.getLogger(__name__)

MEASURE_AT_ONCE = 256  # jobs measured in one tokenizer call at most


class QueueFull(KoldSpanError):
    """More comments are waiting than `max_queue` allows; retry after `retry_after` seconds."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class Closed(KoldSpanError):
    """The batcher is draining for shutdown and takes no new work."""


@dataclass(frozen=True)
class Shape:
    """How much of a forward pass one comment fills: its windows and the longest one's tokens."""

    windows: int
    longest: int


def padded_tokens(shapes: Sequence[Shape]) -> int:
    """Tokens of one forward pass over these comments: every window padded to the longest.

    Example:
        >>> padded_tokens([Shape(1, 12), Shape(2, 64)])
        192
        >>> padded_tokens([])
        0
    """
    if not shapes:
        return 0
    return sum(s.windows for s in shapes) * max(s.longest for s in shapes)


def fits(batch: Sequence[Shape], item: Shape, budget: int) -> bool:
    """Whether `item` may join `batch` within the token budget; an empty batch takes anything.

    A comment longer than the whole budget is still scored, alone.

    Example:
        >>> fits([Shape(1, 30)], Shape(1, 40), budget=80)
        True
        >>> fits([Shape(1, 30)], Shape(1, 41), budget=80)
        False
        >>> fits([], Shape(8, 128), budget=80)
        True
    """
    return not batch or padded_tokens([*batch, item]) <= budget


@dataclass
class Job:
    """One comment waiting for the model, with its future and times (`time.monotonic` seconds)."""

    payload: Any
    future: Future
    arrived: float
    shape: Optional[Shape] = None


@dataclass(frozen=True)
class Done:
    """A job's result and when its batch ran: `started - arrived` is its time in the queue."""

    value: Any
    arrived: float
    started: float
    finished: float


@dataclass
class BatchStats:
    """What the worker reports after each batch (for metrics and Retry-After)."""

    comments: int
    tokens: int
    seconds: float


@dataclass
class Batcher:
    """A bounded queue of jobs and the thread that runs them in batches (see the module docstring).

    Args:
        run: the model on a batch: payloads → one result per payload, in order.
        shape: payloads → their `Shape`s, in order (called on the worker thread, on the jobs
            waiting, at most `MEASURE_AT_ONCE` of them at a time).
        max_batch_tokens: padded tokens per forward pass.
        max_wait: seconds the first job of a batch may wait for company.
        max_queue: comments that may wait; more is `QueueFull`.
        on_batch: called on the worker thread after each batch.

    Example:
        >>> b = Batcher(run=lambda xs: [x * 2 for x in xs], shape=lambda xs: [Shape(1, 4) for _ in xs],
        ...             max_batch_tokens=64, max_wait=0.001, max_queue=8)
        >>> b.start()
        >>> [f.result(timeout=5).value for f in b.submit([1, 2, 3])]
        [2, 4, 6]
        >>> b.close(timeout=5)
        True
    """

    run: Callable[[list[Any]], list[Any]]
    shape: Callable[[list[Any]], list[Shape]]
    max_batch_tokens: int
    max_wait: float
    max_queue: int
    on_batch: Optional[Callable[[BatchStats], None]] = None
    _jobs: deque = field(default_factory=deque, init=False, repr=False)
    _cond: threading.Condition = field(default_factory=threading.Condition, init=False, repr=False)
    _closed: bool = field(default=False, init=False, repr=False)
    _thread: Optional[threading.Thread] = field(default=None, init=False, repr=False)
    _rate: float = field(default=0.0, init=False, repr=False)  # comments per second, recent batches

    def start(self) -> None:
        """Start the worker thread."""
        self._thread = threading.Thread(target=self._work, name="kold-span-batcher", daemon=True)
        self._thread.start()

    @property
    def queued(self) -> int:
        """Comments waiting (not yet in a running batch)."""
        return len(self._jobs)

    def has_room(self) -> bool:
        """Whether one more comment would be accepted now (a cheap check before reading a body)."""
        return not self._closed and self.queued < self.max_queue

    def submit(self, payloads: Sequence[Any]) -> list[Future]:
        """Queue payloads as jobs, all or none; their futures resolve to `Done`.

        Raises:
            QueueFull: the queue cannot take them all.
            Closed: the batcher is shutting down.
        """
        now = time.monotonic()
        with self._cond:
            if self._closed:
                raise Closed("the service is shutting down")
            waiting = self.queued
            if waiting + len(payloads) > self.max_queue:
                raise QueueFull(f"{waiting} comments are waiting and the queue holds {self.max_queue} "
                                f"(--max-queue); {len(payloads)} more do not fit", self.retry_after(waiting))
            jobs = [Job(p, Future(), now) for p in payloads]
            self._jobs.extend(jobs)
            self._cond.notify()
        return [j.future for j in jobs]

    def retry_after(self, waiting: int) -> int:
        """Whole seconds until `waiting` comments have likely been served (at least 1)."""
        return max(1, math.ceil(waiting / self._rate)) if self._rate > 0 else 1

    def close(self, timeout: Optional[float] = None) -> bool:
        """Take no new jobs, finish the queued ones, stop the thread; whether it stopped in time."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # -- the worker thread ----------------------------------------------------------------
    def _waiting(self, deadline: Optional[float]) -> list[Job]:
        """The jobs waiting (at most MEASURE_AT_ONCE), after waiting for one until `deadline`.

        None as deadline waits until a job comes or the batcher is closed; [] means neither came.
        """
        with self._cond:
            while not self._jobs:
                if self._closed:
                    return []
                timeout = None if deadline is None else deadline - time.monotonic()
                if timeout is not None and timeout <= 0:
                    return []
                self._cond.wait(timeout)
            return [self._jobs.popleft() for _ in range(min(MEASURE_AT_ONCE, len(self._jobs)))]

    def _collect(self) -> list[Job]:
        """One batch: jobs in arrival order until the budget is full or the first has waited long enough."""
        batch: list[Job] = []
        deadline: Optional[float] = None
        while True:
            jobs = self._measured(self._waiting(deadline))
            if not jobs and deadline is not None and time.monotonic() >= deadline:
                return batch
            if not jobs and self._closed and not self._jobs:
                return batch
            for i, job in enumerate(jobs):
                if not fits([j.shape for j in batch], job.shape, self.max_batch_tokens):
                    with self._cond:  # measured, not run: first in line for the next batch
                        self._jobs.extendleft(reversed(jobs[i:]))
                    return batch
                batch.append(job)
                if deadline is None:
                    deadline = job.arrived + self.max_wait

    def _measured(self, jobs: list[Job]) -> list[Job]:
        """The jobs with their shapes, in order; a cancelled job (its client left) is dropped, and a job
        the shape function fails on fails alone."""
        fresh = [j for j in jobs if j.shape is None and j.future.set_running_or_notify_cancel()]
        try:
            shapes = self.shape([j.payload for j in fresh]) if fresh else []
            for job, shape in zip(fresh, shapes, strict=True):
                job.shape = shape
        except Exception:
            for job in fresh:  # one by one, to find the one that fails
                try:
                    [job.shape] = self.shape([job.payload])
                except Exception as err:
                    log.exception("measuring a comment failed")
                    job.future.set_exception(err)
        return [j for j in jobs if j.shape is not None]

    def _work(self) -> None:
        while True:
            batch = self._collect()
            if not batch:
                return
            started = time.monotonic()
            results = self._run_isolated([j.payload for j in batch])
            finished = time.monotonic()
            for job, result in zip(batch, results):
                if isinstance(result, BaseException):
                    job.future.set_exception(result)
                else:
                    job.future.set_result(Done(result, job.arrived, started, finished))
            seconds = finished - started
            if seconds > 0:
                rate = len(batch) / seconds
                self._rate = 0.8 * self._rate + 0.2 * rate if self._rate else rate
            if self.on_batch is not None:
                try:
                    self.on_batch(BatchStats(len(batch), padded_tokens([j.shape for j in batch]), seconds))
                except Exception:
                    log.exception("the batch callback failed")

    def _run_isolated(self, payloads: list[Any]) -> list[Any]:
        """The batch's results; when the batch fails, each payload alone, so one bad one fails only itself."""
        try:
            results = self.run(payloads)
            if len(results) != len(payloads):
                raise RuntimeError(f"the model returned {len(results)} results for {len(payloads)} comments")
            return results
        except Exception as err:
            if len(payloads) == 1:
                log.exception("a batch of one comment failed")
                return [err]
        log.warning("a batch of %d comments failed; running them one by one", len(payloads))
        return [self._run_isolated([p])[0] for p in payloads]
