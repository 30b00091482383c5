"""The app's error handlers: every refusal as `{"error": {"code", "status", "message", "field", "requestId"}}`.

Example:
    >>> response = error_response(429, "the queue is full", "comments")
    >>> response.status_code, response.headers["retry-after"]
    (429, '1')
"""
from __future__ import annotations

from typing import Any, Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from kold_span.errors import RequestError
from kold_span.service.lifecycle import Service
from kold_span.service.middleware import CLIENT_GONE, REQUEST_ID, error_body


def error_response(status: int, message: str, field: str = "body", retry_after: Optional[int] = None,
                   details: Optional[list[dict[str, Any]]] = None,
                   headers: Optional[dict[str, str]] = None) -> JSONResponse:
    """The error body (`middleware.error_body`) with the HTTP status (and Retry-After on 429/503)."""
    headers = dict(headers or {})
    if status in (429, 503):
        headers["Retry-After"] = str(retry_after or 1)
    return JSONResponse(error_body(status, message, field, REQUEST_ID.get(), details), status_code=status,
                        headers=headers or None)


def add_error_handlers(app: FastAPI, service: Service) -> None:
    """Refusals (`RequestError`), a client gone, Starlette's HTTP errors and bad query parameters, as JSON."""

    @app.exception_handler(RequestError)
    async def refused(request: Request, err: RequestError) -> JSONResponse:
        if err.status == 422 and request.url.path.startswith("/v1alpha1/"):
            err.status = 400  # Perspective answers every malformed request 400 INVALID_ARGUMENT
        if err.status == 413:
            service.metrics.rejected("too_large")
        elif err.status in (400, 415, 422):
            service.metrics.rejected("invalid")
        elif err.status == 507:
            service.metrics.rejected("feedback_full")
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
