"""The routes: scoring (`/v1…`, `/v1alpha1/…`), probes, `/info`, `/metrics`, the schema and the pages.

Example:
    >>> from kold_span.service.lifecycle import Service
    >>> from kold_span.service.settings import Settings
    >>> shown = service_info(Service(Settings(), load=lambda: None))
    >>> shown["state"], shown["limits"]["max_queue"], shown["access"]["api_keys"]
    ('loading', 1024, False)
"""
from __future__ import annotations

import base64
import hashlib
import re
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Optional

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool

from kold_span.data.jsonl import json_text
from kold_span.errors import RequestError
from kold_span.service.admission import check_perspective_for, read_body, require_room, score
from kold_span.service.attributes import analyze_response, check_analyze
from kold_span.service.discovery import VERSION, discovery_document
from kold_span.service.feedback import FeedbackFile, suggestion
from kold_span.service.lifecycle import Service, versions
from kold_span.service.middleware import REQUEST_ID
from kold_span.service.model import Item
from kold_span.service.requests import analyze_request, parse_json, predict_request, upload_examples
from kold_span.text.align import utf16_units

STATIC = Path(__file__).parent / "static"
PAGE = STATIC / "index.html"
ROUTES = ("/", "/$discovery/rest", "/health", "/livez", "/readyz", "/info", "/metrics", "/openapi.json", "/docs",
          "/v1/predict", "/v1/predict/file", "/v1alpha1/comments:analyze", "/v1alpha1/comments:suggestscore")


OFFSETS = ("code-points", "utf-16")  # how /v1/predict counts span offsets (?offsets=)


def in_utf16(record: dict[str, Any]) -> dict[str, Any]:
    """A prediction record with its spans' `start`/`end` in UTF-16 code units (JavaScript's string indices).

    Example:
        >>> in_utf16({"text": "😀 바보", "spans": [{"start": 2, "end": 4}]})["spans"]
        [{'start': 3, 'end': 5}]
    """
    units = utf16_units(record["text"])
    return {**record, "spans": [{**s, "start": units[s["start"]], "end": units[s["end"]]} for s in record["spans"]]}


def service_info(service: Service) -> dict[str, Any]:
    """What `/info` says: the model's identity, tasks, attributes, encoder, every limit, access, versions.

    No path of the server's disk is shown."""
    s, ring = service.settings, service.access.ring
    out: dict[str, Any] = {
        "ready": service.ready, "state": service.state(), "device": s.device,
        "model": asdict(service.identity) if service.identity else None,
        "limits": {**asdict(s.limits), "max_queue": s.max_queue, "max_client_queue": s.client_queue(),
                   "max_request_tokens": s.max_request_tokens,
                   "max_comment_tokens": s.max_comment_tokens,
                   "max_headers": s.max_headers, **asdict(s.connections)},
        "batching": {"max_batch_tokens": s.max_batch_tokens, "max_wait_ms": s.max_wait_ms,
                     "order": "requests take turns, fewest characters waiting first"},
        "access": {"api_keys": ring is not None, **(ring.describe() if ring else {}),
                   "cors_origins": list(s.cors_origins), "allowed_hosts": list(s.allowed_hosts)},
        "feedback": {"enabled": s.feedback_file is not None, "max_bytes": s.feedback_max_bytes,
                     "key_share": s.feedback_key_share, "max_request_bytes": s.feedback_max_request_bytes},
        "versions": versions(),
    }
    if service.model is not None and service.attributes is not None:
        out.update(service.model.describe())
        out["attributes"] = {name: a.describe() for name, a in service.attributes.attributes.items()}
        out["languages"] = service.attributes.languages
    return out


def page_headers(html: str) -> dict[str, str]:
    """The security headers of a page of ours: its own inline script and style only (by hash), requests to this
    service only, never framed (clickjacking), no type sniffing, no referrer sent elsewhere.

    Example:
        >>> policy = page_headers("<style>b{}</style><script>f()</script>")["Content-Security-Policy"]
        >>> policy.split("; ")[:2]
        ["default-src 'none'", "script-src 'sha256-GcEEE0IkDzIP5EQ6DXZaDPORqT5RTBELX8Fyzyg9yvo='"]
    """
    def hashes(tag: str) -> str:
        found = re.findall(f"<{tag}>(.*?)</{tag}>", html, re.S)
        return " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(x.encode()).digest()).decode()}'" for x in found)

    policy = {"default-src": "'none'", "script-src": hashes("script") or "'none'",
              # blob: the upload's answer, offered as a download from memory
              "style-src": hashes("style") or "'none'", "connect-src": "'self' blob:", "img-src": "'self' data:",
              "base-uri": "'none'", "form-action": "'none'", "frame-ancestors": "'none'"}
    return {"Content-Security-Policy": "; ".join(f"{k} {v}" for k, v in policy.items()), "X-Frame-Options": "DENY",
            "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def list_get_routes_once(app: FastAPI) -> None:
    """The schema with GET routes listed once (HEAD mirrors each; listed too it repeats operation ids)."""
    describe = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                schema = describe()
            for operations in schema.get("paths", {}).values():
                operations.pop("head", None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def add_routes(app: FastAPI, service: Service) -> None:
    """Every route of `ROUTES` on `app`, each GET one answering HEAD too."""
    settings, access = service.settings, service.access
    limits = settings.limits
    feedback = FeedbackFile(settings.feedback_file, settings.feedback_max_bytes, settings.feedback_key_share,
                            settings.feedback_max_request_bytes) if settings.feedback_file else None
    page_html = PAGE.read_text(encoding="utf-8")
    docs_html = (STATIC / "docs.html").read_text(encoding="utf-8")
    list_get_routes_once(app)

    def get(path: str, **options: Any) -> Callable:
        return app.api_route(path, methods=["GET", "HEAD"], **options)

    page_security, docs_security = page_headers(page_html), page_headers(docs_html)

    @get("/", response_class=HTMLResponse, include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse(page_html, headers=page_security)

    @get("/docs", response_class=HTMLResponse, include_in_schema=False)
    async def docs() -> HTMLResponse:
        """The API's routes from /openapi.json, on a page that loads nothing from elsewhere."""
        return HTMLResponse(docs_html, headers=docs_security)

    @get("/$discovery/rest", include_in_schema=False)
    async def discovery(request: Request, version: str = VERSION) -> JSONResponse:
        """Perspective's discovery document, with this service as its rootUrl (for Google's API clients)."""
        if version != VERSION:
            raise RequestError(404, f"version: only {VERSION} is described here, got {version[:40]!r}", "version")
        return JSONResponse(discovery_document(str(request.base_url)),
                            headers={"Cache-Control": "no-store", "Vary": "Host"})  # its rootUrl is the Host's

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
        return JSONResponse(service_info(service))

    @get("/metrics", summary="Prometheus metrics: requests, latency, queue, batches, keys, the process")
    async def metrics() -> Response:
        return Response(service.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    @app.post("/v1/predict", summary="Comments in, what `kold-span predict` writes out, per comment")
    async def predict(request: Request, offsets: str = "code-points") -> JSONResponse:
        key = access.authorize(request)
        if offsets not in OFFSETS:
            raise RequestError(422, f"offsets: {offsets[:40]!r}; expected one of {', '.join(OFFSETS)}", "offsets")
        require_room(service)
        body = await read_body(request, limits.max_bytes)
        parsed = await run_in_threadpool(lambda: predict_request(parse_json(body), limits))  # off the event loop
        check_perspective_for(service, parsed.perspective)
        access.check_quota(key, len(parsed.examples))
        records = await score(service, request, [Item(e, parsed.perspective) for e in parsed.examples])
        access.charge(key, len(records))
        if offsets == "utf-16":
            records = [in_utf16(r) for r in records]
        return JSONResponse({"predictions": records})

    @app.post("/v1/predict/file", summary="An uploaded .txt/.csv/.tsv/.jsonl file, answered as predict's JSONL")
    async def predict_file(request: Request, filename: str, text_column: Optional[str] = None,
                           context_column: Optional[str] = None, id_column: Optional[str] = None,
                           quoting: str = "csv") -> Response:
        key = access.authorize(request)
        require_room(service)
        data = await read_body(request, limits.max_bytes)
        examples = await run_in_threadpool(upload_examples, filename, data, limits, text_column or None,
                                           context_column or None, id_column or None, quoting)
        access.check_quota(key, len(examples))
        records = await score(service, request, [Item(e) for e in examples])
        access.charge(key, len(records))
        lines = "".join(json_text(r) + "\n" for r in records)
        return Response(lines, media_type="application/x-ndjson")

    @app.post("/v1alpha1/comments:analyze", summary="Perspective's AnalyzeComment")
    async def analyze(request: Request) -> JSONResponse:
        key = access.authorize(request)
        require_room(service)
        body = await read_body(request, limits.max_bytes)
        parsed = await run_in_threadpool(lambda: analyze_request(parse_json(body), limits))
        assert service.attributes is not None
        languages = check_analyze(parsed, service.attributes)
        access.check_quota(key, 1)
        [record] = await score(service, request, [Item(parsed.example)])
        answer = analyze_response(parsed, record, service.attributes, languages)
        access.charge(key, 1)
        return JSONResponse(answer)

    @app.post("/v1alpha1/comments:suggestscore", summary="Perspective's SuggestCommentScore: a moderator's "
                                                          "corrected labels and spans, kept as training data")
    async def suggest(request: Request) -> JSONResponse:
        key = access.authorize(request)
        if feedback is None:
            raise RequestError(404, "suggestscore is off: start the service with --feedback FILE", "path")
        if service.attributes is None or service.identity is None:
            raise RequestError(503, "the model is still loading; GET /readyz says 200 once it is ready", "model")
        data = await read_body(request, limits.max_bytes)
        example, token = await run_in_threadpool(lambda: suggestion(parse_json(data), limits, service.attributes,
                                                                    key.name if key else "anonymous"))
        access.check_quota(key, 1)
        await run_in_threadpool(feedback.append, example, {"model_sha256": service.identity.sha256,
                                                           "request_id": REQUEST_ID.get()})
        access.charge(key, 1)
        return JSONResponse({"clientToken": token} if token is not None else {})
