"""The service's Prometheus metrics, in a registry of its own (one per app, so tests can start several).

Besides the service's own, the process's (prometheus_client's process collector: resident and
virtual memory, CPU seconds, open file descriptors and their limit, start time), the open HTTP
connections, and per API key the requests, comments and refusals (labelled by the key's name).

Example:
    >>> m = ServiceMetrics()
    >>> m.answered("/v1/predict", 200, 0.012)
    >>> m.rejected("queue_full")
    >>> text = m.exposition().decode()
    >>> 'kold_span_requests_total{route="/v1/predict",status="200"} 1.0' in text
    True
    >>> 'kold_span_rejections_total{reason="queue_full"} 1.0' in text
    True
"""
from __future__ import annotations

from typing import Callable, Optional

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
TOKEN_BUCKETS = (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)


class ServiceMetrics:
    """Requests by route and status, latencies, queue length, batch sizes and rejections."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("kold_span_requests", "HTTP requests answered", ["route", "status"], registry=r)
        self.latency = Histogram("kold_span_request_seconds", "Time from request to answer", ["route"],
                                 buckets=LATENCY_BUCKETS, registry=r)
        self.queue_seconds = Histogram("kold_span_queue_seconds", "Time a comment waited for its batch",
                                       buckets=LATENCY_BUCKETS, registry=r)
        self.batch_seconds = Histogram("kold_span_batch_seconds", "Time of one batch on the model",
                                       buckets=LATENCY_BUCKETS, registry=r)
        self.batch_comments = Histogram("kold_span_batch_comments", "Comments per batch", buckets=SIZE_BUCKETS,
                                        registry=r)
        self.batch_tokens = Histogram("kold_span_batch_tokens", "Padded tokens per batch", buckets=TOKEN_BUCKETS,
                                      registry=r)
        self.comments = Counter("kold_span_comments", "Comments scored", registry=r)
        self.rejections = Counter("kold_span_rejections", "Requests refused before the model, by reason",
                                  ["reason"], registry=r)
        self.queue = Gauge("kold_span_queue_comments", "Comments waiting for the model", registry=r)
        self.connections = Gauge("kold_span_open_connections", "HTTP connections open", registry=r)
        self.open_connections: Optional[Callable[[], int]] = None  # set by `watch_connections` under a server
        self.cancelled = Counter("kold_span_cancelled_comments", "Comments taken out of the queue: their client left",
                                 registry=r)
        self.batch_requests = Histogram("kold_span_batch_requests", "Requests sharing one batch",
                                        buckets=SIZE_BUCKETS, registry=r)
        self.key_requests = Counter("kold_span_key_requests", "Requests by API key name and status",
                                    ["key", "status"], registry=r)
        self.key_comments = Counter("kold_span_key_comments", "Comments accepted by API key name", ["key"],
                                    registry=r)
        ProcessCollector(registry=r)

    def answered(self, route: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        self.requests.labels(route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def rejected(self, reason: str) -> None:
        """Count one refused request (queue_full, too_large, invalid, loading, shutting_down, unauthenticated,
        forbidden, rate_limited, quota, client_gone, feedback_full, headers, host, cross_origin)."""
        self.rejections.labels(reason).inc()

    def batch(self, comments: int, tokens: int, seconds: float, requests: int = 1) -> None:
        """Record one batch."""
        self.batch_requests.observe(requests)
        self.batch_comments.observe(comments)
        self.batch_tokens.observe(tokens)
        self.batch_seconds.observe(seconds)
        self.comments.inc(comments)

    def keyed(self, key: str, status: int, comments: int = 0) -> None:
        """Count one request of an API key (by its name) and the comments it had accepted."""
        self.key_requests.labels(key, str(status)).inc()
        if comments:
            self.key_comments.labels(key).inc(comments)

    def watch_connections(self, count: Callable[[], int]) -> None:
        """Read the open connections at each scrape (and for `open_connections`)."""
        self.connections.set_function(count)
        self.open_connections = count

    def watch_queue(self, length: Callable[[], int]) -> None:
        """Read the queue length at each scrape."""
        self.queue.set_function(length)

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.registry)
