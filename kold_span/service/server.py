"""Running the app under uvicorn on a socket bound beforehand, guarding connections, draining on SIGTERM.

Binding first lets `kold-span serve` report a port in use as an error (and `--port 0` pick a
free port it can print). On SIGTERM or Ctrl-C the app turns `draining` (`/readyz` 503, so a load
balancer stops sending), uvicorn stops accepting connections, waits for the requests in flight
(at most `drain_seconds`), then the app's shutdown finishes the queued comments.

uvicorn's HTTP protocol is wrapped (`guarded_protocol`) so that what a client controls before its
request reaches the app is bounded too: a connection that has not finished its request line and
headers within `header_timeout` seconds is closed, as is one whose headers pass `max_header_bytes`
(answered 431); connections past `max_connections` and a reserve of `PROBE_RESERVE` for the probes
are closed as they arrive, so clients that dribble headers cannot hold every file descriptor, and so are
an address's past `max_client_connections` (answered 503), so one client cannot hold them all; a request
whose body is not complete within `body_timeout` seconds of its headers is answered 408 and closed (a body
sent a byte at a time, `Expect: 100-continue` and nothing, a chunk size larger than its data, no last chunk).
"""
from __future__ import annotations

import asyncio
import ipaddress
import logging
import signal
import socket
import threading
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from kold_span.errors import needs_extra

if TYPE_CHECKING:
    import uvicorn

from kold_span.config.binding import option

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    """What one connection may do before its request reaches the app (`kold-span serve` options)."""

    max_connections: int = option("open connections (more are closed as they arrive; past it with requests in "
                                  "flight, 503)", 1000)
    header_timeout: float = option("seconds a connection may take to send its request line and headers (then "
                                   "closed)", 10.0)
    max_header_bytes: int = option("bytes of the request line and headers (431 past it)", 16 * 1024)
    keep_alive: int = option("seconds an idle keep-alive connection stays open", 5)
    max_client_connections: Optional[int] = option(
        "open connections from one address (more are answered 503 and closed as they arrive; the addresses of "
        "--trusted-proxies are not counted; default: half of --max-connections)")
    body_timeout: float = option("seconds a request may take to send its body once its headers are in (then "
                                 "answered 408 and closed: slow bodies, Expect: 100-continue and no body, a missing "
                                 "last chunk)", 60.0)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: a free one).

    Example:
        >>> sock = bind("127.0.0.1", 0)
        >>> sock.getsockname()[1] > 0, sock.proto == socket.IPPROTO_TCP
        (True, True)
        >>> sock.close()
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP spelled out: asyncio sets TCP_NODELAY only on sockets that say so, and without it
    # a keep-alive answer written in two pieces waits for the client's delayed ACK (40 ms a request).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


# Connections past --max-connections kept for the probes and /metrics (`middleware.Front` answers anything else on
# them 503): a client holding every connection leaves /livez answering.
PROBE_RESERVE = 16
TARGET = "kold_span.target"  # the scope key of an absolute-form request target (`http://host/path`)
HEADERS_TOO_LARGE = (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
                     b"connection: close\r\ncontent-length: %d\r\n\r\n%s")
CONNECTIONS_FULL = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
                    b"connection: close\r\ncontent-length: %d\r\n\r\n%s")
BODY_TOO_SLOW = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                 b"connection: close\r\ncontent-length: %d\r\n\r\n%s")


class _Guard:
    """Mixed in before one of uvicorn's HTTP protocols (see the module docstring)."""

    limits: ConnectionLimits = ConnectionLimits()
    exempt: tuple = ()  # networks whose connections are not counted per address (--trusted-proxies)
    by_address: Counter = Counter()  # open connections per address; each guarded class gets its own
    _address: Optional[str] = None  # this connection's address, when counted
    _timer: Optional[asyncio.TimerHandle] = None
    _body_timer: Optional[asyncio.TimerHandle] = None
    _header_bytes: int = 0  # -1 once the headers have ended
    _tail: bytes = b""

    def connection_made(self, transport: Any) -> None:  # noqa: D102
        super().connection_made(transport)  # type: ignore[misc]
        if len(self.connections) > self.limits.max_connections + PROBE_RESERVE:  # type: ignore[attr-defined]
            log.warning("connection refused: %d open, the limit is %d (--max-connections)",
                        len(self.connections) - 1, self.limits.max_connections)  # type: ignore[attr-defined]
            transport.close()
            return
        peer = transport.get_extra_info("peername")
        address = peer[0] if isinstance(peer, tuple) and peer else None
        if address is not None and not _within(address, self.exempt):
            self._address = address
            self.by_address[address] += 1
            cap = self.limits.max_client_connections or max(1, self.limits.max_connections // 2)
            if self.by_address[address] > cap:
                log.warning("connection refused: %s has %d open, the limit is %d (--max-client-connections)",
                            address, self.by_address[address] - 1, cap)
                body = (b'{"error": {"code": 503, "status": "UNAVAILABLE", "message": "connections: this address has '
                        b'%d open, the most one address may (--max-client-connections)", "field": "connections"}}'
                        % cap)
                transport.write(CONNECTIONS_FULL % (len(body), body))
                transport.close()
                return
        self._await_headers()

    def _await_headers(self) -> None:
        self._header_bytes, self._tail = 0, b""
        self._timer = self.loop.call_later(self.limits.header_timeout, self._too_slow)  # type: ignore[attr-defined]

    def _in_request(self) -> bool:
        cycle = self.cycle  # type: ignore[attr-defined]
        return cycle is not None and not cycle.response_complete

    def _too_slow(self) -> None:
        self._timer = None
        if not self._in_request():
            log.info("closed a connection that sent no complete request headers in %s s (--header-timeout)",
                     self.limits.header_timeout)
            self.transport.close()  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:  # noqa: D102
        waiting = self._timer is not None
        if waiting and self._header_bytes >= 0:
            seen = self._tail + data
            end = seen.find(b"\r\n\r\n")  # the end of the headers; the body after it is not theirs
            self._header_bytes += len(data) if end < 0 else max(0, end + 4 - len(self._tail))
            self._tail = seen[-3:]
            over = self._header_bytes > self.limits.max_header_bytes
            if end >= 0:
                self._header_bytes = -1  # counted whole
            if over:
                self._stop_timer()
                body = (b'{"error": {"code": 431, "status": "INVALID_ARGUMENT", "message": "headers: over %d bytes '
                        b'(--max-header-bytes)", "field": "headers"}}' % self.limits.max_header_bytes)
                self.transport.write(HEADERS_TOO_LARGE % (len(body), body))  # type: ignore[attr-defined]
                self.transport.close()  # type: ignore[attr-defined]
                return
        super().data_received(data)  # type: ignore[misc]
        if waiting and self._in_request():
            self._stop_timer()
            cycle = self.cycle  # type: ignore[attr-defined]
            if cycle.more_body and self._body_timer is None:
                self._body_timer = self.loop.call_later(  # type: ignore[attr-defined]
                    self.limits.body_timeout, self._body_too_slow, cycle)

    def _body_too_slow(self, cycle: Any) -> None:
        self._body_timer = None
        if cycle is not self.cycle or not cycle.more_body:  # type: ignore[attr-defined]
            return  # that request's body came whole
        log.info("closed a connection whose request body was not complete %s s after its headers (--body-timeout)",
                 self.limits.body_timeout)
        if not cycle.response_started:
            body = (b'{"error": {"code": 408, "status": "DEADLINE_EXCEEDED", "message": "body: not complete %.0f s '
                    b'after the headers (--body-timeout)", "field": "body"}}' % self.limits.body_timeout)
            self.transport.write(BODY_TOO_SLOW % (len(body), body))  # type: ignore[attr-defined]
        self.transport.close()  # type: ignore[attr-defined]

    def on_headers_complete(self) -> None:  # noqa: D102 (httptools only: h11 keeps the whole target as the path)
        super().on_headers_complete()  # type: ignore[misc]
        target = self.url  # type: ignore[attr-defined]
        if not target.startswith((b"/", b"*")):  # an absolute-form target names its host; the app's scope would not
            self.scope[TARGET] = target.decode("latin-1")  # type: ignore[attr-defined]

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _stop_body_timer(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def on_response_complete(self) -> None:  # noqa: D102
        self._stop_body_timer()
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing():  # type: ignore[attr-defined]
            self._await_headers()

    def connection_lost(self, exc: Optional[Exception]) -> None:  # noqa: D102
        self._stop_timer()
        self._stop_body_timer()
        if self._address is not None:
            self.by_address[self._address] -= 1
            if self.by_address[self._address] <= 0:
                del self.by_address[self._address]  # no entry kept for an address with nothing open
            self._address = None
        super().connection_lost(exc)  # type: ignore[misc]


def _within(address: str, networks: tuple) -> bool:
    """Whether an address lies in one of the networks (an address that does not parse lies in none).

    Example:
        >>> _within("10.1.2.3", (ipaddress.ip_network("10.0.0.0/8"),)), _within("x", ())
        (True, False)
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def guarded_protocol(http: str, limits: ConnectionLimits, exempt: Sequence[str] = ()) -> type:
    """uvicorn's protocol class `http` ("auto", "h11", "httptools") with the guard mixed in; connections from
    `exempt` (addresses or networks: the trusted proxies) are not counted per address."""
    with needs_extra("serve"):
        from uvicorn.config import HTTP_PROTOCOLS
        from uvicorn.importer import import_from_string

    base = import_from_string(HTTP_PROTOCOLS[http])
    networks = tuple(ipaddress.ip_network(x, strict=False) for x in exempt)
    return type(f"Guarded{base.__name__}", (_Guard, base), {"limits": limits, "exempt": networks,
                                                              "by_address": Counter()})


def _drained(signum: int, frame: Any) -> None:
    """After a graceful shutdown uvicorn raises the signal it stopped for again; by then all is done."""


def run(app: Any, sock: socket.socket, drain_seconds: float = 60.0, log_level: str = "info",
        connections: ConnectionLimits = ConnectionLimits(), http: str = "auto",
        drain_delay: float = 0.0, created: Optional[Callable[[uvicorn.Server], None]] = None) -> uvicorn.Server:
    """Serve `app` on `sock` until SIGTERM or SIGINT (or `server.should_exit`); returns the server.

    The first signal turns the service `draining` (`/readyz` 503) and, `drain_delay` seconds later,
    starts uvicorn's shutdown; a second signal starts it at once. The access log is the app's own
    (`middleware.Front`), so uvicorn's, which would show query strings, stays off. `created` is
    called with the uvicorn server before it starts (tests stop it through `should_exit`).
    """
    with needs_extra("serve"):  # imported here: `kold-span` reads ConnectionLimits for serve's options without it
        import uvicorn

    proxies = app.state.service.settings.trusted_proxies
    config = uvicorn.Config(app, lifespan="on", access_log=False, log_level=log_level,
                            timeout_graceful_shutdown=drain_seconds, http=guarded_protocol(http, connections, proxies),
                            # past the guard's own cap: uvicorn's text 503 is never sent
                            limit_concurrency=connections.max_connections + PROBE_RESERVE + 1,
                            timeout_keep_alive=connections.keep_alive,
                            h11_max_incomplete_event_size=connections.max_header_bytes, server_header=False,
                            # X-Forwarded-For only from --trusted-proxies (uvicorn's default trusts 127.0.0.1)
                            proxy_headers=bool(proxies), forwarded_allow_ips=list(proxies) or None)
    server = uvicorn.Server(config)
    service = app.state.service
    service.on_failure = lambda err: setattr(server, "should_exit", True)
    service.metrics.watch_connections(lambda: len(server.server_state.connections))
    original = server.handle_exit

    def handle_exit(sig: int, frame: Any) -> None:
        if service.draining or drain_delay <= 0:
            service.draining = True
            original(sig, frame)
            return
        service.draining = True  # /readyz says 503 "draining" from the first signal on
        log.info("draining: /readyz says 503; the listener closes in %s s (--drain-delay)", drain_delay)
        timer = threading.Timer(drain_delay, original, (sig, frame))
        timer.daemon = True
        timer.start()

    server.handle_exit = handle_exit  # type: ignore[method-assign]
    if created is not None:
        created(server)
    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, _drained) for sig in (signal.SIGTERM, signal.SIGINT)} if main else {}
    try:
        server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return server
