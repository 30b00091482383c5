"""The FastAPI app, assembled: `settings`, the model's `lifecycle`, the middleware, `handlers`, `routes`.

Routes: `POST /v1/predict` (what `kold-span predict` writes, per comment), `POST /v1/predict/file`
(an uploaded input file, answered as predict's JSONL), `POST /v1alpha1/comments:analyze`
(Perspective's AnalyzeComment), `GET /livez` (the process answers), `GET /readyz` and `GET /health`
(the model is warm and the service not draining), `GET /info`, `GET /metrics`, `GET /openapi.json`,
`GET /docs`, `GET /` (the page) and `GET /$discovery/rest` (Perspective's discovery document, for Google's
clients). Every GET route answers HEAD too.

The model loads on a thread when the app starts; `/readyz` says 503 until it has answered a
warm-up batch, and 503 `draining` from SIGTERM on. Every refusal is
`{"error": {"code", "status", "message", "field", "requestId"}}`, the shape of Google's API errors
with the offending field and the request id added. With `--api-keys`, the scoring routes (`/v1…`)
need a key (see `keys`); the probes, `/info`, `/metrics` and the pages do not. A request gets into the
queue through `admission`.
"""
from __future__ import annotations

from typing import Any, Callable

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from kold_span.service.handlers import add_error_handlers
from kold_span.service.lifecycle import Service, versions
from kold_span.service.middleware import Front
from kold_span.service.routes import ROUTES, add_routes
from kold_span.service.settings import Settings

EXPOSED = ("x-request-id", "x-model", "x-queue-time", "x-inference-time", "retry-after")


def create_app(settings: Settings, load: Callable[[], Any]) -> FastAPI:
    """The app; `load` returns the predictor (called on a thread at startup).

    Example:
        >>> app = create_app(Settings(), load=lambda: None)
        >>> sorted(r.path for r in app.routes if r.path in ROUTES) == sorted(ROUTES)
        True
    """
    service = Service(settings, load)
    app = FastAPI(title="kold-span", version=versions().get("kold-span", ""), lifespan=service.lifespan,
                  docs_url=None, redoc_url=None, openapi_url="/openapi.json",
                  redirect_slashes=False,  # Starlette builds the Location from the Host header: a key sent elsewhere
                  description="Offensive-language detection with character spans; see docs/SERVICE.md.")
    app.state.service = service
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins),
                           allow_methods=["GET", "HEAD", "POST", "OPTIONS"],
                           allow_headers=["content-type", "authorization", "x-api-key", "x-request-id"],
                           expose_headers=list(EXPOSED), max_age=600)
    app.add_middleware(Front, metrics=service.metrics, settings=settings, routes=ROUTES,
                       model_header=lambda: service.identity.header() if service.identity else None)
    add_error_handlers(app, service)
    add_routes(app, service)
    return app
