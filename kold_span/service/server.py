"""Running the app under uvicorn on a socket bound beforehand, and draining on SIGTERM.

Binding first lets `kold-span serve` report a port in use as an error (and `--port 0` pick a
free port it can print). On SIGTERM or Ctrl-C uvicorn stops accepting connections, waits for the
requests in flight (at most `drain_seconds`), then the app's shutdown finishes the queued comments.
"""
from __future__ import annotations

import signal
import socket
import threading
from typing import Any

import uvicorn


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


def _drained(signum: int, frame: Any) -> None:
    """After a graceful shutdown uvicorn raises the signal it stopped for again; by then all is done."""


def run(app: Any, sock: socket.socket, access_log: bool = False, drain_seconds: float = 60.0,
        log_level: str = "info") -> uvicorn.Server:
    """Serve `app` on `sock` until SIGTERM or SIGINT (or `server.should_exit`); returns the server."""
    config = uvicorn.Config(app, lifespan="on", access_log=access_log, log_level=log_level,
                            timeout_graceful_shutdown=drain_seconds)
    server = uvicorn.Server(config)
    app.state.service.on_failure = lambda err: setattr(server, "should_exit", True)
    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, _drained) for sig in (signal.SIGTERM, signal.SIGINT)} if main else {}
    try:
        server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return server
