"""Requests that arrive together become one forward pass: a bounded queue, fair turns, two threads.

Handlers `submit` a request's comments (one job each, the request's jobs a group) and await their
futures. A measuring thread gives each job its shape (one tokenizer call for many: the model's tokens
are what a batch is cut by), and a model thread fills batches of measured jobs within the token
budget (windows × the longest window) and runs them. Measuring runs beside the forward passes, never
before them on the model thread (a maximal request cost ~1.2 s of measuring there, which every other
request waited for), and in bounded calls (`MEASURE_AT_ONCE` jobs, `MEASURE_SIZE` of their size) taken
in turn order. One such call can still be long (a comment of 20,000 characters and a title as long:
43 ms alone, up to 0.25 s beside other work), so a second, quick measuring thread takes only
small requests (`QUICK_SIZE` characters at most): a one-comment request is measured at once, not after
a large one's call. The two threads never measure jobs of one request at the same time.

Requests take turns by size: the batch is filled from the request with the least work waiting first
(its comments' `size`, characters in the service; without a size function, its number of comments),
then the next, so a short request waits for at most the batch running when it came, never for the
whole of a large request queued before it. A batch is cut when the next job would push it over the
budget, when the next is another request's comment with more windows than the batch holds
(`company`: a short request's batch is not slowed to a long comment's pace), or when the oldest
measured job has waited `max_wait` seconds. Only the model thread runs the model.

A comment over the budget runs in slices (`slices`: one forward pass of at most the budget each);
between two of its slices the model thread runs one batch of the other requests waiting, so another
client waits for one slice, not for the whole comment. One such comment is sliced at a time; the
others wait their turn in the queue.

A request is measured whole before any of its comments runs: one over `max_request_tokens`, or
holding a comment over `max_comment_tokens`, fails whole (`RequestTooLarge`, `CommentTooLarge`: an
HTTP 413) without having cost a forward pass. A request whose client left is `cancel`led: its jobs
still waiting leave the queue, and a comment of it being sliced runs no further slice.

The queue counts comments, not requests: past `max_queue` waiting comments `submit` raises
`QueueFull` (an HTTP 429). Jobs leave the count only when they join a running batch, so the count
never exceeds `max_queue`.
"""
from __future__ import annotations

import itertools
import logging
import math
import threading
import time
from collections import Counter, deque
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Iterable, Optional, Sequence

from kold_span.errors import Closed, CommentTooLarge, QueueFull, RequestTooLarge

log = logging.getLogger(__name__)

MEASURE_AT_ONCE = 64  # jobs measured in one tokenizer call at most (and between two budget checks)
# The size (characters, in the service) of the jobs one measuring call takes, beyond its first job: a
# maximal comment (20,000 characters and a title as long) is measured alone, and a small request waits
# for at most that one before its turn.
MEASURE_SIZE = 16_384
# The size of a request (its jobs' sizes) the quick measuring thread takes, and of one of its calls: a few
# ordinary comments, measured in milliseconds.
QUICK_SIZE = 2_048
# Seconds the model thread waits, before a long comment's next slice, for the quick thread to finish measuring
# a small request (one of its calls takes milliseconds; the bound only guards against a stuck one).
QUICK_WAIT = 0.1
# Seconds between two calls of `on_idle` at least (it runs when the queue has drained).
IDLE_EVERY = 5.0


@dataclass(frozen=True)
class Shape:
    """How much of a forward pass one comment fills: its windows and the longest one's tokens."""

    windows: int
    longest: int

    @property
    def tokens(self) -> int:
        """Tokens of its windows, each padded to the longest."""
        return self.windows * self.longest


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


@dataclass(eq=False)
class Group:
    """One request's jobs still waiting, and the tokens of those measured so far."""

    number: int  # arrival order, the tie-break between groups of one size
    jobs: deque = field(default_factory=deque)
    client: Optional[str] = None  # who sent it (an API key's name, else an address), for its share of the queue
    weight: int = 0  # the sizes of its jobs still waiting
    tokens: int = 0
    checked: bool = False  # measured whole and within the per-request budget


@dataclass(eq=False)
class Job:
    """One comment waiting for the model, with its future and times (`time.monotonic` seconds)."""

    payload: Any
    future: Future
    arrived: float
    group: Group
    shape: Optional[Shape] = None
    size: int = 1
    measuring: bool = False  # a measuring thread holds it now


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
    requests: int = 1  # how many requests' comments shared the batch


def company(batch: Sequence[Job], job: Job) -> bool:
    """Whether another request's comment may join a batch: only with no more windows than the batch
    holds, so a short request's batch is not made as slow as a long comment (its own comments always may).

    Example:
        >>> mine, theirs = Group(0), Group(1)
        >>> batch = [Job(None, Future(), 0.0, mine, Shape(1, 30))]
        >>> company(batch, Job(None, Future(), 0.0, theirs, Shape(1, 60)))
        True
        >>> company(batch, Job(None, Future(), 0.0, theirs, Shape(54, 128)))
        False
        >>> company(batch, Job(None, Future(), 0.0, mine, Shape(54, 128)))
        True
    """
    if not batch or all(j.group is job.group for j in batch):
        return True
    assert job.shape is not None
    return job.shape.windows <= sum(j.shape.windows for j in batch if j.shape is not None)


def turn_order(groups: Iterable[Group]) -> list[Group]:
    """Groups in the order they fill a batch: least work waiting first, then the earliest.

    Example:
        >>> big, small, later = Group(0, weight=4), Group(1, weight=1), Group(2, weight=1)
        >>> [g.number for g in turn_order([big, small, later])]
        [1, 2, 0]
    """
    return sorted(groups, key=lambda g: (g.weight, g.number))


def take_measurable(jobs: Sequence[Job], taken: Sequence[Job] = ()) -> list[Job]:
    """The first of `jobs` that one measuring call takes after `taken`: at most `MEASURE_AT_ONCE` jobs in all and,
    past the call's first job, at most `MEASURE_SIZE` of their sizes.

    Example:
        >>> group = Group(0)
        >>> jobs = [Job(None, Future(), 0.0, group, size=n) for n in (20_000, 5, 5)]
        >>> [j.size for j in take_measurable(jobs)], [j.size for j in take_measurable(jobs[1:])]
        ([20000], [5, 5])
        >>> take_measurable(jobs[1:], taken=jobs[:1])
        []
    """
    chosen, size = [], sum(j.size for j in taken)
    for job in jobs:
        if len(taken) + len(chosen) >= MEASURE_AT_ONCE or (taken or chosen) and size + job.size > MEASURE_SIZE:
            break
        chosen.append(job)
        size += job.size
    return chosen


@dataclass(eq=False)
class Sliced:
    """The comment the model thread runs in slices: its job, its steps, the tokens of its next slice."""

    job: Job
    steps: Generator[int, None, Any]
    tokens: int = 0
    started: float = 0.0
    seconds: float = 0.0  # its slices' time so far
    left: bool = False  # its client left: no further slice runs


@dataclass
class Batcher:
    """A bounded queue of jobs and the threads that measure them and run them in batches (see the module docstring).

    Args:
        run: the model on a batch: payloads → one result per payload, in order.
        shape: payloads → their `Shape`s, in order (called on the measuring thread, at most
            `MEASURE_AT_ONCE` payloads at a time).
        max_batch_tokens: padded tokens per forward pass.
        max_wait: seconds the oldest measured job may wait for company.
        max_queue: comments that may wait; more is `QueueFull`.
        on_batch: called on the model thread after each batch (and each slice of a long comment).
        max_request_tokens: the tokens one request's comments may come to (each comment's windows
            × its longest window); more fails the request with `RequestTooLarge`. None: no limit.
        max_comment_tokens: the tokens one comment may come to; a request holding a longer one fails
            whole with `CommentTooLarge`. Without `slices` a comment runs in one forward pass, so this
            bounds the longest batch any request can make the others wait for. None: no limit.
        size: a payload's work, known before measuring (the service: its characters); the request
            with the least waiting goes first. None: 1 a payload.
        max_client_queue: the comments one client (`submit`'s `client`) may have waiting; more is
            `QueueFull` for that client alone, so one client's flood leaves room for the others. None: no limit.
        slices: a payload over `max_batch_tokens` as a generator (`ServedModel.slices`): each `next`
            runs one forward pass of at most the budget and yields the padded tokens of the next one
            (the first `next` runs none); its return value is the payload's result. None: such a
            payload runs whole in `run`.
        on_idle: called on the model thread when the queue has drained (nothing waits), once a drain and
            at most once every `IDLE_EVERY` seconds (the service hands freed memory back to the system).

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
    max_request_tokens: Optional[int] = None
    size: Optional[Callable[[Any], int]] = None
    max_comment_tokens: Optional[int] = None
    max_client_queue: Optional[int] = None
    slices: Optional[Callable[[Any, int], Generator[int, None, Any]]] = None
    on_idle: Optional[Callable[[], None]] = None
    _idled: float = field(default=-math.inf, init=False, repr=False)  # when `on_idle` last ran
    _idle_since_work: bool = field(default=False, init=False, repr=False)  # it ran, and no request came since
    _groups: list = field(default_factory=list, init=False, repr=False)
    _by_client: Counter = field(default_factory=Counter, init=False, repr=False)  # comments waiting per client
    _queued: int = field(default=0, init=False, repr=False)
    _numbers: Any = field(default_factory=itertools.count, init=False, repr=False)
    _cond: threading.Condition = field(default_factory=threading.Condition, init=False, repr=False)
    _closed: bool = field(default=False, init=False, repr=False)
    _thread: Optional[threading.Thread] = field(default=None, init=False, repr=False)
    _measurer: Optional[threading.Thread] = field(default=None, init=False, repr=False)
    _quick: Optional[threading.Thread] = field(default=None, init=False, repr=False)
    _quick_busy: bool = field(default=False, init=False, repr=False)  # the quick thread is measuring now
    _sliced: Optional[Sliced] = field(default=None, init=False, repr=False)
    _rate: float = field(default=0.0, init=False, repr=False)  # comments per second, recent batches

    def start(self) -> None:
        """Start the measuring threads and the model thread."""
        self._measurer = threading.Thread(target=self._measure_work, name="kold-span-measure", daemon=True)
        self._quick = threading.Thread(target=self._measure_work, args=(QUICK_SIZE,), name="kold-span-measure-quick",
                                       daemon=True)
        self._thread = threading.Thread(target=self._work, name="kold-span-batcher", daemon=True)
        self._measurer.start()
        self._quick.start()
        self._thread.start()

    @property
    def queued(self) -> int:
        """Comments waiting (not yet in a running batch); never more than `max_queue`."""
        return self._queued

    @property
    def measured(self) -> int:
        """Comments waiting whose requests are measured whole: what the model thread may take now."""
        with self._cond:
            return sum(len(g.jobs) for g in self._groups if g.checked)

    def has_room(self) -> bool:
        """Whether one more comment would be accepted now (a cheap check before reading a body)."""
        return not self._closed and self._queued < self.max_queue

    def submit(self, payloads: Sequence[Any], client: Optional[str] = None) -> list[Future]:
        """Queue one request's payloads as jobs, all or none; their futures resolve to `Done`.

        Raises:
            QueueFull: the queue cannot take them all, or `client` would pass its share.
            Closed: the batcher is shutting down.
        """
        now = time.monotonic()
        with self._cond:
            if self._closed:
                raise Closed("the service is shutting down")
            waiting = self._queued
            if waiting + len(payloads) > self.max_queue:
                raise QueueFull(f"{waiting} comments are waiting and the queue holds {self.max_queue} "
                                f"(--max-queue); {len(payloads)} more do not fit", self.retry_after(waiting))
            held = self._by_client[client] if client is not None else 0
            if client is not None and self.max_client_queue is not None and \
                    held + len(payloads) > self.max_client_queue:
                raise QueueFull(f"client {client}: {held} comments waiting; its share of the queue is "
                                f"{self.max_client_queue} (--max-client-queue); {len(payloads)} more do not fit",
                                self.retry_after(held))
            group = Group(next(self._numbers), client=client)
            group.jobs.extend(Job(p, Future(), now, group, size=self.size(p) if self.size else 1) for p in payloads)
            group.weight = sum(j.size for j in group.jobs)
            self._groups.append(group)
            self._idle_since_work = False
            self._queued += len(payloads)
            if client is not None:
                self._by_client[client] += len(payloads)
            self._cond.notify_all()
        return [j.future for j in group.jobs]

    def cancel(self, futures: Sequence[Future]) -> int:
        """Take these futures' jobs out of the queue if they are still waiting (their client left);
        how many were taken out. Jobs already in a batch finish; a comment being sliced runs no further slice."""
        wanted = set(map(id, futures))
        removed = 0
        with self._cond:
            for group in self._groups:
                gone = [j for j in group.jobs if id(j.future) in wanted]
                for job in gone:
                    group.jobs.remove(job)
                    group.weight -= job.size
                    job.future.cancel()
                removed += len(gone)
                self._forget(group, len(gone))
            self._queued -= removed
            self._groups = [g for g in self._groups if g.jobs]
            sliced = self._sliced
            if sliced is not None and id(sliced.job.future) in wanted and not sliced.left:
                sliced.left = True
                removed += 1
        return removed

    def retry_after(self, waiting: int) -> int:
        """Whole seconds until `waiting` comments have likely been served (at least 1)."""
        return max(1, math.ceil(waiting / self._rate)) if self._rate > 0 else 1

    def close(self, timeout: Optional[float] = None) -> bool:
        """Take no new jobs, finish the queued ones, stop the threads; whether they stopped in time."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        deadline = None if timeout is None else time.monotonic() + timeout
        threads = (self._measurer, self._quick, self._thread)
        for thread in threads:
            if thread is not None:
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(t is not None and t.is_alive() for t in threads)

    # -- the measuring threads --------------------------------------------------------------
    def _measure_work(self, most: Optional[int] = None) -> None:
        """Measure the waiting requests in turn order, one bounded call at a time, until closed and done;
        with `most`, only requests of at most that size (the quick thread)."""
        while True:
            with self._cond:
                while True:
                    order = [g for g in turn_order(self._groups) if not g.checked and not self._held(g)
                             and (most is None or g.weight <= most)]
                    if order:
                        break
                    if self._closed and not any(not g.checked for g in self._groups):
                        return
                    self._cond.wait()
                group = order[0]
                todo = [j for j in group.jobs if j.shape is None]
                chunk = take_measurable(todo) if most is None else todo
                if len(chunk) == len(todo):
                    for later in order[1:]:  # company: the next requests' jobs, within one call's bounds
                        jobs = [j for j in later.jobs if j.shape is None]
                        chunk += take_measurable(jobs, chunk) if most is None else \
                            (jobs if sum(j.size for j in chunk + jobs) <= most else [])
                for job in chunk:
                    job.measuring = True
                if most is not None:
                    self._quick_busy = True
            try:
                self._measure_step(group, chunk)
            finally:
                with self._cond:
                    for job in chunk:
                        job.measuring = False
                    if most is not None:
                        self._quick_busy = False
                    self._cond.notify_all()

    @staticmethod
    def _held(group: Group) -> bool:
        """Whether a measuring thread holds some of the group's jobs now (call with the lock held)."""
        return any(j.measuring for j in group.jobs)

    def _measure_step(self, group: Group, chunk: list[Job]) -> None:
        """One measuring call for `chunk` (jobs of `group`, and of the next groups as company when it is its
        last), then `group`'s budget checks: over a limit, it fails whole and leaves; measured whole, `checked`."""
        if chunk:
            self._measure(chunk)
        with self._cond:
            jobs = list(group.jobs)
        longest = max((j.shape.tokens for j in jobs if j.shape is not None), default=0)
        unmeasured = any(j.shape is None for j in jobs)
        limit, error = self.max_request_tokens, None
        if limit is not None and group.tokens > limit:
            error = RequestTooLarge(group.tokens, limit, measured_all=not unmeasured)
        elif self.max_comment_tokens is not None and longest > self.max_comment_tokens:
            error = CommentTooLarge(longest, self.max_comment_tokens)
        with self._cond:
            if error is not None:
                jobs = list(group.jobs)
                if jobs:
                    self._drop(group, jobs)
            elif not unmeasured:
                group.checked = True
        if error is not None:
            for job in jobs:
                if job.future.set_running_or_notify_cancel():
                    job.future.set_exception(error)

    def _measure(self, jobs: list[Job]) -> None:
        """Give the jobs their shapes; a job the shape function fails on fails alone and leaves."""
        try:
            shapes = self.shape([j.payload for j in jobs]) if jobs else []
            if len(shapes) != len(jobs):
                raise RuntimeError(f"{len(shapes)} shapes for {len(jobs)} comments")
            for job, shape in zip(jobs, shapes):
                job.shape = shape
                job.group.tokens += shape.tokens
        except Exception:
            for job in jobs:  # one by one, to find the one that fails
                if job.shape is not None:
                    continue
                try:
                    [job.shape] = self.shape([job.payload])
                    job.group.tokens += job.shape.tokens
                except Exception as err:
                    log.exception("measuring a comment failed")
                    with self._cond:
                        if job in job.group.jobs:
                            self._drop(job.group, [job])
                    if job.future.set_running_or_notify_cancel():
                        job.future.set_exception(err)

    # -- the model thread -------------------------------------------------------------------
    def _drop(self, group: Group, jobs: Sequence[Job]) -> None:
        """Take jobs out of the queue (they failed, or joined a batch); call with the lock held."""
        for job in jobs:
            group.jobs.remove(job)
            group.weight -= job.size
        self._queued -= len(jobs)
        self._forget(group, len(jobs))
        if not group.jobs:
            self._groups.remove(group)

    def _forget(self, group: Group, count: int) -> None:
        """`count` of the group's comments no longer wait: its client's share frees them (lock held)."""
        if group.client is not None and count:
            self._by_client[group.client] -= count
            if self._by_client[group.client] <= 0:
                del self._by_client[group.client]  # no entry kept for a client with nothing waiting

    def _collect(self, wait: bool = True, short_only: bool = False) -> list[Job]:
        """One batch of measured jobs, groups taking turns (`turn_order`) until the budget is full.

        With `wait`, it first waits for measured jobs, then until the oldest has waited `max_wait` or
        they fill the budget; [] when the batcher is closed and the queue empty. Without, it takes what
        is measured now ([] if nothing). `short_only` passes over comments that need slices.
        """
        budget = self.max_batch_tokens
        with self._cond:
            while wait:
                ready = [j for g in self._groups if g.checked for j in g.jobs]
                if not ready:
                    if self._closed and not self._groups:
                        return []
                    if self.on_idle is not None and not self._groups and not self._idle_since_work and \
                            time.monotonic() - self._idled >= IDLE_EVERY:
                        self._idle()
                        continue
                    self._cond.wait()
                    continue
                left = min(j.arrived for j in ready) + self.max_wait - time.monotonic()
                if left <= 0 or self._closed or padded_tokens([j.shape for j in ready]) >= budget:
                    break
                self._cond.wait(left)
            batch: list[Job] = []
            for group in turn_order(g for g in self._groups if g.checked):
                for job in list(group.jobs):
                    if short_only and job.shape.tokens > budget:
                        break  # its request waits for the comment being sliced
                    if not fits([j.shape for j in batch], job.shape, budget) or not company(batch, job):
                        return batch
                    self._drop(group, [job])
                    if job.future.set_running_or_notify_cancel():
                        batch.append(job)
            return batch

    def _work(self) -> None:
        """Batches, and a long comment's slices with one batch of the others between two of them."""
        while True:
            sliced = self._sliced
            batch = self._collect(wait=sliced is None, short_only=sliced is not None)
            if sliced is not None and not batch and self._wait_for_quick():
                batch = self._collect(wait=False, short_only=True)
            if sliced is None:
                if not batch:
                    return
                if self.slices is not None and len(batch) == 1 and batch[0].shape.tokens > self.max_batch_tokens:
                    self._begin_slices(batch[0])
                    continue
            if batch:
                self._run_batch(batch)
            if self._sliced is not None:
                self._next_slice(self._sliced)

    def _idle(self) -> None:
        """Run `on_idle` with the lock released (called with it held, from `_collect`)."""
        assert self.on_idle is not None
        self._idled, self._idle_since_work = time.monotonic(), True
        self._cond.release()
        try:
            self.on_idle()
        except Exception:
            log.exception("the idle callback failed")
        finally:
            self._cond.acquire()

    def _wait_for_quick(self) -> bool:
        """Wait (at most `QUICK_WAIT` s) while the quick thread measures a small request; whether it was.

        Before a long comment's next slice: a small request that came during the last one and is being
        measured now runs next, not after one more slice.
        """
        deadline = time.monotonic() + QUICK_WAIT
        with self._cond:
            busy = self._quick_busy
            while self._quick_busy and (left := deadline - time.monotonic()) > 0:
                self._cond.wait(left)
        return busy

    def _run_batch(self, batch: list[Job]) -> None:
        started = time.monotonic()
        results = self._run_isolated([j.payload for j in batch])
        finished = time.monotonic()
        self._observe(len(batch), finished - started)
        self._report(BatchStats(len(batch), padded_tokens([j.shape for j in batch]), finished - started,
                                len({id(j.group) for j in batch})))
        for job, result in zip(batch, results):
            if isinstance(result, BaseException):
                job.future.set_exception(result)
            else:
                job.future.set_result(Done(result, job.arrived, started, finished))

    def _begin_slices(self, job: Job) -> None:
        """Start a comment over the budget: its slices are prepared, none runs yet."""
        assert self.slices is not None
        sliced = Sliced(job, self.slices(job.payload, self.max_batch_tokens), started=time.monotonic())
        try:
            sliced.tokens = next(sliced.steps)
        except Exception as err:  # noqa: BLE001 - the comment fails alone
            log.exception("preparing a long comment's slices failed")
            job.future.set_exception(err)
            return
        with self._cond:
            self._sliced = sliced

    def _next_slice(self, sliced: Sliced) -> None:
        """Run one slice of the comment being sliced; answer it after its last (or drop it: its client left)."""
        job, result, done = sliced.job, None, False
        if sliced.left:
            sliced.steps.close()
            result, done = CancelledError(), True
        else:
            tokens, started = sliced.tokens, time.monotonic()
            try:
                sliced.tokens = next(sliced.steps)
            except StopIteration as stop:
                result, done = stop.value, True
            except Exception as err:  # noqa: BLE001 - the comment fails alone
                log.exception("a slice of a long comment failed")
                result, done = err, True
            seconds = time.monotonic() - started
            sliced.seconds += seconds
            # Each slice counts as a batch of its tokens; the comment counts once, with its last slice (a
            # turn of 0 tokens after it, merging and decoding, is no forward pass: not a batch).
            if tokens:
                self._report(BatchStats(1 if done or not sliced.tokens else 0, tokens, seconds, 1))
        if not done:
            return
        with self._cond:
            self._sliced = None
        finished = time.monotonic()
        if isinstance(result, BaseException):
            job.future.set_exception(result)
        else:
            self._observe(1, sliced.seconds)
            job.future.set_result(Done(result, job.arrived, sliced.started, finished))

    def _observe(self, comments: int, seconds: float) -> None:
        """Fold a batch into the recent rate of comments per second (for Retry-After)."""
        if seconds > 0:
            rate = comments / seconds
            self._rate = 0.8 * self._rate + 0.2 * rate if self._rate else rate

    def _report(self, stats: BatchStats) -> None:
        # Counted before any answer leaves: a client that reads /metrics after its answer sees its batch.
        if self.on_batch is not None:
            try:
                self.on_batch(stats)
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
