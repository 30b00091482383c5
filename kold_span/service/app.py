"""The FastAPI app: routes, the model behind its batcher, errors as JSON, timing headers and metrics.

Routes: `POST /v1/predict` (what `kold-span predict` writes, per comment), `POST /v1/predict/file`
(an uploaded input file, answered as predict's JSONL), `POST /v1alpha1/comments:analyze`
(Perspective's AnalyzeComment), `GET /health`, `GET /info`, `GET /metrics` and `GET /` (the page).

The model loads on a thread when the app starts; `/health` says 503 until it has answered a
warm-up batch. Every refusal is `{"error": {"code", "status", "message", "field"}}`, the shape of
Google's API errors with the offending field added.
"""
from __future__ import annotations

import asyncio
import functools
import json
import logging
import platform
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from http import HTTPStatus
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from kold_span.data.example import Example
from kold_span.data.perspectives import check_perspective
from kold_span.service.attributes import (AttributeMap, analyze_response, check_analyze, default_attributes,
                                          load_attributes)
from kold_span.service.batching import Batcher, BatchStats, Closed, Done, QueueFull
from kold_span.service.metrics import ServiceMetrics
from kold_span.service.model import Item, ServedModel
from kold_span.service.requests import (Limits, RequestError, analyze_request, parse_json, predict_request,
                                        upload_examples)

log = logging.getLogger(__name__)

PAGE = Path(__file__).parent / "static" / "index.html"
ROUTES = ("/", "/health", "/info", "/metrics", "/v1/predict", "/v1/predict/file", "/v1alpha1/comments:analyze")
WARM_UP = Example(id="warm-up", text="모델 예열용 댓글입니다", context="예열")
TIMING = "kold_span.timing"  # the scope key where handlers leave their queue and inference seconds


@dataclass(frozen=True)
class Settings:
    """What `kold-span serve` configures: limits, batching and the attribute mapping."""

    limits: Limits = field(default_factory=Limits)
    max_batch_tokens: int = 8192
    max_wait_ms: float = 5.0
    max_queue: int = 1024
    attributes_file: Optional[str] = None
    models: tuple[str, ...] = ()  # for /info
    device: str = "cpu"


class Service:
    """The model, its batcher and attribute mapping, and whether it is ready; shared by the routes."""

    def __init__(self, settings: Settings, load: Callable[[], Any]):
        self.settings, self.load = settings, load
        self.metrics = ServiceMetrics()
        self.model: Optional[ServedModel] = None
        self.batcher: Optional[Batcher] = None
        self.attributes: Optional[AttributeMap] = None
        self.ready = False
        self.draining = False
        self.failure: Optional[BaseException] = None
        self.on_failure: Callable[[BaseException], None] = lambda err: None

    # -- life cycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Load the model on a thread; `ready` turns true after the warm-up batch."""
        threading.Thread(target=self._load, name="kold-span-loader", daemon=True).start()

    def _load(self) -> None:
        try:
            started = time.monotonic()
            model = ServedModel(self.load())
            file = self.settings.attributes_file
            self.attributes = load_attributes(file, model.tasks) if file else default_attributes(model.tasks)
            self.model = model
            batcher = Batcher(model.run, model.shapes, self.settings.max_batch_tokens,
                              self.settings.max_wait_ms / 1000, self.settings.max_queue, self._observe_batch)
            batcher.start()
            self.batcher = batcher
            self.metrics.watch_queue(lambda: batcher.queued)
            batcher.submit([Item(WARM_UP)])[0].result()
            self.ready = True
            log.info("model ready after %.1f s (warm-up batch answered)", time.monotonic() - started)
        except BaseException as err:
            log.exception("the model could not be loaded")
            self.failure = err
            self.on_failure(err)

    def close(self, timeout: Optional[float] = None) -> None:
        """Refuse new work, finish the queued comments, stop the batcher."""
        self.draining = True
        if self.batcher is not None and not self.batcher.close(timeout):
            log.warning("the batcher did not finish within %s s", timeout)

    def _observe_batch(self, stats: BatchStats) -> None:
        self.metrics.batch(stats.comments, stats.tokens, stats.seconds)

    # -- used by the routes -----------------------------------------------------------------
    def require_room(self) -> None:
        """503 while loading or draining, 429 when the queue is already full (before reading the body)."""
        if self.draining or self.batcher is None or not self.ready:
            reason = "shutting_down" if self.draining else "loading"
            self.metrics.rejected(reason)
            raise RequestError(503, "the service is shutting down" if self.draining
                               else "the model is still loading; GET /health says 200 once it is ready", "model")
        if not self.batcher.has_room():
            self.metrics.rejected("queue_full")
            raise RequestError(429, f"{self.batcher.queued} comments are waiting and the queue holds "
                                    f"{self.batcher.max_queue} (--max-queue)", "comments")

    def check_perspective(self, perspective: Optional[dict[str, Any]]) -> None:
        """422 for annotator traits the model does not read."""
        if perspective is None:
            return
        assert self.model is not None
        conditioned = self.model.perspective
        if not conditioned:
            raise RequestError(422, "perspective: this model was not trained annotator-conditioned "
                                    "(data.perspective); it cannot take a perspective", "perspective")
        try:
            check_perspective(perspective, conditioned["traits"])
        except ValueError as err:
            raise RequestError(422, str(err), "perspective") from None

    async def score(self, request: Request, items: list[Item]) -> list[dict[str, Any]]:
        """The items' prediction records, through the batcher; queue and model times go to the headers."""
        assert self.batcher is not None
        try:
            futures = self.batcher.submit(items)
        except QueueFull as err:
            self.metrics.rejected("queue_full")
            raise RequestError(429, str(err), "comments") from None
        except Closed as err:
            self.metrics.rejected("shutting_down")
            raise RequestError(503, str(err), "model") from None
        if len(futures) == 1:  # the usual request: spare it a gather
            done: list[Done] = [await asyncio.wrap_future(futures[0])]
        else:
            done = await asyncio.gather(*(asyncio.wrap_future(f) for f in futures))
        first = min(d.started for d in done)
        timing = request.scope.get(TIMING)
        if timing is not None:
            timing["queue"] = first - done[0].arrived
            timing["inference"] = max(d.finished for d in done) - first
        for d in done:
            self.metrics.queue_seconds.observe(d.started - d.arrived)
        return [d.value for d in done]

    def info(self) -> dict[str, Any]:
        """What `/info` says: tasks, attributes, encoder, limits, batching, versions."""
        s = self.settings
        out: dict[str, Any] = {
            "ready": self.ready, "models": list(s.models), "device": s.device,
            "limits": {**asdict(s.limits), "max_queue": s.max_queue},
            "batching": {"max_batch_tokens": s.max_batch_tokens, "max_wait_ms": s.max_wait_ms},
            "versions": versions(),
        }
        if self.model is not None and self.attributes is not None:
            out.update(self.model.describe())
            out["attributes"] = {name: a.describe() for name, a in self.attributes.attributes.items()}
            out["languages"] = self.attributes.languages
        return out


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


def error_response(status: int, message: str, field: str = "body", retry_after: Optional[int] = None) -> JSONResponse:
    """`{"error": {"code", "status", "message", "field"}}` with the HTTP status (and Retry-After on 429/503)."""
    name = {400: "INVALID_ARGUMENT", 422: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE",
            500: "INTERNAL"}.get(status) or HTTPStatus(status).name
    headers = {"Retry-After": str(retry_after or 1)} if status in (429, 503) else None
    return JSONResponse({"error": {"code": status, "status": name, "message": message, "field": field}},
                        status_code=status, headers=headers)


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The body, refused with 413 as soon as it passes `max_bytes` (declared or streamed)."""
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


class Observe:
    """ASGI middleware: timing headers on every answer, and each request counted by route and status."""

    def __init__(self, app: Any, metrics: ServiceMetrics):
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        timing = scope[TIMING] = {"queue": 0.0, "inference": 0.0}
        status = 500

        async def send_with_headers(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [
                    *message.get("headers", []),
                    (b"x-queue-time", f"{timing['queue'] * 1000:.1f}".encode()),
                    (b"x-inference-time", f"{timing['inference'] * 1000:.1f}".encode())]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        finally:
            route = scope.get("path", "") if scope.get("path") in ROUTES else "other"
            self.metrics.answered(route, status, time.perf_counter() - started)


def create_app(settings: Settings, load: Callable[[], Any]) -> FastAPI:
    """The app; `load` returns the predictor (called on a thread at startup).

    Example:
        >>> app = create_app(Settings(), load=lambda: None)
        >>> sorted(r.path for r in app.routes if r.path in ROUTES) == sorted(ROUTES)
        True
    """
    service = Service(settings, load)
    limits = settings.limits
    page_html = PAGE.read_text(encoding="utf-8")

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        service.start()
        yield
        await run_in_threadpool(service.close, 60.0)

    app = FastAPI(title="kold-span", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = service
    app.add_middleware(Observe, metrics=service.metrics)

    @app.exception_handler(RequestError)
    async def refused(request: Request, err: RequestError) -> JSONResponse:
        if err.status == 413:
            service.metrics.rejected("too_large")
        elif err.status in (400, 422):
            service.metrics.rejected("invalid")
        retry = service.batcher.retry_after(service.batcher.queued) if service.batcher is not None else 1
        return error_response(err.status, err.message, err.field, retry)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException) -> JSONResponse:
        return error_response(err.status_code, f"{request.method} {request.url.path}: {err.detail}", "path")

    @app.exception_handler(RequestValidationError)
    async def bad_parameter(request: Request, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0]
        name = str(first["loc"][-1]) if first.get("loc") else "query"
        service.metrics.rejected("invalid")
        return error_response(422, f"{name}: {first.get('msg', 'invalid')}", name)

    @app.get("/", response_class=HTMLResponse)
    async def page() -> HTMLResponse:
        return HTMLResponse(page_html)

    @app.get("/health")
    async def health() -> JSONResponse:
        if service.ready and not service.draining:
            return JSONResponse({"status": "ok"})
        state = "failed" if service.failure else "draining" if service.draining else "loading"
        return JSONResponse({"status": state}, status_code=503, headers={"Retry-After": "1"})

    @app.get("/info")
    async def info() -> JSONResponse:
        return JSONResponse(service.info())

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(service.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    @app.post("/v1/predict")
    async def predict(request: Request) -> JSONResponse:
        service.require_room()
        parsed = predict_request(parse_json(await read_body(request, limits.max_bytes)), limits)
        service.check_perspective(parsed.perspective)
        records = await service.score(request, [Item(e, parsed.perspective) for e in parsed.examples])
        return JSONResponse({"predictions": records})

    @app.post("/v1/predict/file")
    async def predict_file(request: Request, filename: str, text_column: Optional[str] = None,
                           context_column: Optional[str] = None, id_column: Optional[str] = None,
                           quoting: str = "csv") -> Response:
        service.require_room()
        data = await read_body(request, limits.max_bytes)
        examples = await run_in_threadpool(upload_examples, filename, data, limits, text_column or None,
                                           context_column or None, id_column or None, quoting)
        records = await service.score(request, [Item(e) for e in examples])
        lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        return Response(lines, media_type="application/x-ndjson")

    @app.post("/v1alpha1/comments:analyze")
    async def analyze(request: Request) -> JSONResponse:
        service.require_room()
        parsed = analyze_request(parse_json(await read_body(request, limits.max_bytes)), limits)
        assert service.attributes is not None
        check_analyze(parsed, service.attributes)
        [record] = await service.score(request, [Item(parsed.example)])
        return JSONResponse(analyze_response(parsed, record, service.attributes))

    return app
