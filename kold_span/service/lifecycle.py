"""The service's life: the model loaded on a thread, warmed up, served, then drained; what the routes share.

Example:
    >>> from kold_span.service.settings import Settings
    >>> Service(Settings(), load=lambda: None).state()
    'loading'
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import logging
import platform
import threading
import time
from contextlib import asynccontextmanager
from importlib import metadata
from typing import Any, AsyncIterator, Callable, Optional

from starlette.concurrency import run_in_threadpool

from kold_span.data.example import Example
from kold_span.errors import KoldSpanError
from kold_span.service.attributes import AttributeMap, default_attributes, load_attributes
from kold_span.service.batching import Batcher, BatchStats
from kold_span.service.keys import Access, KeyRing, load_keys
from kold_span.service.prometheus import ServiceMetrics
from kold_span.service.model import Item, ModelIdentity, ServedModel, model_name
from kold_span.service.settings import Settings

log = logging.getLogger(__name__)
# Korean and a disguised English word, so the tables a normalizing model reads (Kiwi's, the word lists) are
# loaded before the first request, and before `settle`.
WARM_UP = (Example(id="warm-up", text="모델 예열용 댓글입니다", context="예열"),
           Example(id="warm-up-latin", text="what a f*cking 1diot"))


def settle() -> int:
    """Move every object alive now out of the garbage collector's sight (`gc.freeze`); how many it holds.

    What the service loaded before its first request (the network, the tokenizer, Kiwi, the normalizer's
    word lists: ~400,000 objects for the demo model) lives as long as the process, yet each full collection
    walked all of it: ~200 ms with every thread stopped, every 1–2 s under load (a one-comment request
    beside a maximal one waited for it: p99 226 ms against 70 ms frozen, docs/SERVICE.md "Abuse"). Frozen, a
    full collection walks only what requests made since.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Optional[Callable[[int], int]]:
    """glibc's `malloc_trim`, or None where the C library has none (musl, macOS, Windows)."""
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None


def release_memory() -> bool:
    """Hand the heap's free pages back to the system (glibc's `malloc_trim`); whether it could.

    A maximal request's windows, tensors and answer take tens of megabytes for a moment; freed, they
    stay in the process's heap, so its RSS kept the high-water mark of every burst (1.18-1.22x after
    17,600 hostile requests; 1.13x trimmed when the queue drains, docs/SERVICE.md "Abuse"). A trim
    takes ~15 ms with much to give back, 0.5 ms without; the batcher calls it only when nothing waits.
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


class Service:
    """The model, its batcher and attribute mapping, the keys, and whether it is ready; shared by the routes."""

    def __init__(self, settings: Settings, load: Callable[[], Any]):
        self.settings, self.load = settings, load
        self.metrics = ServiceMetrics()
        s = settings
        self.access = Access(KeyRing(load_keys(s.api_keys), s.rate_limit, s.daily_quota) if s.api_keys else None,
                             self.metrics)
        self.model: Optional[ServedModel] = None
        self.identity: Optional[ModelIdentity] = None
        self.batcher: Optional[Batcher] = None
        self.attributes: Optional[AttributeMap] = None
        self.ready = False
        self.draining = False
        self.failure: Optional[BaseException] = None
        self.on_failure: Callable[[BaseException], None] = lambda err: None

    def start(self) -> None:
        """Load the model on a thread; `ready` turns true after the warm-up batch."""
        threading.Thread(target=self._load, name="kold-span-loader", daemon=True).start()

    def _load(self) -> None:
        try:
            started = time.monotonic()
            s = self.settings
            model = ServedModel(self.load(), s.max_batch_tokens)
            tasks = model.predictor.tasks
            file = s.attributes_file
            self.attributes = load_attributes(file, tasks) if file else default_attributes(tasks)
            self.identity = ModelIdentity(s.model_name or model_name(s.models) or "unnamed",
                                          model.predictor.identity if s.models else "unknown",
                                          versions()["kold-span"])
            self.model = model
            batcher = Batcher(model.run, model.shapes, s.max_batch_tokens, s.max_wait_ms / 1000, s.max_queue,
                              self._observe_batch, max_request_tokens=s.max_request_tokens, size=model.size,
                              max_comment_tokens=s.max_comment_tokens, max_client_queue=s.client_queue(),
                              slices=model.slices, on_idle=release_memory)
            batcher.start()
            self.batcher = batcher
            self.metrics.watch_queue(lambda: batcher.queued)
            for future in batcher.submit([Item(example) for example in WARM_UP]):
                future.result()
            log.debug("%d objects loaded moved out of the garbage collector's sight", settle())
            self.ready = True
            log.info("model %s ready after %.1f s (warm-up batch answered)", self.identity.header(),
                     time.monotonic() - started)
        except BaseException as err:
            if isinstance(err, KoldSpanError):  # a user's mistake: the command line says it in one line
                log.debug("the model could not be loaded", exc_info=True)
            else:
                log.exception("the model could not be loaded")
            self.failure = err
            self.on_failure(err)

    def close(self, timeout: Optional[float] = None) -> None:
        """Refuse new work, finish the queued comments, stop the batcher."""
        self.draining = True
        if self.batcher is not None and not self.batcher.close(timeout):
            log.warning("the batcher did not finish within %s s", timeout)

    @asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """The app's lifespan: load at startup; at shutdown, drain (queued comments get at most 60 s)."""
        self.start()
        yield
        self.draining = True
        await run_in_threadpool(self.close, 60.0)

    def _observe_batch(self, stats: BatchStats) -> None:
        self.metrics.batch(stats.comments, stats.tokens, stats.seconds, stats.requests)

    def state(self) -> str:
        """ok, loading, draining or failed."""
        if self.failure is not None:
            return "failed"
        if self.draining:
            return "draining"
        return "ok" if self.ready else "loading"


@functools.cache
def versions() -> dict[str, str]:
    """Versions of Python and the packages that decide what the service answers (read once)."""
    out = {"python": platform.python_version()}
    for name in ("kold-span", "torch", "transformers", "fastapi", "uvicorn"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out
