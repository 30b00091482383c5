"""The ASGI layer in front of the routes: request ids, header limits, the Host allow-list, headers, metrics, access log.

`Front` wraps the whole app. For each HTTP request it takes the client's `X-Request-ID` (or makes
one) and puts it in the response, in the error body and in every log line written while the request
is handled (`REQUEST_ID`, read by `RequestIdFilter`); refuses too many or too large headers (431),
a `Host` (or an absolute-form request target's host) not on the allow-list (400) and a state-changing
request from a page of another origin (403, CSRF) before any route runs; adds the timing and model headers;
counts the request in `/metrics` by route and status; and writes the access log line. A client that
left before its answer is counted with status 499 (nginx's "client closed request") and logged in one
quiet line; a route that raised is counted and logged as the 500 it is answered with.
"""
from __future__ import annotations

import contextvars
import logging
import re
import time
import uuid
from http import HTTPStatus
from typing import Any, Callable, Optional
from urllib.parse import urlsplit

from starlette.requests import ClientDisconnect

from kold_span.data.jsonl import json_text
from kold_span.service.prometheus import ServiceMetrics
from kold_span.service.server import TARGET
from kold_span.service.settings import Settings

log = logging.getLogger(__name__)
access = logging.getLogger("kold_span.access")

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("kold_span_request_id", default="-")
GIVEN_ID = re.compile(r"[A-Za-z0-9._:/+=-]{1,128}")
TIMING = "kold_span.timing"  # the scope key where handlers leave their queue and inference seconds
KEY_NAME = "kold_span.key"  # the scope key where the API key check leaves the key's name
CLIENT_GONE = 499


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every log record (`-` outside a request), for a format's `%(request_id)s`."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        return True


def request_id(given: Optional[str]) -> str:
    """The client's request id when it is a sane token (at most 128 characters), else a fresh one.

    Example:
        >>> request_id("req-42")
        'req-42'
        >>> len(request_id("bad id with spaces")), len(request_id(None))
        (32, 32)
    """
    if given and GIVEN_ID.fullmatch(given):
        return given
    return uuid.uuid4().hex


MESSAGE_CHARS, FIELD_CHARS = 2000, 200  # the most of an error's message and field an answer holds


def error_body(status: int, message: str, field: str, request: str,
               details: Optional[list[dict[str, Any]]] = None) -> dict[str, Any]:
    """`{"error": {"code", "status", "message", "field", "requestId"[, "details"]}}`, Google's error shape.

    Example:
        >>> error_body(413, "too big", "body", "r1")["error"]["status"]
        'INVALID_ARGUMENT'
    """
    name = {400: "INVALID_ARGUMENT", 413: "INVALID_ARGUMENT", 422: "INVALID_ARGUMENT", 431: "INVALID_ARGUMENT",
            401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
            503: "UNAVAILABLE", 500: "INTERNAL"}.get(status) or HTTPStatus(status).name
    if len(message) > MESSAGE_CHARS:  # a message quoting what the client sent stays small whatever it sent
        message = f"{message[:MESSAGE_CHARS]}… ({len(message)} characters in all)"
    if len(field) > FIELD_CHARS:
        field = field[:FIELD_CHARS] + "…"
    error: dict[str, Any] = {"code": status, "status": name, "message": message, "field": field, "requestId": request}
    if details:
        error["details"] = details
    return {"error": error}


def host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    """Whether a Host header (port removed) is on the list; `*.example.com` takes any subdomain.

    Example:
        >>> host_allowed("api.example.com:8080", ("*.example.com",)), host_allowed("evil.com", ("example.com",))
        (True, False)
    """
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host  # an IPv6 literal keeps its colons
    name = name.strip("[]").lower()
    for pattern in allowed:
        pattern = pattern.lower()
        if pattern == "*" or name == pattern or (pattern.startswith("*.") and name.endswith(pattern[1:])):
            return True
    return False


PROBES = ("/livez", "/readyz", "/health", "/metrics")  # answered on the connections kept in reserve
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")  # routes that change nothing; others refuse a foreign Origin (CSRF)
DEFAULT_PORTS = {"http": "80", "https": "443"}


def origin_allowed(origin: str, host: str, cors_origins: tuple[str, ...]) -> bool:
    """Whether a request's `Origin` may change state here: this service's own (the `Host` it was sent to), or
    one of `--cors-origin`. An opaque origin (`null`) never may.

    Example:
        >>> origin_allowed("http://127.0.0.1:8080", "127.0.0.1:8080", ()), origin_allowed("https://a.b", "a.b", ())
        (True, True)
        >>> origin_allowed("http://evil.example", "127.0.0.1:8080", ()), origin_allowed("null", "x", ())
        (False, False)
    """
    if origin in cors_origins:
        return True
    scheme, _, rest = origin.lower().partition("://")
    if scheme not in DEFAULT_PORTS or not rest:
        return False
    default = ":" + DEFAULT_PORTS[scheme]
    own = host.lower()
    return rest.removesuffix(default) == own.removesuffix(":80").removesuffix(":443")


def target_authority(scope: dict) -> Optional[str]:
    """The host an absolute-form request target (`POST http://host/path`) names, or None for a path.

    httptools leaves only the path in the scope (the guard keeps the target in `TARGET`); h11 keeps it whole.

    Example:
        >>> target_authority({"path": "/v1/predict"}), target_authority({"path": "http://u@evil:81/v1/predict"})
        (None, 'evil:81')
    """
    target = scope.get(TARGET) or scope.get("path", "")
    if target.startswith(("/", "*")) or not target:
        return None
    return urlsplit(target).netloc.rpartition("@")[2]


class Front:
    """The outermost ASGI middleware (see the module docstring)."""

    def __init__(self, app: Any, metrics: ServiceMetrics, settings: Settings, routes: tuple[str, ...],
                 model_header: Callable[[], Optional[str]]):
        self.app, self.metrics, self.settings, self.routes, self.model_header = app, metrics, settings, routes, \
            model_header

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = scope.get("headers", [])
        given = next((v for k, v in headers if k == b"x-request-id"), b"").decode("latin-1")
        rid = request_id(given)
        token = REQUEST_ID.set(rid)
        scope["kold_span.request_id"] = rid
        timing = scope[TIMING] = {"queue": 0.0, "inference": 0.0}
        status = 500
        started_response = failed = False

        async def send_with_headers(message: dict) -> None:
            nonlocal status, started_response
            if message["type"] == "http.response.start":
                status, started_response = message["status"], True
                extra = [(b"x-request-id", rid.encode()),
                         (b"x-queue-time", f"{timing['queue'] * 1000:.1f}".encode()),
                         (b"x-inference-time", f"{timing['inference'] * 1000:.1f}".encode())]
                model = self.model_header()
                if model:
                    extra.append((b"x-model", model.encode("utf-8")))
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        try:
            refusal = self._refusal(scope, headers)
            if refusal is not None:
                code, message, field = refusal
                self.metrics.rejected({"Host": "host", "Origin": "cross_origin", "connections": "connections"}
                                      .get(field, "headers"))
                await self._send_error(send_with_headers, code, message, field, rid)
            else:
                await self.app(scope, receive, send_with_headers)
        except Exception as err:
            if not _client_gone(err):
                failed = True  # a fault of ours: counted and logged as the 500 the app's outer layer sends
                raise
            status = CLIENT_GONE
        finally:
            if status == 500 and not started_response and not failed:  # nothing was sent: the client went first
                status = CLIENT_GONE
            seconds = time.perf_counter() - started
            path = scope.get("path", "")
            self.metrics.answered(path if path in self.routes else "other", status, seconds)
            if status == CLIENT_GONE:
                log.info("%s %s: the client left before its answer", scope.get("method"), path[:200])
            self._access(scope, status, seconds, rid)
            REQUEST_ID.reset(token)

    def _refusal(self, scope: dict, headers: list[tuple[bytes, bytes]]) -> Optional[tuple[int, str, str]]:
        s = self.settings
        count = self.metrics.open_connections
        if count is not None and scope.get("path") not in PROBES and count() > s.connections.max_connections:
            return 503, f"connections: {count()} open, over the limit of {s.connections.max_connections} " \
                        "(--max-connections); only the probes and /metrics answer past it", "connections"
        if len(headers) > s.max_headers:
            return 431, f"headers: {len(headers)}, over the limit of {s.max_headers} (--max-headers)", "headers"
        size = sum(len(k) + len(v) for k, v in headers)
        if size > s.connections.max_header_bytes:
            return 431, f"headers: {size} bytes, over the limit of {s.connections.max_header_bytes} " \
                        "(--max-header-bytes)", "headers"
        if s.allowed_hosts:
            host = next((v for k, v in headers if k == b"host"), b"").decode("latin-1")
            if not host_allowed(host, s.allowed_hosts):
                return 400, f"Host: {host[:100]!r} is not served here (--allowed-hosts)", "Host"
            target = target_authority(scope)
            if target is not None and not host_allowed(target, s.allowed_hosts):
                return 400, f"the request target's host {target[:100]!r} is not served here (--allowed-hosts)", "Host"
        origin = next((v for k, v in headers if k == b"origin"), None)
        if origin is not None and scope.get("method") not in SAFE_METHODS:
            host = next((v for k, v in headers if k == b"host"), b"").decode("latin-1")
            shown = origin.decode("latin-1")
            if not origin_allowed(shown, host, s.cors_origins):
                return 403, f"Origin: {shown[:100]!r} may not post here: only pages of this service and of " \
                            "--cors-origin may (a page of another site cannot act for its visitor)", "Origin"
        return None

    async def _send_error(self, send: Callable, status: int, message: str, field: str, rid: str) -> None:
        body = json_text(error_body(status, message, field, rid)).encode("utf-8")
        retry = [(b"retry-after", b"1")] if status == 503 else []
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close"), *retry]})
        await send({"type": "http.response.body", "body": body})

    def _access(self, scope: dict, status: int, seconds: float, rid: str) -> None:
        form = self.settings.access_log
        if form is None:
            return
        client = scope.get("client") or ("-", 0)
        # the path only: a query may hold an API key (?key=), which is never logged
        fields = {"request_id": rid, "method": scope.get("method"), "path": scope.get("path", "")[:200],
                  "status": status, "ms": round(seconds * 1000, 1), "client": client[0],
                  "key": scope.get(KEY_NAME)}
        if form == "json":
            access.info(json_text(fields))
        else:
            access.info("%s %s %s %d %.1f ms%s", client[0], fields["method"], fields["path"], status, fields["ms"],
                        f" key={fields['key']}" if fields["key"] else "")


def _client_gone(err: BaseException) -> bool:
    """Whether an exception means the client went away (a disconnect, a reset), not a server fault."""
    return isinstance(err, (ClientDisconnect, ConnectionResetError, BrokenPipeError))
