"""The FastAPI app: routes, the model behind its batcher, errors as JSON, keys, probes and metrics.

Routes: `POST /v1/predict` (what `kold-span predict` writes, per comment), `POST /v1/predict/file`
(an uploaded input file, answered as predict's JSONL), `POST /v1alpha1/comments:analyze`
(Perspective's AnalyzeComment), `GET /livez` (the process answers), `GET /readyz` and `GET /health`
(the model is warm and the service not draining), `GET /info`, `GET /metrics`, `GET /openapi.json`,
`GET /docs` and `GET /` (the page). Every GET route answers HEAD too.

The model loads on a thread when the app starts; `/readyz` says 503 until it has answered a
warm-up batch, and 503 `draining` from SIGTERM on. Every refusal is
`{"error": {"code", "status", "message", "field", "requestId"}}`, the shape of Google's API errors
with the offending field and the request id added. With `--api-keys`, the scoring routes (`/v1…`)
need a key (see `keys`); the probes, `/info`, `/metrics` and the pages do not.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import platform
import threading
import time
import warnings
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect

from kold_span.data.example import Example
from kold_span.data.jsonl import json_text
from kold_span.data.perspectives import check_perspective
from kold_span.errors import (Closed, CommentTooLarge, KoldSpanError, QueueFull, RequestError, RequestTooLarge,
                              Throttled)
from kold_span.service.attributes import (AttributeMap, analyze_response, check_analyze, default_attributes,
                                          load_attributes)
from kold_span.service.batching import Batcher, BatchStats, Done
from kold_span.service.feedback import FeedbackFile, suggestion
from kold_span.service.keys import ApiKey, KeyRing
from kold_span.service.metrics import ServiceMetrics
from kold_span.service.middleware import (CLIENT_GONE, KEY_NAME, TIMING, Front, FrontSettings, REQUEST_ID,
                                          error_body)
from kold_span.service.model import Item, ModelIdentity, ServedModel
from kold_span.service.requests import Limits, analyze_request, parse_json, predict_request, upload_examples
from kold_span.service.server import ConnectionLimits

log = logging.getLogger(__name__)
# A full queue's 429 details ("busy"), apart from a key's RATE_LIMIT_EXCEEDED or QUOTA_EXCEEDED.
QUEUE_FULL = [{"errorType": "QUEUE_FULL"}]

STATIC = Path(__file__).parent / "static"
PAGE = STATIC / "index.html"
ROUTES = ("/", "/health", "/livez", "/readyz", "/info", "/metrics", "/openapi.json", "/docs", "/v1/predict",
          "/v1/predict/file", "/v1alpha1/comments:analyze", "/v1alpha1/comments:suggestscore")
WARM_UP = Example(id="warm-up", text="모델 예열용 댓글입니다", context="예열")
EXPOSED = ("x-request-id", "x-model", "x-queue-time", "x-inference-time", "retry-after")


@dataclass(frozen=True)
class Settings:
    """What `kold-span serve` configures: limits, batching, access and the attribute mapping."""

    limits: Limits = field(default_factory=Limits)
    max_batch_tokens: int = 8192
    max_request_tokens: int = 65536
    max_comment_tokens: Optional[int] = None
    max_wait_ms: float = 5.0
    max_queue: int = 1024
    max_headers: int = 100
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)
    attributes_file: Optional[str] = None
    models: tuple[str, ...] = ()  # the directories: hashed for the model's identity, never shown
    model_name: Optional[str] = None
    device: str = "cpu"
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    keys: Optional[KeyRing] = None
    access_log: Optional[str] = None  # None, "text" or "json"
    feedback_file: Optional[str] = None
    feedback_max_bytes: int = 100 * 1024 * 1024


class Service:
    """The model, its batcher and attribute mapping, and whether it is ready; shared by the routes."""

    def __init__(self, settings: Settings, load: Callable[[], Any]):
        self.settings, self.load = settings, load
        self.metrics = ServiceMetrics()
        self.model: Optional[ServedModel] = None
        self.identity: Optional[ModelIdentity] = None
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
        from kold_span.service.model import model_name

        try:
            started = time.monotonic()
            model = ServedModel(self.load())
            s, tasks = self.settings, model.predictor.tasks
            file = s.attributes_file
            self.attributes = load_attributes(file, tasks) if file else default_attributes(tasks)
            self.identity = ModelIdentity(s.model_name or model_name(s.models) or "unnamed",
                                          model.predictor.identity if s.models else "unknown",
                                          versions()["kold-span"])
            self.model = model
            batcher = Batcher(model.run, model.shapes, s.max_batch_tokens, s.max_wait_ms / 1000, s.max_queue,
                              self._observe_batch, max_request_tokens=s.max_request_tokens, size=model.size,
                              max_comment_tokens=s.max_comment_tokens)
            batcher.start()
            self.batcher = batcher
            self.metrics.watch_queue(lambda: batcher.queued)
            batcher.submit([Item(WARM_UP)])[0].result()
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

    def _observe_batch(self, stats: BatchStats) -> None:
        self.metrics.batch(stats.comments, stats.tokens, stats.seconds, stats.requests)

    def state(self) -> str:
        """ok, loading, draining or failed."""
        if self.failure is not None:
            return "failed"
        if self.draining:
            return "draining"
        return "ok" if self.ready else "loading"

    # -- used by the routes -----------------------------------------------------------------
    def authorize(self, request: Request) -> Optional[ApiKey]:
        """The caller's API key (None when the service has no keys); 401, 403 or 429 otherwise."""
        ring = self.settings.keys
        if ring is None:
            return None
        header = request.headers.get("authorization", "")
        presented = (header[7:].strip() if header[:7].lower() == "bearer " else None) \
            or request.headers.get("x-api-key") or request.query_params.get("key")
        try:
            key = ring.identify(presented)
        except RequestError as err:
            self.metrics.rejected("unauthenticated" if err.status == 401 else "forbidden")
            raise
        request.scope[KEY_NAME] = key.name
        try:
            ring.admit(key)
        except Throttled:
            self.metrics.rejected("rate_limited")
            self.metrics.keyed(key.name, 429)
            raise
        return key

    def charge(self, key: Optional[ApiKey], comments: int) -> None:
        """Count a request's comments against its key's daily quota."""
        if key is None or self.settings.keys is None:
            return
        try:
            self.settings.keys.charge(key, comments)
        except Throttled:
            self.metrics.rejected("quota")
            self.metrics.keyed(key.name, 429)
            raise
        self.metrics.keyed(key.name, 200, comments)

    def require_room(self) -> None:
        """503 while loading or once the batcher is closed, 429 when the queue is already full (before reading
        the body). Draining alone refuses nothing: requests a load balancer still sends are answered."""
        batcher = self.batcher
        if batcher is None or not self.ready or (self.draining and not batcher.has_room()):
            reason = "shutting_down" if self.draining else "loading"
            self.metrics.rejected(reason)
            raise RequestError(503, "the service is shutting down" if self.draining
                               else "the model is still loading; GET /readyz says 200 once it is ready", "model")
        if not batcher.has_room():
            self.metrics.rejected("queue_full")
            raise RequestError(429, f"{batcher.queued} comments are waiting and the queue holds "
                                    f"{batcher.max_queue} (--max-queue)", "comments", QUEUE_FULL)

    def check_perspective(self, perspective: Optional[dict[str, Any]]) -> None:
        """422 for annotator traits the model does not read."""
        if perspective is None:
            return
        assert self.model is not None
        conditioned = self.model.predictor.settings.perspective  # {"label", "traits"} of an annotator-conditioned model
        if not conditioned:
            raise RequestError(422, "perspective: this model was not trained annotator-conditioned "
                                    "(data.perspective); it cannot take a perspective", "perspective")
        try:
            check_perspective(perspective, conditioned["traits"])
        except ValueError as err:
            raise RequestError(422, str(err), "perspective") from None

    async def score(self, request: Request, items: list[Item]) -> list[dict[str, Any]]:
        """The items' prediction records, through the batcher; queue and model times go to the headers.

        If the client disconnects while its comments wait, those still queued are taken out (none
        computed for nobody) and `ClientDisconnect` is raised.
        """
        assert self.batcher is not None
        try:
            futures = self.batcher.submit(items)
        except QueueFull as err:
            self.metrics.rejected("queue_full")
            raise RequestError(429, str(err), "comments", QUEUE_FULL) from None
        except Closed as err:
            self.metrics.rejected("shutting_down")
            raise RequestError(503, str(err), "model") from None
        waiting = asyncio.gather(*(asyncio.wrap_future(f) for f in futures))
        waiting.add_done_callback(lambda f: f.cancelled() or f.exception())  # read, so never "unretrieved"
        gone = asyncio.ensure_future(_disconnected(request))
        try:
            await asyncio.wait({waiting, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if not waiting.done():
            dropped = self.batcher.cancel(futures)
            waiting.cancel()
            self.metrics.cancelled.inc(dropped)
            self.metrics.rejected("client_gone")
            log.info("the client left; %d of its %d comments were taken out of the queue", dropped, len(futures))
            raise ClientDisconnect()
        try:
            done: list[Done] = waiting.result()
        except (RequestTooLarge, CommentTooLarge) as err:
            self.metrics.rejected("too_large")
            raise RequestError(413, str(err), "comments") from None
        first = min(d.started for d in done)
        timing = request.scope.get(TIMING)
        if timing is not None:
            timing["queue"] = first - done[0].arrived
            timing["inference"] = max(d.finished for d in done) - first
        for d in done:
            self.metrics.queue_seconds.observe(d.started - d.arrived)
        return [d.value for d in done]

    def info(self) -> dict[str, Any]:
        """What `/info` says: the model's identity, tasks, attributes, encoder, every limit, access, versions.

        No path of the server's disk is shown."""
        s = self.settings
        out: dict[str, Any] = {
            "ready": self.ready, "state": self.state(), "device": s.device,
            "model": asdict(self.identity) if self.identity else None,
            "limits": {**asdict(s.limits), "max_queue": s.max_queue, "max_request_tokens": s.max_request_tokens,
                       "max_comment_tokens": s.max_comment_tokens,
                       "max_headers": s.max_headers, **asdict(s.connections)},
            "batching": {"max_batch_tokens": s.max_batch_tokens, "max_wait_ms": s.max_wait_ms,
                         "order": "requests take turns, fewest characters waiting first"},
            "access": {"api_keys": s.keys is not None, **(s.keys.describe() if s.keys else {}),
                       "cors_origins": list(s.cors_origins), "allowed_hosts": list(s.allowed_hosts)},
            "feedback": {"enabled": s.feedback_file is not None, "max_bytes": s.feedback_max_bytes},
            "versions": versions(),
        }
        if self.model is not None and self.attributes is not None:
            out.update(self.model.describe())
            out["attributes"] = {name: a.describe() for name, a in self.attributes.attributes.items()}
            out["languages"] = self.attributes.languages
        return out


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone (the body is read by then; what comes next is the disconnect)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


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


def error_response(status: int, message: str, field: str = "body", retry_after: Optional[int] = None,
                   details: Optional[list[dict[str, Any]]] = None,
                   headers: Optional[dict[str, str]] = None) -> JSONResponse:
    """The error body (`middleware.error_body`) with the HTTP status (and Retry-After on 429/503)."""
    headers = dict(headers or {})
    if status in (429, 503):
        headers["Retry-After"] = str(retry_after or 1)
    return JSONResponse(error_body(status, message, field, REQUEST_ID.get(), details), status_code=status,
                        headers=headers or None)


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


def create_app(settings: Settings, load: Callable[[], Any]) -> FastAPI:
    """The app; `load` returns the predictor (called on a thread at startup).

    Example:
        >>> app = create_app(Settings(), load=lambda: None)
        >>> sorted(r.path for r in app.routes if r.path in ROUTES) == sorted(ROUTES)
        True
    """
    service = Service(settings, load)
    limits = settings.limits
    feedback = FeedbackFile(settings.feedback_file, settings.feedback_max_bytes) if settings.feedback_file else None
    page_html = PAGE.read_text(encoding="utf-8")
    docs_html = (STATIC / "docs.html").read_text(encoding="utf-8")

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        service.start()
        yield
        service.draining = True
        await run_in_threadpool(service.close, 60.0)

    app = FastAPI(title="kold-span", version=versions().get("kold-span", ""), lifespan=lifespan, docs_url=None,
                  redoc_url=None, openapi_url="/openapi.json",
                  description="Offensive-language detection with character spans; see docs/SERVICE.md.")
    app.state.service = service
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins),
                           allow_methods=["GET", "HEAD", "POST", "OPTIONS"],
                           allow_headers=["content-type", "authorization", "x-api-key", "x-request-id"],
                           expose_headers=list(EXPOSED), max_age=600)
    app.add_middleware(Front, metrics=service.metrics,
                       settings=FrontSettings(ROUTES, settings.max_headers, settings.connections.max_header_bytes,
                                              settings.allowed_hosts, settings.access_log),
                       model_header=lambda: service.identity.header() if service.identity else None)

    @app.exception_handler(RequestError)
    async def refused(request: Request, err: RequestError) -> JSONResponse:
        if err.status == 422 and request.url.path.startswith("/v1alpha1/"):
            err.status = 400  # Perspective answers every malformed request 400 INVALID_ARGUMENT
        if err.status == 413:
            service.metrics.rejected("too_large")
        elif err.status in (400, 422):
            service.metrics.rejected("invalid")
        retry = getattr(err, "retry_after", None)
        if retry is None:
            retry = service.batcher.retry_after(service.batcher.queued) if service.batcher is not None else 1
        return error_response(err.status, err.message, err.field, retry, err.details)

    @app.exception_handler(ClientDisconnect)
    async def client_left(request: Request, err: ClientDisconnect) -> Response:
        return Response(status_code=CLIENT_GONE)  # nobody reads it; the status is what /metrics counts

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException) -> JSONResponse:
        return error_response(err.status_code, f"{request.method} {request.url.path[:200]}: {err.detail}", "path",
                              headers=err.headers)

    @app.exception_handler(RequestValidationError)
    async def bad_parameter(request: Request, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0]
        name = str(first["loc"][-1]) if first.get("loc") else "query"
        service.metrics.rejected("invalid")
        return error_response(422, f"{name}: {first.get('msg', 'invalid')}", name)

    def get(path: str, **options: Any) -> Callable:
        return app.api_route(path, methods=["GET", "HEAD"], **options)

    describe = app.openapi

    def openapi() -> dict[str, Any]:
        """The schema with GET routes listed once (HEAD mirrors each; listed too it repeats operation ids)."""
        if app.openapi_schema is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                schema = describe()
            for operations in schema.get("paths", {}).values():
                operations.pop("head", None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @get("/", response_class=HTMLResponse, include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse(page_html)

    @get("/docs", response_class=HTMLResponse, include_in_schema=False)
    async def docs() -> HTMLResponse:
        """The API's routes from /openapi.json, on a page that loads nothing from elsewhere."""
        return HTMLResponse(docs_html)

    @get("/livez", summary="Liveness: the process answers (200 whatever the model's state)")
    async def livez() -> JSONResponse:
        return JSONResponse({"status": "alive"})

    @get("/readyz", summary="Readiness: 200 once the model is warm, 503 loading, draining or failed")
    async def readyz() -> JSONResponse:
        state = service.state()
        if state == "ok":
            return JSONResponse({"status": "ok"})
        return JSONResponse({"status": state}, status_code=503, headers={"Retry-After": "1"})

    @get("/health", summary="The same as /readyz (kept for existing checks)")
    async def health() -> JSONResponse:
        return await readyz()

    @get("/info", summary="The model's identity, tasks, attributes, languages, limits, access and versions")
    async def info() -> JSONResponse:
        return JSONResponse(service.info())

    @get("/metrics", summary="Prometheus metrics: requests, latency, queue, batches, keys, the process")
    async def metrics() -> Response:
        return Response(service.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    @app.post("/v1/predict", summary="Comments in, what `kold-span predict` writes out, per comment")
    async def predict(request: Request) -> JSONResponse:
        key = service.authorize(request)
        service.require_room()
        parsed = predict_request(parse_json(await read_body(request, limits.max_bytes)), limits)
        service.check_perspective(parsed.perspective)
        service.charge(key, len(parsed.examples))
        records = await service.score(request, [Item(e, parsed.perspective) for e in parsed.examples])
        return JSONResponse({"predictions": records})

    @app.post("/v1/predict/file", summary="An uploaded .txt/.csv/.tsv/.jsonl file, answered as predict's JSONL")
    async def predict_file(request: Request, filename: str, text_column: Optional[str] = None,
                           context_column: Optional[str] = None, id_column: Optional[str] = None,
                           quoting: str = "csv") -> Response:
        key = service.authorize(request)
        service.require_room()
        data = await read_body(request, limits.max_bytes)
        examples = await run_in_threadpool(upload_examples, filename, data, limits, text_column or None,
                                           context_column or None, id_column or None, quoting)
        service.charge(key, len(examples))
        records = await service.score(request, [Item(e) for e in examples])
        lines = "".join(json_text(r) + "\n" for r in records)
        return Response(lines, media_type="application/x-ndjson")

    @app.post("/v1alpha1/comments:analyze", summary="Perspective's AnalyzeComment")
    async def analyze(request: Request) -> JSONResponse:
        key = service.authorize(request)
        service.require_room()
        parsed = analyze_request(parse_json(await read_body(request, limits.max_bytes)), limits)
        assert service.attributes is not None
        languages = check_analyze(parsed, service.attributes)
        service.charge(key, 1)
        [record] = await service.score(request, [Item(parsed.example)])
        return JSONResponse(analyze_response(parsed, record, service.attributes, languages))

    @app.post("/v1alpha1/comments:suggestscore", summary="Perspective's SuggestCommentScore: a moderator's "
                                                          "corrected labels and spans, kept as training data")
    async def suggest(request: Request) -> JSONResponse:
        key = service.authorize(request)
        if feedback is None:
            raise RequestError(404, "suggestscore is off: start the service with --feedback FILE", "path")
        if service.attributes is None or service.identity is None:
            raise RequestError(503, "the model is still loading; GET /readyz says 200 once it is ready", "model")
        body = parse_json(await read_body(request, limits.max_bytes))
        example, token = suggestion(body, limits, service.attributes, key.name if key else "anonymous")
        service.charge(key, 1)
        await run_in_threadpool(feedback.append, example, {"model_sha256": service.identity.sha256,
                                                           "request_id": REQUEST_ID.get()})
        return JSONResponse({"clientToken": token} if token is not None else {})

    return app
