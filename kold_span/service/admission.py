"""Whether a request gets in: room in the queue, a body within its size, a perspective the model reads; then
its comments through the batcher, taken back out if the client leaves.

Example:
    >>> from kold_span.service.lifecycle import Service
    >>> from kold_span.service.settings import Settings
    >>> require_room(Service(Settings(), load=lambda: None))
    Traceback (most recent call last):
    ...
    kold_span.errors.RequestError: the model is still loading; GET /readyz says 200 once it is ready
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Optional

from starlette.requests import ClientDisconnect, Request

from kold_span.data.perspectives import check_perspective
from kold_span.errors import Closed, CommentTooLarge, QueueFull, RequestError, RequestTooLarge
from kold_span.service.batching import Done
from kold_span.service.lifecycle import Service
from kold_span.service.middleware import KEY_NAME, TIMING
from kold_span.service.model import Item

log = logging.getLogger(__name__)
# A full queue's 429 details ("busy"), apart from a key's RATE_LIMIT_EXCEEDED or QUOTA_EXCEEDED.
QUEUE_FULL = [{"errorType": "QUEUE_FULL"}]


def require_room(service: Service) -> None:
    """503 while loading or once the batcher is closed, 429 when the queue is already full (before reading
    the body). Draining alone refuses nothing: requests a load balancer still sends are answered."""
    batcher = service.batcher
    if batcher is None or not service.ready or (service.draining and not batcher.has_room()):
        service.metrics.rejected("shutting_down" if service.draining else "loading")
        raise RequestError(503, "the service is shutting down" if service.draining
                           else "the model is still loading; GET /readyz says 200 once it is ready", "model")
    if not batcher.has_room():
        service.metrics.rejected("queue_full")
        raise RequestError(429, f"{batcher.queued} comments are waiting and the queue holds "
                                f"{batcher.max_queue} (--max-queue)", "comments", QUEUE_FULL)


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The body, refused with 413 as soon as it passes `max_bytes` (declared or streamed), and with 415 before
    it is read when it is multipart (a form's upload would otherwise be read as the comments themselves)."""
    kind = request.headers.get("content-type", "").lower()
    if kind.startswith("multipart/"):
        raise RequestError(415, "body: multipart bodies are not read; send the JSON, or the file's bytes as the "
                                "whole body (curl --data-binary @comments.csv)", "body")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise RequestError(413, f"body: {declared} bytes, over the limit of {max_bytes} (--max-bytes)")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise RequestError(413, f"body: over the limit of {max_bytes} bytes (--max-bytes)")
        chunks.append(chunk)
    return b"".join(chunks)


def check_perspective_for(service: Service, perspective: Optional[dict[str, Any]]) -> None:
    """422 for annotator traits the model does not read."""
    if perspective is None:
        return
    assert service.model is not None
    conditioned = service.model.predictor.settings.perspective  # {"label", "traits"} of an annotator-conditioned model
    if not conditioned:
        raise RequestError(422, "perspective: this model was not trained annotator-conditioned "
                                "(data.perspective); it cannot take a perspective", "perspective")
    try:
        check_perspective(perspective, conditioned["traits"])
    except ValueError as err:
        raise RequestError(422, str(err), "perspective") from None


def client_of(request: Request) -> Optional[str]:
    """Who a request is, for its share of the queue: its API key's name, else its address (the proxy's
    `X-Forwarded-For` only from `--trusted-proxies`), else None."""
    name = request.scope.get(KEY_NAME)
    if name:
        return f"key:{name}"
    return f"address:{request.client.host}" if request.client else None


async def score(service: Service, request: Request, items: list[Item]) -> list[dict[str, Any]]:
    """The items' prediction records, through the batcher; queue and model times go to the headers.

    If the client disconnects while its comments wait, those still queued are taken out (none
    computed for nobody) and `ClientDisconnect` is raised.
    """
    batcher, metrics = service.batcher, service.metrics
    assert batcher is not None
    try:
        futures = batcher.submit(items, client=client_of(request))
    except QueueFull as err:
        metrics.rejected("queue_full")
        raise RequestError(429, str(err), "comments", QUEUE_FULL) from None
    except Closed as err:
        metrics.rejected("shutting_down")
        raise RequestError(503, str(err), "model") from None
    waiting = asyncio.gather(*(asyncio.wrap_future(f) for f in futures))
    waiting.add_done_callback(lambda f: f.cancelled() or f.exception())  # read, so never "unretrieved"
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({waiting, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if not waiting.done():
        dropped = batcher.cancel(futures)
        waiting.cancel()
        metrics.cancelled.inc(dropped)
        metrics.rejected("client_gone")
        log.info("the client left; %d of its %d comments were taken out of the queue", dropped, len(futures))
        raise ClientDisconnect()
    try:
        done: list[Done] = waiting.result()
    except (RequestTooLarge, CommentTooLarge) as err:
        metrics.rejected("too_large")
        raise RequestError(413, str(err), "comments") from None
    first = min(d.started for d in done)
    timing = request.scope.get(TIMING)
    if timing is not None:
        timing["queue"] = first - done[0].arrived
        timing["inference"] = max(d.finished for d in done) - first
    for d in done:
        metrics.queue_seconds.observe(d.started - d.arrived)
    return [d.value for d in done]


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone (the body is read by then; what comes next is the disconnect)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
